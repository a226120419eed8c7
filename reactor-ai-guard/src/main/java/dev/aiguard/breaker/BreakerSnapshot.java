package dev.aiguard.breaker;

/**
 * A copy of a breaker's window at one moment: counts and rates. Rates are fractions in [0, 1], 0 for
 * an empty window.
 *
 * <pre>{@code
 * BreakerSnapshot s = breaker.snapshot();
 * log.info("{} calls, {} failed ({} stalled, {} incomplete), {} slow", s.calls(), s.failures(),
 *     s.stalls(), s.incomplete(), s.slowCalls());
 * }</pre>
 *
 * @param calls calls in the window
 * @param failures failures (provider errors, stalls, incomplete streams, recorded client errors)
 * @param slowCalls calls whose first token reached the slow threshold
 * @param stalls failures that were stalls
 * @param incomplete failures that were streams without their terminal marker
 * @param failureRate {@code failures / calls}
 * @param slowCallRate {@code slowCalls / calls}
 */
public record BreakerSnapshot(long calls, long failures, long slowCalls, long stalls, long incomplete,
		double failureRate, double slowCallRate) {

	static BreakerSnapshot of(WindowCounts w) {
		long calls = w.calls();
		long failures = Math.min(w.failures(), calls);
		long slow = Math.min(w.slowCalls(), calls);
		return new BreakerSnapshot(calls, failures, slow, Math.min(w.stalls(), failures),
				Math.min(w.incomplete(), failures), calls == 0 ? 0 : (double) failures / calls,
				calls == 0 ? 0 : (double) slow / calls);
	}
}
