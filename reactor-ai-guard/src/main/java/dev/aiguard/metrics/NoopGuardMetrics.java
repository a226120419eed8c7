package dev.aiguard.metrics;

/** The do-nothing {@link GuardMetrics}. */
final class NoopGuardMetrics implements GuardMetrics {

	static final NoopGuardMetrics INSTANCE = new NoopGuardMetrics();

	private NoopGuardMetrics() {
	}

	@Override
	public String toString() {
		return "GuardMetrics.noop()";
	}
}
