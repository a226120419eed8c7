package dev.aiguard.tck;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.PriorityLanes;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.AfterClass;
import org.testng.annotations.Test;

/**
 * Verifies the Mono of {@link PriorityLanes#acquire(Priority)}: exactly one permit, then
 * completion. The own lane (P1) has no permits, so each grant borrows from P2 in the lanes' drain
 * loop. Permits the TCK never releases stay taken; the lane is roomy enough for that.
 *
 * <p>No failing publisher: the acquire Mono is lazy by contract ("nothing happens until the Mono
 * is subscribed and requested"), so a refusal (queue full, lanes disposed) is signalled only after
 * a request, while the TCK's failing-publisher checks wait for {@code onError} without requesting.
 */
public class LanesAcquireTckTest extends PublisherVerification<LanePermit> {

	private final PriorityLanes lanes = LanesTck.borrowingP1("tck-acquire");

	public LanesAcquireTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	@AfterClass(alwaysRun = true)
	public void disposeLanes() {
		lanes.dispose();
	}

	@Override
	public long maxElementsFromPublisher() {
		return 1;
	}

	/**
	 * Asked for zero elements it still grants a permit; the spec 1.9 checks asking for that only look
	 * at {@code onSubscribe}.
	 */
	@Override
	public Publisher<LanePermit> createPublisher(long elements) {
		return lanes.acquire(Priority.P1);
	}

	@Override
	@Test
	public void optional_spec105_emptyStreamMustTerminateBySignallingOnComplete() throws Throwable {
		notVerified("the acquire Mono emits one permit or fails: it has no empty outcome");
	}

	@Override
	public Publisher<LanePermit> createFailedPublisher() {
		return null;
	}
}
