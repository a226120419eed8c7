package dev.aiguard.load;

import java.time.Duration;
import java.util.Objects;

import dev.aiguard.core.Priority;

/**
 * What the guard measured during one ended decision interval, or over the signal window of several
 * (see {@link LoadGovernor.Builder#signalWindow(Duration)}): requests offered (per priority), first
 * tokens and their mean time, attempts and failures. Immutable; the governor builds one per decision
 * for its state ({@link LoadState#interval()}) and one over the signal window for its
 * {@link HealthSignal}s.
 *
 * <pre>{@code
 * IntervalStats stats = IntervalStats.of(Duration.ofSeconds(1), new long[] {3, 10, 20},
 *     12, Duration.ofMillis(12 * 400).toNanos(), 12, 1);
 * stats.requestRate();    // 33.0 per second
 * stats.meanTtftMillis(); // 400.0
 * stats.errorRate();      // 0.0833...
 * }</pre>
 */
public final class IntervalStats {

	private static final Priority[] PRIORITIES = Priority.values();

	private final long intervalNanos;
	private final long[] arrivals;
	private final long arrivalsTotal;
	private final long firstTokens;
	private final long ttftNanosTotal;
	private final long attempts;
	private final long failures;
	private final long minSamples;

	private IntervalStats(long intervalNanos, long[] arrivals, long firstTokens, long ttftNanosTotal, long attempts,
			long failures, long minSamples) {
		this.intervalNanos = intervalNanos;
		this.arrivals = arrivals;
		long total = 0;
		for (long a : arrivals) {
			total += a;
		}
		this.arrivalsTotal = total;
		this.firstTokens = firstTokens;
		this.ttftNanosTotal = ttftNanosTotal;
		this.attempts = attempts;
		this.failures = failures;
		this.minSamples = minSamples;
	}

	/**
	 * @param interval length of the interval, positive
	 * @param arrivalsByPriority requests offered, indexed by {@link Priority#ordinal()} (one entry per priority)
	 * @param firstTokens attempts whose first token arrived in the interval
	 * @param ttftNanosTotal the sum of those attempts' times to first token, in nanoseconds
	 * @param attempts attempts that ended in the interval (successes and upstream faults)
	 * @param failures attempts among them that ended in an upstream fault
	 * @throws IllegalArgumentException naming the value that is negative or inconsistent
	 */
	public static IntervalStats of(Duration interval, long[] arrivalsByPriority, long firstTokens, long ttftNanosTotal,
			long attempts, long failures) {
		Objects.requireNonNull(interval, "interval");
		Objects.requireNonNull(arrivalsByPriority, "arrivalsByPriority");
		if (interval.isNegative() || interval.isZero()) {
			throw new IllegalArgumentException("interval must be positive, was " + interval);
		}
		if (arrivalsByPriority.length != PRIORITIES.length) {
			throw new IllegalArgumentException("arrivalsByPriority must have " + PRIORITIES.length
					+ " entries (one per priority), had " + arrivalsByPriority.length);
		}
		for (int i = 0; i < arrivalsByPriority.length; i++) {
			requireNonNegative("arrivals of " + PRIORITIES[i], arrivalsByPriority[i]);
		}
		requireNonNegative("firstTokens", firstTokens);
		requireNonNegative("ttftNanosTotal", ttftNanosTotal);
		requireNonNegative("attempts", attempts);
		requireNonNegative("failures", failures);
		if (failures > attempts) {
			throw new IllegalArgumentException("failures must not exceed attempts, was " + failures + " > " + attempts);
		}
		return new IntervalStats(interval.toNanos(), arrivalsByPriority.clone(), firstTokens, ttftNanosTotal, attempts,
				failures, 0L);
	}

	/** The governor's own constructor: counts are deltas of monotonic counters (or their sums), taken as they are. */
	static IntervalStats measured(long intervalNanos, long[] arrivals, long firstTokens, long ttftNanosTotal,
			long attempts, long failures, long minSamples) {
		return new IntervalStats(intervalNanos, arrivals, firstTokens, ttftNanosTotal, attempts, failures, minSamples);
	}

	/**
	 * The fewest samples a rate signal needs before it counts: a ratio or a mean over fewer attempts
	 * (or first tokens) is noise, and the built-in {@link HealthSignals#errorRate()} and
	 * {@link HealthSignals#responseTime()} report no data below it. The governor sets it from
	 * {@link LoadGovernor.Builder#minSamples(int)} on the stats it hands to its signals; stats built
	 * with {@link #of} have 0 (every sample counts).
	 *
	 * @return the minimum number of samples, >= 0
	 */
	public long minSamples() {
		return minSamples;
	}

	/** @return length of the interval in nanoseconds */
	public long intervalNanos() {
		return intervalNanos;
	}

	/** @return requests offered in the interval, admitted or shed */
	public long arrivals() {
		return arrivalsTotal;
	}

	/** @return requests of {@code priority} offered in the interval */
	public long arrivals(Priority priority) {
		return arrivals[priority.ordinal()];
	}

	/** @return requests offered per second */
	public double requestRate() {
		return arrivalsTotal * 1e9 / intervalNanos;
	}

	/** @return attempts whose first token arrived in the interval */
	public long firstTokens() {
		return firstTokens;
	}

	/** @return the sum of the first tokens' times, in nanoseconds */
	long ttftNanosTotal() {
		return ttftNanosTotal;
	}

	/** @return mean time to first token in milliseconds, NaN when no first token arrived */
	public double meanTtftMillis() {
		return firstTokens == 0 ? Double.NaN : ttftNanosTotal / 1e6 / firstTokens;
	}

	/** @return attempts that ended in the interval (successes and upstream faults) */
	public long attempts() {
		return attempts;
	}

	/** @return attempts that ended in an upstream fault */
	public long failures() {
		return failures;
	}

	/** @return failures ÷ attempts, NaN when no attempt ended */
	public double errorRate() {
		return attempts == 0 ? Double.NaN : (double) Math.min(failures, attempts) / attempts;
	}

	@Override
	public String toString() {
		return "IntervalStats{intervalNanos=" + intervalNanos + ", arrivals=" + arrivalsTotal + ", firstTokens="
				+ firstTokens + ", meanTtftMillis=" + meanTtftMillis() + ", attempts=" + attempts + ", failures="
				+ failures + ", minSamples=" + minSamples + '}';
	}

	private static void requireNonNegative(String field, long value) {
		if (value < 0) {
			throw new IllegalArgumentException(field + " must not be negative, was " + value);
		}
	}
}
