package dev.aiguard.tck;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.chat.ChatChunk;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.AfterClass;

/**
 * Verifies {@link PriorityLanes#admit()} applied to a synchronous Flux: the priority comes from
 * the Context (none here, so P1), the permit is free, and the source is subscribed once it is
 * granted. The failing publisher is admitted through a lane that neither has a permit, nor
 * borrows, nor lets anyone wait: admission refuses at once, before any demand.
 */
public class LanesAdmitTckTest extends PublisherVerification<ChatChunk> {

	private final PriorityLanes lanes = LanesTck.roomy("tck-admit");
	private final PriorityLanes refusing = LanesTck.refusingP1("tck-refuse");

	public LanesAdmitTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	@AfterClass(alwaysRun = true)
	public void disposeLanes() {
		lanes.dispose();
		refusing.dispose();
	}

	@Override
	public Publisher<ChatChunk> createPublisher(long elements) {
		return Tck.answer(elements).transform(lanes.admit());
	}

	@Override
	public Publisher<ChatChunk> createFailedPublisher() {
		return Tck.answer(3).transform(refusing.admit());
	}
}
