package dev.aiguard.breaker;

/**
 * Log-scale bins for times to first token: four bins per power of two of microseconds (at most 25 %
 * wide), from 1 µs to about 2.4 hours; anything longer lands in the last bin. Static helpers only:
 * the counts live in the caller's {@code long[]}.
 */
final class TtftHistogram {

	/** 0..3 µs exactly, then four bins per octave for octaves 2..33. */
	static final int BINS = 4 + 4 * 32;
	static final int LAST = BINS - 1;

	private TtftHistogram() {
	}

	static int bin(long nanos) {
		return binOfMicros(Math.max(0, nanos / 1000));
	}

	/** @param micros a time in whole microseconds, not negative */
	static int binOfMicros(long micros) {
		if (micros < 4) {
			return (int) micros;
		}
		int octave = 63 - Long.numberOfLeadingZeros(micros);
		int sub = (int) ((micros >>> (octave - 2)) & 3);
		return Math.min(LAST, 4 + 4 * (octave - 2) + sub);
	}

	/** @return the upper edge of {@code bin} in nanoseconds (a conservative value for its samples) */
	static long upperNanos(int bin) {
		if (bin < 4) {
			return (bin + 1) * 1000L;
		}
		int octave = 2 + (bin - 4) / 4;
		int sub = (bin - 4) % 4;
		return ((4L + sub + 1) << (octave - 2)) * 1000L;
	}

	/**
	 * @param threshold a time in nanoseconds
	 * @param reaching whether a bin counts when its upper edge reaches {@code threshold} ({@code >=}),
	 * else only when it exceeds it ({@code >})
	 * @return the lower edge of the first bin that counts: every time below it lies in a bin that
	 * does not; {@link Long#MAX_VALUE} when no bin counts
	 */
	static long quietBelow(double threshold, boolean reaching) {
		if (threshold >= upperNanos(LAST)) {
			return reaching && threshold == upperNanos(LAST) ? lowerNanos(LAST) : Long.MAX_VALUE;
		}
		if (threshold <= 0) {
			return 0;
		}
		// x < upperNanos(b) exactly when bin(x) <= b (the edges are whole microseconds): so the first bin
		// whose upper edge reaches t is the bin of ceil(t) - 1, the first that exceeds t the bin of floor(t)
		long t = reaching ? (long) Math.ceil(threshold) - 1 : (long) Math.floor(threshold);
		return lowerNanos(bin(t));
	}

	/** @return the lower edge of {@code bin} in nanoseconds */
	static long lowerNanos(int bin) {
		return bin == 0 ? 0 : upperNanos(bin - 1);
	}

	/**
	 * Like {@link #quantile} but placed inside its bin by linear interpolation on the rank, which
	 * halves the bin's error on average: for comparing with a limit rather than for a conservative
	 * bound.
	 *
	 * @return the quantile in nanoseconds, or -1 when there are too few samples
	 */
	static long interpolatedQuantile(long[] counts, int[] histograms, int used, double quantile, long minSamples) {
		long n = 0;
		for (int h = 0; h < used; h++) {
			int base = histograms[h] * BINS;
			for (int b = 0; b < BINS; b++) {
				n += (long) SlidingWindow.LONGS.getVolatile(counts, base + b);
			}
		}
		if (n < minSamples || n == 0) {
			return -1;
		}
		long rank = Math.max(1, (long) Math.ceil(quantile * n));
		long seen = 0;
		for (int b = 0; b < BINS; b++) {
			long inBin = 0;
			for (int h = 0; h < used; h++) {
				inBin += (long) SlidingWindow.LONGS.getVolatile(counts, histograms[h] * BINS + b);
			}
			if (seen + inBin >= rank) {
				long lower = lowerNanos(b);
				return lower + (long) ((upperNanos(b) - lower) * ((double) (rank - seen) / inBin));
			}
			seen += inBin;
		}
		return upperNanos(LAST); // the counts grew while being read
	}

	/**
	 * @param counts histogram counts, {@link #BINS} long per histogram, one or more histograms
	 * @param histograms which histograms (by index) to merge
	 * @param quantile in (0, 1]
	 * @param minSamples fewer samples than this give -1
	 * @return the quantile's upper bin edge in nanoseconds, or -1 when there are too few samples
	 */
	static long quantile(long[] counts, int[] histograms, int used, double quantile, long minSamples) {
		long n = 0;
		for (int h = 0; h < used; h++) {
			int base = histograms[h] * BINS;
			for (int b = 0; b < BINS; b++) {
				n += (long) SlidingWindow.LONGS.getVolatile(counts, base + b);
			}
		}
		if (n < minSamples || n == 0) {
			return -1;
		}
		long rank = (long) Math.ceil(quantile * n);
		long seen = 0;
		for (int b = 0; b < BINS; b++) {
			for (int h = 0; h < used; h++) {
				seen += (long) SlidingWindow.LONGS.getVolatile(counts, histograms[h] * BINS + b);
			}
			if (seen >= rank) {
				return upperNanos(b);
			}
		}
		return upperNanos(LAST);
	}
}
