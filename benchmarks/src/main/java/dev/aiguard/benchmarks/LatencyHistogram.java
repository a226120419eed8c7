package dev.aiguard.benchmarks;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Latencies counted in fixed buckets, so that recording from many event-loop threads is one atomic
 * increment and allocates nothing: 10 µs buckets up to 100 ms, 1 ms buckets from there to 60 s;
 * longer latencies land in the last bucket. A percentile is the upper edge of the bucket it falls
 * in, so it is never under-reported and over-reported by at most one bucket.
 *
 * <pre>{@code
 * LatencyHistogram ttft = new LatencyHistogram();
 * ttft.record(System.nanoTime() - start);          // from any thread
 * double p99 = ttft.percentileMillis(99.0);
 * }</pre>
 */
final class LatencyHistogram {

	static final long FINE_NANOS = TimeUnit.MICROSECONDS.toNanos(10);
	static final long FINE_LIMIT_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
	static final long COARSE_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
	static final long COARSE_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(60);

	private static final int FINE_BUCKETS = (int) (FINE_LIMIT_NANOS / FINE_NANOS);
	private static final int BUCKETS = FINE_BUCKETS + (int) ((COARSE_LIMIT_NANOS - FINE_LIMIT_NANOS) / COARSE_NANOS);

	private final AtomicLongArray counts = new AtomicLongArray(BUCKETS);

	/** @param nanos a latency; a negative one counts as zero */
	void record(long nanos) {
		counts.incrementAndGet(bucket(Math.max(0, nanos)));
	}

	/** @return the latencies recorded */
	long count() {
		long total = 0;
		for (int i = 0; i < BUCKETS; i++) {
			total += counts.get(i);
		}
		return total;
	}

	/**
	 * @param percentile 0 (exclusive) to 100 (inclusive)
	 * @return the latency, in milliseconds, that this share of the recorded ones does not exceed
	 *         (the upper edge of its bucket); {@code NaN} when nothing was recorded
	 * @throws IllegalArgumentException when the percentile is out of range
	 */
	double percentileMillis(double percentile) {
		if (!(percentile > 0 && percentile <= 100)) {
			throw new IllegalArgumentException("percentile must be > 0 and <= 100, was " + percentile);
		}
		long[] snapshot = new long[BUCKETS];
		long total = 0;
		for (int i = 0; i < BUCKETS; i++) {
			snapshot[i] = counts.get(i);
			total += snapshot[i];
		}
		if (total == 0) {
			return Double.NaN;
		}
		// the rank of the sample that reaches the percentile, 1-based (nearest-rank definition)
		long rank = Math.max(1, (long) Math.ceil(percentile / 100.0 * total));
		long seen = 0;
		for (int i = 0; i < BUCKETS; i++) {
			seen += snapshot[i];
			if (seen >= rank) {
				return upperEdgeNanos(i) / 1e6;
			}
		}
		return upperEdgeNanos(BUCKETS - 1) / 1e6;
	}

	static int bucket(long nanos) {
		if (nanos < FINE_LIMIT_NANOS) {
			return (int) (nanos / FINE_NANOS);
		}
		long coarse = (nanos - FINE_LIMIT_NANOS) / COARSE_NANOS;
		return (int) Math.min(BUCKETS - 1L, FINE_BUCKETS + coarse);
	}

	static long upperEdgeNanos(int bucket) {
		if (bucket < FINE_BUCKETS) {
			return (bucket + 1L) * FINE_NANOS;
		}
		return FINE_LIMIT_NANOS + (bucket - FINE_BUCKETS + 1L) * COARSE_NANOS;
	}

	/** @return the nearest-rank {@code q} quantile of {@code sortedNanos}, in milliseconds; NaN when there is none */
	static double nearestRankMillis(long[] sortedNanos, double q) {
		if (sortedNanos.length == 0) {
			return Double.NaN;
		}
		int rank = (int) Math.ceil(q * sortedNanos.length);
		return sortedNanos[Math.max(0, Math.min(sortedNanos.length - 1, rank - 1))] / 1e6;
	}
}
