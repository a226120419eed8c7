package dev.aiguard.load;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.MemoryUsage;
import java.lang.management.OperatingSystemMXBean;
import java.util.Objects;
import java.util.function.DoubleSupplier;
import java.util.function.ToDoubleFunction;

/**
 * The built-in {@link HealthSignal}s and a factory for custom ones. The governor's defaults are
 * {@link #cpu()} (weight 0.20), {@link #memory()} (0.15), {@link #responseTime()} (0.35) and
 * {@link #errorRate()} (0.30). For CPU read from Micrometer instead of the JVM, see
 * {@link MicrometerHealthSignals}.
 *
 * <pre>{@code
 * LoadGovernor.builder("chat").capacity(40)
 *     .signal(HealthSignals.responseTime(), 0.5)   // replaces the default of the same name
 *     .withoutSignal("memory")
 *     .build();
 * }</pre>
 */
public final class HealthSignals {

	/** Name of {@link #cpu()}. */
	public static final String CPU = "cpu";
	/** Name of {@link #memory()}. */
	public static final String MEMORY = "memory";
	/** Name of {@link #responseTime()}. */
	public static final String RESPONSE_TIME = "response-time";
	/** Name of {@link #errorRate()}. */
	public static final String ERROR_RATE = "error-rate";

	private HealthSignals() {
	}

	/**
	 * @return {@code 100 − CPU %} of this process since the previous reading: its CPU time from the
	 *         JVM's {@link OperatingSystemMXBean} over the wall time, per available processor (the
	 *         load average per processor on a runtime that does not report process CPU time)
	 */
	public static HealthSignal cpu() {
		return cpu(JvmCpu.usage());
	}

	/**
	 * @param usage CPU usage in 0..1 (NaN or negative: no data)
	 * @return {@code 100 − usage × 100} under the name {@code cpu}
	 */
	public static HealthSignal cpu(DoubleSupplier usage) {
		Objects.requireNonNull(usage, "usage");
		return of(CPU, interval -> {
			double u = usage.getAsDouble();
			return u >= 0.0 ? 100.0 - Math.min(u, 1.0) * 100.0 : Double.NaN;
		});
	}

	/** @return {@code 100 − heap used ÷ max %} (÷ committed when the heap has no maximum) */
	public static HealthSignal memory() {
		MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
		return of(MEMORY, interval -> {
			MemoryUsage heap = memory.getHeapMemoryUsage();
			long max = heap.getMax() > 0 ? heap.getMax() : heap.getCommitted();
			return max > 0 ? 100.0 - 100.0 * heap.getUsed() / max : Double.NaN;
		});
	}

	/**
	 * @return {@code 100 − min(mean TTFT ms ÷ 1000 × 50, 100)}: 100 at an instant first token, 50 at
	 *         one second, 0 from two seconds; NaN (no data) when fewer first tokens than
	 *         {@link IntervalStats#minSamples()} arrived in the window, or none
	 */
	public static HealthSignal responseTime() {
		return of(RESPONSE_TIME, interval -> {
			if (interval.firstTokens() < interval.minSamples()) {
				return Double.NaN;
			}
			double ms = interval.meanTtftMillis();
			return Double.isNaN(ms) ? Double.NaN : 100.0 - Math.min(ms / 1000.0 * 50.0, 100.0);
		});
	}

	/**
	 * @return {@code 100 − failures ÷ attempts × 1000}, clamped at 0: 1 % failures cost 10 points,
	 *         10 % or more give 0; NaN (no data) when fewer attempts than
	 *         {@link IntervalStats#minSamples()} ended in the window, or none
	 */
	public static HealthSignal errorRate() {
		return of(ERROR_RATE, interval -> {
			if (interval.attempts() < interval.minSamples()) {
				return Double.NaN;
			}
			double rate = interval.errorRate();
			return Double.isNaN(rate) ? Double.NaN : Math.max(0.0, 100.0 - rate * 1000.0);
		});
	}

	/**
	 * @param name the signal's name
	 * @param score the sub-score of an interval, 0..100, NaN for no data
	 * @return a signal of that name
	 */
	public static HealthSignal of(String name, ToDoubleFunction<IntervalStats> score) {
		Objects.requireNonNull(name, "name");
		Objects.requireNonNull(score, "score");
		if (name.isBlank()) {
			throw new IllegalArgumentException("signal name must not be blank, was '" + name + "'");
		}
		return new Named(name, score);
	}

	/** A signal from a name and a function. */
	static final class Named implements HealthSignal {

		final String name;
		final ToDoubleFunction<IntervalStats> score;

		Named(String name, ToDoubleFunction<IntervalStats> score) {
			this.name = name;
			this.score = score;
		}

		@Override
		public String name() {
			return name;
		}

		@Override
		public double score(IntervalStats interval) {
			return score.applyAsDouble(interval);
		}

		@Override
		public String toString() {
			return "HealthSignal(" + name + ')';
		}
	}

	/**
	 * CPU usage from the JVM: the process's CPU time over the wall time since the previous reading,
	 * per available processor. A CPU-time reading is a clock call (microseconds); the bean's own
	 * {@code getProcessCpuLoad()} reads the container's control files on every call (hundreds of
	 * microseconds), which has no place on an event loop.
	 */
	static final class JvmCpu {

		private JvmCpu() {
		}

		static DoubleSupplier usage() {
			OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
			int cpus = Math.max(1, os.getAvailableProcessors());
			try {
				if (os instanceof com.sun.management.OperatingSystemMXBean
						&& ((com.sun.management.OperatingSystemMXBean) os).getProcessCpuTime() >= 0) {
					return new ProcessCpuTime((com.sun.management.OperatingSystemMXBean) os, cpus);
				}
			}
			catch (LinkageError jdkManagementAbsent) {
				// a runtime without jdk.management: the load average below is what remains
			}
			return () -> {
				double average = os.getSystemLoadAverage();
				return average >= 0.0 ? Math.min(average / cpus, 1.0) : Double.NaN;
			};
		}
	}

	/** CPU time used between two readings ÷ (wall time × processors); safe to share between governors. */
	static final class ProcessCpuTime implements DoubleSupplier {

		final com.sun.management.OperatingSystemMXBean os;
		final int cpus;
		final java.util.function.LongSupplier wallClock;
		/** {wall nanos, process CPU nanos} of the previous reading. */
		final java.util.concurrent.atomic.AtomicReference<long[]> last;

		ProcessCpuTime(com.sun.management.OperatingSystemMXBean os, int cpus) {
			this(os, cpus, System::nanoTime);
		}

		ProcessCpuTime(com.sun.management.OperatingSystemMXBean os, int cpus, java.util.function.LongSupplier wallClock) {
			this.os = os;
			this.cpus = cpus;
			this.wallClock = wallClock;
			this.last = new java.util.concurrent.atomic.AtomicReference<>(new long[] {wallClock.getAsLong(),
					os.getProcessCpuTime()});
		}

		@Override
		public double getAsDouble() {
			long cpu = os.getProcessCpuTime();
			long now = wallClock.getAsLong();
			long[] previous = last.getAndSet(new long[] {now, cpu});
			long wall = now - previous[0];
			if (cpu < 0 || previous[1] < 0 || wall <= 0) {
				return Double.NaN;
			}
			return Math.max(0.0, Math.min(1.0, (double) (cpu - previous[1]) / ((double) wall * cpus)));
		}
	}
}
