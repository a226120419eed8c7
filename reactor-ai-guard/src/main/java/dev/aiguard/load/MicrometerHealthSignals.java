package dev.aiguard.load;

import java.util.Objects;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

/**
 * {@link HealthSignal}s read from a Micrometer {@link MeterRegistry}. Kept apart from
 * {@link HealthSignals} because Micrometer is optional: only this class touches it.
 *
 * <pre>{@code
 * LoadGovernor.builder("chat").capacity(40)
 *     .signal(MicrometerHealthSignals.cpu(meterRegistry), 0.20)   // replaces the JVM's "cpu"
 *     .build();
 * }</pre>
 */
public final class MicrometerHealthSignals {

	/** Micrometer's process CPU gauge (0..1), bound by {@code ProcessorMetrics}. */
	public static final String PROCESS_CPU = "process.cpu.usage";
	/** Micrometer's system CPU gauge (0..1), bound by {@code ProcessorMetrics}. */
	public static final String SYSTEM_CPU = "system.cpu.usage";

	private MicrometerHealthSignals() {
	}

	/**
	 * @return the {@code cpu} signal ({@code 100 − CPU %}) from the registry's
	 *         {@code process.cpu.usage} gauge, else {@code system.cpu.usage}, else the JVM's reading
	 *         when the registry has neither
	 */
	public static HealthSignal cpu(MeterRegistry registry) {
		Objects.requireNonNull(registry, "registry");
		java.util.function.DoubleSupplier jvm = HealthSignals.JvmCpu.usage();
		return HealthSignals.cpu(() -> {
			double usage = read(registry, PROCESS_CPU);
			if (!(usage >= 0.0)) {
				usage = read(registry, SYSTEM_CPU);
			}
			return usage >= 0.0 ? usage : jvm.getAsDouble();
		});
	}

	private static double read(MeterRegistry registry, String name) {
		Gauge gauge = registry.find(name).gauge();
		return gauge == null ? Double.NaN : gauge.value();
	}
}
