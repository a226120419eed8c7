package dev.aiguard.benchmarks;

import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;

/**
 * What the rig reads from its own JVM: process CPU time (all threads, JIT and GC included), the
 * same by thread group ({@link ThreadCpu}), bytes allocated by the live threads, and time spent in
 * garbage collection.
 */
final class ProcessMeters {

	private final com.sun.management.OperatingSystemMXBean os =
			(com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
	private final com.sun.management.ThreadMXBean threads =
			(com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
	private final MemoryMXBean memory = ManagementFactory.getMemoryMXBean();

	ProcessMeters() {
		if (!threads.isThreadAllocatedMemorySupported()) {
			throw new IllegalStateException("this JVM does not count allocated bytes per thread");
		}
		threads.setThreadAllocatedMemoryEnabled(true);
	}

	/**
	 * Counters at one instant.
	 *
	 * @param nanoTime {@link System#nanoTime()}
	 * @param cpuNanos process CPU time
	 * @param allocatedBytes allocated by the threads alive now, since each started
	 * @param gcMillis collection time, all collectors
	 * @param gcCount collections, all collectors
	 * @param threadCpuNanos CPU time by {@link ThreadCpu} group, indexed by ordinal
	 */
	record Snapshot(long nanoTime, long cpuNanos, long allocatedBytes, long gcMillis, long gcCount,
			long[] threadCpuNanos) {

		/** @return the counters' growth from {@code earlier} to this one */
		Snapshot minus(Snapshot earlier) {
			long[] threads = new long[threadCpuNanos.length];
			for (int i = 0; i < threads.length; i++) {
				threads[i] = threadCpuNanos[i] - earlier.threadCpuNanos[i];
			}
			return new Snapshot(nanoTime - earlier.nanoTime, cpuNanos - earlier.cpuNanos,
					allocatedBytes - earlier.allocatedBytes, gcMillis - earlier.gcMillis, gcCount - earlier.gcCount,
					threads);
		}
	}

	Snapshot snapshot() {
		long gcMillis = 0;
		long gcCount = 0;
		for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
			gcMillis += Math.max(0, gc.getCollectionTime());
			gcCount += Math.max(0, gc.getCollectionCount());
		}
		long allocated = 0;
		for (long bytes : threads.getThreadAllocatedBytes(threads.getAllThreadIds())) {
			// -1: the thread ended between the two calls
			allocated += Math.max(0, bytes);
		}
		return new Snapshot(System.nanoTime(), os.getProcessCpuTime(), allocated, gcMillis, gcCount,
				ThreadCpu.snapshot());
	}

	/** @return heap in use after two full collections: what is still reachable */
	long retainedHeap() {
		System.gc();
		System.gc();
		return memory.getHeapMemoryUsage().getUsed();
	}
}
