package dev.aiguard.benchmarks;

/**
 * First-token times of a paired pass: unguarded and guarded streams run at once, in alternate
 * slots, so both see the same load.
 *
 * @param k streams open in the pass, both halves together
 * @param unguarded the unguarded half's first-token times
 * @param guarded the guarded half's first-token times
 */
record PairedTtft(int k, LatencyHistogram unguarded, LatencyHistogram guarded) {

	/** @return guarded minus unguarded 99th percentile, ms */
	double addedP99Ms() {
		return guarded.percentileMillis(99) - unguarded.percentileMillis(99);
	}

	/** @return guarded minus unguarded median, ms */
	double addedP50Ms() {
		return guarded.percentileMillis(50) - unguarded.percentileMillis(50);
	}
}
