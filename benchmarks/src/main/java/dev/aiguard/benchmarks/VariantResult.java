package dev.aiguard.benchmarks;

import java.util.List;

/**
 * What one variant measured at one concurrency.
 *
 * @param variant the variant's name
 * @param k streams the rig kept open
 * @param completed streams that ended with every token and the terminal chunk
 * @param failed streams that ended otherwise (an error, a token missing, no terminal chunk)
 * @param peakOpen the most streams open at once
 * @param openAtHeap streams open while the retained heap was read
 * @param tokens content chunks delivered in the measurement window
 * @param cpuNanos process CPU time in the window
 * @param allocatedBytes bytes allocated in the window
 * @param gcMillis time in garbage collection in the window
 * @param windowNanos the window's length
 * @param heapBytes heap retained with {@code openAtHeap} streams open, minus the heap retained before they opened
 * @param ttftP50Ms median time to first token of the streams that started in the window
 * @param ttftP99Ms 99th percentile of the same
 * @param ttftSamples streams those percentiles are taken from
 * @param serverCpuNanos the model server's process CPU time in the window (its own JVM)
 * @param threadCpuNanos this JVM's CPU time in the window by {@link ThreadCpu} group, indexed by ordinal
 */
record VariantResult(String variant, int k, long completed, long failed, long peakOpen, long openAtHeap,
		long tokens, long cpuNanos, long allocatedBytes, long gcMillis, long windowNanos, long heapBytes,
		double ttftP50Ms, double ttftP99Ms, long ttftSamples, long serverCpuNanos, long[] threadCpuNanos) {

	/**
	 * @param passes the measured passes of one variant at one K
	 * @param ttft the first-token times of all of them
	 * @return the passes as one: counts and times added up, the most streams open in any, the
	 *         retained heap per stream averaged over the open streams of all, percentiles of {@code ttft}
	 */
	static VariantResult pooled(List<VariantResult> passes, LatencyHistogram ttft) {
		VariantResult first = passes.get(0);
		long completed = 0;
		long failed = 0;
		long peak = 0;
		long openAtHeap = 0;
		long tokens = 0;
		long cpu = 0;
		long allocated = 0;
		long gc = 0;
		long window = 0;
		long heap = 0;
		long serverCpu = 0;
		long[] threads = new long[first.threadCpuNanos.length];
		for (VariantResult p : passes) {
			completed += p.completed;
			failed += p.failed;
			peak = Math.max(peak, p.peakOpen);
			openAtHeap += p.openAtHeap;
			tokens += p.tokens;
			cpu += p.cpuNanos;
			allocated += p.allocatedBytes;
			gc += p.gcMillis;
			window += p.windowNanos;
			heap += p.heapBytes;
			serverCpu += p.serverCpuNanos;
			for (int i = 0; i < threads.length; i++) {
				threads[i] += p.threadCpuNanos[i];
			}
		}
		return new VariantResult(first.variant, first.k, completed, failed, peak, openAtHeap, tokens, cpu, allocated, gc,
				window, heap, ttft.percentileMillis(50), ttft.percentileMillis(99), ttft.count(), serverCpu,
				threads);
	}

	/** @return process CPU nanoseconds per delivered token; {@code NaN} without tokens */
	double cpuNanosPerToken() {
		return tokens == 0 ? Double.NaN : (double) cpuNanos / tokens;
	}

	/** @return the server's process CPU nanoseconds per delivered token; {@code NaN} without tokens */
	double serverCpuNanosPerToken() {
		return tokens == 0 ? Double.NaN : (double) serverCpuNanos / tokens;
	}

	/** @return CPU nanoseconds of one thread group per delivered token; {@code NaN} without tokens */
	double threadCpuNanosPerToken(ThreadCpu group) {
		return tokens == 0 ? Double.NaN : (double) threadCpuNanos[group.ordinal()] / tokens;
	}

	/** @return bytes allocated per delivered token; {@code NaN} without tokens */
	double allocatedBytesPerToken() {
		return tokens == 0 ? Double.NaN : (double) allocatedBytes / tokens;
	}

	/** @return retained heap per open stream; {@code NaN} when none was open */
	double heapBytesPerStream() {
		return openAtHeap == 0 ? Double.NaN : (double) heapBytes / openAtHeap;
	}

	/** @return tokens delivered per second in the window */
	double tokensPerSecond() {
		return windowNanos == 0 ? Double.NaN : tokens * 1e9 / windowNanos;
	}

	/** @return share of one core the process used in the window */
	double cores() {
		return windowNanos == 0 ? Double.NaN : (double) cpuNanos / windowNanos;
	}
}
