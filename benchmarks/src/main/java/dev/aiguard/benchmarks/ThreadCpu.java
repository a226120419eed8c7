package dev.aiguard.benchmarks;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU time of this JVM's threads by what they do, from {@code /proc/self/task} (Linux): the
 * operating system's view, which also sees the JVM's own threads (JIT compilers, garbage
 * collector) that {@code ThreadMXBean} does not. Threads are told apart by the names HotSpot and
 * Reactor give them. Resolution: the kernel's clock tick, 10 ms.
 */
enum ThreadCpu {

	/** Reactor Netty's event loops: the network, HTTP, SSE and JSON decoding, and every operator they run. */
	EVENT_LOOPS("event loops"),
	/** Reactor's {@code parallel} scheduler: timers (the guard's deadline task, {@code Flux.timeout}). */
	TIMERS("parallel (timers)"),
	/** The rig's own thread: it subscribes each next stream, so a guard's subscription work runs here. */
	RIG("rig (subscribing)"),
	/** The C1 and C2 compilers. */
	JIT("JIT"),
	/** G1's workers, marking and service threads. */
	GC("GC"),
	/** G1's concurrent refinement: the work a reference written into an old object leaves behind. */
	REFINEMENT("G1 refinement"),
	/** Everything else (Micrometer, JMX, the JVM's other threads). */
	OTHER("other");

	/** The kernel's clock tick for {@code /proc} times ({@code USER_HZ}, 100 on Linux). */
	private static final long NANOS_PER_TICK = 10_000_000L;

	private final String label;

	ThreadCpu(String label) {
		this.label = label;
	}

	String label() {
		return label;
	}

	/** @return the group a thread of this name belongs to */
	static ThreadCpu of(String threadName) {
		if (threadName.startsWith("reactor-http")) {
			return EVENT_LOOPS;
		}
		if (threadName.startsWith("parallel-")) {
			return TIMERS;
		}
		if (threadName.startsWith("rig-ramp")) {
			return RIG;
		}
		if (threadName.startsWith("C1 Compiler") || threadName.startsWith("C2 Compiler")) {
			return JIT;
		}
		if (threadName.startsWith("G1 Refine")) {
			return REFINEMENT;
		}
		if (threadName.startsWith("GC Thread") || threadName.startsWith("G1 ")) {
			return GC;
		}
		return OTHER;
	}

	/**
	 * @return CPU nanoseconds (user + system) of the live threads, indexed by ordinal; all zero
	 *         where there is no {@code /proc}. A thread that ended takes its time with it, so read
	 *         differences over windows in which the threads of interest live throughout.
	 */
	static long[] snapshot() {
		long[] nanos = new long[values().length];
		Path tasks = Path.of("/proc/self/task");
		if (!Files.isDirectory(tasks)) {
			return nanos;
		}
		try (DirectoryStream<Path> threads = Files.newDirectoryStream(tasks)) {
			for (Path thread : threads) {
				String name;
				String stat;
				try {
					name = Files.readString(thread.resolve("comm")).trim();
					stat = Files.readString(thread.resolve("stat"));
				}
				catch (IOException ended) {
					continue; // the thread ended while the directory was read
				}
				nanos[of(name).ordinal()] += userPlusSystemTicks(stat) * NANOS_PER_TICK;
			}
		}
		catch (IOException unreadable) {
			return new long[values().length];
		}
		return nanos;
	}

	/** @return fields 14 and 15 of a {@code stat} line (utime, stime) */
	static long userPlusSystemTicks(String stat) {
		// the name may hold spaces and parentheses: the fields after it start behind the last ')'
		String[] fields = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
		// fields[0] is field 3 (the state): utime is field 14, stime field 15
		return Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
	}
}
