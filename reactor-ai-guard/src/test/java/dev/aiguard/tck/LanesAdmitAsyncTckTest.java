package dev.aiguard.tck;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.chat.ChatChunk;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.AfterClass;
import reactor.core.scheduler.Schedulers;

/**
 * Verifies {@link PriorityLanes#admit()} over an asynchronous upstream ({@code publishOn} on
 * {@code Schedulers.parallel()}), with the priority taken from the subscriber's Context (P0).
 */
public class LanesAdmitAsyncTckTest extends PublisherVerification<ChatChunk> {

	private final PriorityLanes lanes = LanesTck.roomy("tck-admit-async");
	private final PriorityLanes refusing = LanesTck.refusingP1("tck-refuse-async");

	public LanesAdmitAsyncTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	@AfterClass(alwaysRun = true)
	public void disposeLanes() {
		lanes.dispose();
		refusing.dispose();
	}

	@Override
	public Publisher<ChatChunk> createPublisher(long elements) {
		return Tck.answer(elements)
				.publishOn(Schedulers.parallel())
				.transform(lanes.admit())
				.contextWrite(Priority.P0.asContext());
	}

	@Override
	public Publisher<ChatChunk> createFailedPublisher() {
		return Tck.answer(3).publishOn(Schedulers.parallel()).transform(refusing.admit());
	}
}
