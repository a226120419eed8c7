package dev.aiguard.tck;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;

/** Lanes for the admission verifications; each verification disposes the ones it built. */
final class LanesTck {

	/** More permits than the TCK ever takes, even counting the ones abandoned subscribers keep. */
	static final int ROOMY = 100_000;

	private LanesTck() {
	}

	/** Every lane has room: admission is a CAS on the request's own lane. */
	static PriorityLanes roomy(String name) {
		return PriorityLanes.builder()
				.name(name)
				.lane(Priority.P0, LaneSpec.of(ROOMY))
				.lane(Priority.P1, LaneSpec.of(ROOMY))
				.lane(Priority.P2, LaneSpec.of(ROOMY))
				.build();
	}

	/**
	 * P1 has no permit of its own: each P1 admission goes through the acquire Mono and the drain
	 * loop, and borrows from P2.
	 */
	static PriorityLanes borrowingP1(String name) {
		return PriorityLanes.builder()
				.name(name)
				.lane(Priority.P0, LaneSpec.of(4))
				.lane(Priority.P1, LaneSpec.of(0))
				.lane(Priority.P2, LaneSpec.of(ROOMY))
				.build();
	}

	/** P1 has no permit, may not borrow and may not wait: every P1 admission is refused at once. */
	static PriorityLanes refusingP1(String name) {
		return PriorityLanes.builder()
				.name(name)
				.lane(Priority.P0, LaneSpec.of(1))
				.lane(Priority.P1, LaneSpec.of(0).borrowFromLower(false).maxQueueSize(0))
				.lane(Priority.P2, LaneSpec.of(1))
				.build();
	}
}
