package dev.aiguard.breaker;

/** A window with fixed counts, to drive a trip policy alone. */
final class PolicyFixtures {

	private PolicyFixtures() {
	}

	static WindowCounts counts(long calls, long failures, long slow) {
		return new WindowCounts() {
			@Override
			public long calls() {
				return calls;
			}

			@Override
			public long failures() {
				return failures;
			}

			@Override
			public long slowCalls() {
				return slow;
			}

			@Override
			public long stalls() {
				return 0;
			}

			@Override
			public long incomplete() {
				return 0;
			}
		};
	}
}
