package dev.aiguard.load;

import java.time.Duration;

import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Hooks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class LoadGovernorMetricsTest {

	final GovernorFixture f = new GovernorFixture();
	final SimpleMeterRegistry registry = new SimpleMeterRegistry();
	LoadGovernor governor;

	@AfterEach
	void stop() {
		Hooks.resetOnErrorDropped();
		if (governor != null) {
			governor.dispose();
		}
	}

	double gauge(String name) {
		return registry.get(name).tag("governor", "chat").gauge().value();
	}

	@Test
	void gaugesFollowTheLastDecision() {
		governor = f.builder().capacity(100).warmupIntervals(0).forecaster(() -> Holt.of(1.0, 1.0))
				.metrics(new MicrometerGuardMetrics(registry)).build().start();
		assertThat(gauge("aiguard.load.level")).isZero();
		f.cpu.set(40);
		f.memory.set(90);
		f.interval(governor, 40);
		f.interval(governor, 60); // trend 20: peak 160 per second in 5 intervals
		assertThat(gauge("aiguard.load.level")).isEqualTo(1.0);
		assertThat(gauge("aiguard.load.utilization")).isCloseTo(0.6, within(1e-9));
		assertThat(gauge("aiguard.load.forecast")).isCloseTo(1.6, within(1e-9));
		assertThat(gauge("aiguard.load.score")).isCloseTo((0.2 * 40 + 0.15 * 90) / 0.35, within(1e-9));
		assertThat(registry.get("aiguard.load.subscore").tags("governor", "chat", "signal", "cpu").gauge().value())
				.isEqualTo(40.0);
		assertThat(registry.get("aiguard.load.subscore").tags("governor", "chat", "signal", "error-rate").gauge().value())
				.isNaN();
		assertThat(registry.find("aiguard.load.subscore").gauges()).hasSize(4);
	}

	@Test
	void everyLevelChangeIsCounted() {
		governor = f.builder().dwell(Duration.ZERO).metrics(new MicrometerGuardMetrics(registry)).build().start();
		f.interval(governor, 10); // LOAD -> DEGRADED
		f.interval(governor, 0); // RECOVERY -> WARNING
		f.interval(governor, 0); // RECOVERY -> HEALTHY
		f.interval(governor, 10);
		assertThat(registry.get("aiguard.load.level.changes")
				.tags("governor", "chat", "from", "HEALTHY", "to", "DEGRADED", "reason", "LOAD").counter().count())
				.isEqualTo(2.0);
		assertThat(registry.get("aiguard.load.level.changes")
				.tags("from", "DEGRADED", "to", "WARNING", "reason", "RECOVERY").counter().count()).isEqualTo(1.0);
		assertThat(registry.get("aiguard.load.level.changes").counters()).hasSize(3);
	}

	@Test
	void throwingMetricsNeverBreakADecision() {
		GuardMetrics broken = new GuardMetrics() {
			@Override
			public void loadLevelChanged(String governor, String from, String to, String reason) {
				throw new IllegalStateException("meter failed");
			}
		};
		int[] dropped = {0};
		Hooks.onErrorDropped(e -> dropped[0]++);
		governor = f.builder().metrics(broken).build().start();
		f.interval(governor, 10);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		assertThat(dropped[0]).isEqualTo(1);
	}
}
