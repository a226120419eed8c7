package dev.aiguard.tck;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.chat.ChatChunk;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.AfterClass;

/**
 * Verifies {@link PriorityLanes#admitOnLane(Priority)}: once admitted, the upstream is subscribed
 * (and so emits) on the P2 lane's own bounded Scheduler.
 */
public class LanesAdmitOnLaneTckTest extends PublisherVerification<ChatChunk> {

	private final PriorityLanes lanes = LanesTck.roomy("tck-on-lane");
	private final PriorityLanes refusing = LanesTck.refusingP1("tck-refuse-on-lane");

	public LanesAdmitOnLaneTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	@AfterClass(alwaysRun = true)
	public void disposeLanes() {
		lanes.dispose();
		refusing.dispose();
	}

	@Override
	public Publisher<ChatChunk> createPublisher(long elements) {
		return Tck.answer(elements).transform(lanes.admitOnLane(Priority.P2));
	}

	@Override
	public Publisher<ChatChunk> createFailedPublisher() {
		return Tck.answer(3).transform(refusing.admitOnLane(Priority.P1));
	}
}
