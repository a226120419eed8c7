package dev.aiguard.breaker;

/**
 * A live, read-only view of a breaker's sliding window: the running totals of the calls it holds.
 * Every read is O(1). A {@link TripPolicy} reads it to judge; callers who want a stable copy use
 * {@link CircuitBreaker#snapshot()}.
 *
 * <p>Counts are {@code calls ≥ failures}; {@code stalls} and {@code incomplete} are the failures of
 * those two kinds; {@code slowCalls} are calls whose first token came at or after the configured
 * slow threshold, whatever their outcome.
 *
 * <pre>{@code
 * double pressure(WindowCounts window, BreakerConfig config, long now) {
 *     return window.calls() < config.minimumCalls() ? 0 : window.failureRate() / config.failureRateThreshold();
 * }
 * }</pre>
 */
public interface WindowCounts {

	/** @return calls recorded in the window */
	long calls();

	/** @return failed calls (provider failures, stalls, incomplete streams, recorded client errors) */
	long failures();

	/** @return calls whose time to first token reached the slow threshold */
	long slowCalls();

	/** @return failures that were stalls */
	long stalls();

	/** @return failures that were streams completed without their terminal marker */
	long incomplete();

	/** @return {@code failures / calls} in [0, 1], 0 when the window is empty */
	default double failureRate() {
		long calls = calls();
		return calls == 0 ? 0.0 : Math.min(1.0, (double) failures() / calls);
	}

	/** @return {@code slowCalls / calls} in [0, 1], 0 when the window is empty */
	default double slowCallRate() {
		long calls = calls();
		return calls == 0 ? 0.0 : Math.min(1.0, (double) slowCalls() / calls);
	}
}
