package dev.aiguard.load;

import java.time.Duration;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

class HealthSignalsTest {

	static IntervalStats stats(long firstTokens, long ttftMillisEach, long attempts, long failures) {
		return IntervalStats.of(Duration.ofSeconds(1), new long[] {0, 10, 0}, firstTokens,
				firstTokens * Duration.ofMillis(ttftMillisEach).toNanos(), attempts, failures);
	}

	@Test
	void responseTimeLosesFiftyPointsPerSecondOfMeanTtft() {
		HealthSignal rt = HealthSignals.responseTime();
		assertThat(rt.name()).isEqualTo("response-time");
		assertThat(rt.score(stats(4, 0, 0, 0))).isEqualTo(100.0);
		assertThat(rt.score(stats(4, 400, 0, 0))).isCloseTo(80.0, within(1e-9));
		assertThat(rt.score(stats(4, 1000, 0, 0))).isCloseTo(50.0, within(1e-9));
		assertThat(rt.score(stats(4, 2000, 0, 0))).isCloseTo(0.0, within(1e-9));
		assertThat(rt.score(stats(4, 5000, 0, 0))).as("floored at 0").isZero();
		assertThat(rt.score(stats(0, 0, 3, 0))).as("no first token: no data").isNaN();
	}

	@Test
	void errorRateLosesTenPointsPerPercentOfFailures() {
		HealthSignal err = HealthSignals.errorRate();
		assertThat(err.name()).isEqualTo("error-rate");
		assertThat(err.score(stats(0, 0, 100, 0))).isEqualTo(100.0);
		assertThat(err.score(stats(0, 0, 100, 1))).isCloseTo(90.0, within(1e-9));
		assertThat(err.score(stats(0, 0, 100, 5))).isCloseTo(50.0, within(1e-9));
		assertThat(err.score(stats(0, 0, 100, 10))).isCloseTo(0.0, within(1e-9));
		assertThat(err.score(stats(0, 0, 100, 60))).as("clamped at 0").isZero();
		assertThat(err.score(stats(5, 100, 0, 0))).as("no attempt: no data").isNaN();
	}

	@Test
	void cpuIsOneHundredMinusTheUsagePercent() {
		double[] usage = {0.25};
		HealthSignal cpu = HealthSignals.cpu(() -> usage[0]);
		assertThat(cpu.name()).isEqualTo("cpu");
		assertThat(cpu.score(stats(0, 0, 0, 0))).isCloseTo(75.0, within(1e-9));
		usage[0] = 1.0;
		assertThat(cpu.score(stats(0, 0, 0, 0))).isZero();
		usage[0] = -1.0;
		assertThat(cpu.score(stats(0, 0, 0, 0))).as("the JVM's 'not available'").isNaN();
		usage[0] = Double.NaN;
		assertThat(cpu.score(stats(0, 0, 0, 0))).isNaN();
	}

	@Test
	void theJvmSignalsReadTheJvmWithoutBlockingAnEventLoop() {
		HealthSignal cpu = HealthSignals.cpu();
		HealthSignal memory = HealthSignals.memory();
		IntervalStats s = stats(0, 0, 0, 0);
		// on a parallel (non-blocking) thread, where the governor's timer runs by default: BlockHound watches
		double[] scores = Mono.fromCallable(() -> new double[] {cpu.score(s), cpu.score(s), memory.score(s)})
				.subscribeOn(Schedulers.parallel())
				.block(Duration.ofSeconds(5));
		assertThat(scores[1]).satisfiesAnyOf(v -> assertThat(v).isNaN(), v -> assertThat(v).isBetween(0.0, 100.0));
		assertThat(scores[2]).isBetween(0.0, 100.0);
		assertThat(memory.name()).isEqualTo("memory");
	}

	@Test
	void jvmCpuIsTheProcessCpuTimeOverTheWallTimePerProcessor() {
		long[] wall = {0};
		long[] cpuTime = {0};
		com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean) java.lang.reflect.Proxy
				.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {com.sun.management.OperatingSystemMXBean.class},
						(proxy, method, args) -> method.getName().equals("getProcessCpuTime") ? cpuTime[0] : null);
		HealthSignal cpu = HealthSignals.cpu(new HealthSignals.ProcessCpuTime(os, 4, () -> wall[0]));
		wall[0] += 1_000_000_000L;
		cpuTime[0] += 2_000_000_000L; // 2 s of CPU in 1 s on 4 processors: 50 %
		assertThat(cpu.score(stats(0, 0, 0, 0))).isCloseTo(50.0, within(1e-9));
		wall[0] += 1_000_000_000L;
		cpuTime[0] += 400_000_000L; // 10 %
		assertThat(cpu.score(stats(0, 0, 0, 0))).isCloseTo(90.0, within(1e-9));
		assertThat(cpu.score(stats(0, 0, 0, 0))).as("no wall time passed: no reading").isNaN();
		wall[0] += 1_000_000_000L;
		cpuTime[0] += 9_000_000_000L; // more than the processors can give: clamped
		assertThat(cpu.score(stats(0, 0, 0, 0))).isZero();
	}

	@Test
	void micrometerCpuReadsProcessThenSystemUsage() {
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		HealthSignal cpu = MicrometerHealthSignals.cpu(registry);
		double[] system = {0.4};
		Gauge.builder("system.cpu.usage", system, a -> a[0]).register(registry);
		assertThat(cpu.score(stats(0, 0, 0, 0))).isCloseTo(60.0, within(1e-9));
		double[] process = {0.1};
		Gauge.builder("process.cpu.usage", process, a -> a[0]).register(registry);
		assertThat(cpu.score(stats(0, 0, 0, 0))).isCloseTo(90.0, within(1e-9));
		assertThat(cpu.name()).isEqualTo("cpu");
	}

	@Test
	void micrometerCpuFallsBackToTheJvmWithoutGauges() {
		HealthSignal cpu = MicrometerHealthSignals.cpu(new SimpleMeterRegistry());
		double score = cpu.score(stats(0, 0, 0, 0));
		assertThat(score).satisfiesAnyOf(v -> assertThat(v).isNaN(), v -> assertThat(v).isBetween(0.0, 100.0));
	}

	@Test
	void customSignalsNeedAName() {
		HealthSignal queue = HealthSignals.of("queue", s -> 100.0 - s.arrivals());
		assertThat(queue.score(stats(0, 0, 0, 0))).isEqualTo(90.0);
		assertThat(queue.name()).isEqualTo("queue");
		assertThatThrownBy(() -> HealthSignals.of(" ", s -> 0))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("signal name must not be blank");
	}

	@Test
	void intervalStatsDeriveRatesAndMeans() {
		IntervalStats s = IntervalStats.of(Duration.ofMillis(500), new long[] {1, 2, 3}, 2,
				Duration.ofMillis(300).toNanos(), 4, 1);
		assertThat(s.arrivals()).isEqualTo(6);
		assertThat(s.requestRate()).isEqualTo(12.0);
		assertThat(s.meanTtftMillis()).isEqualTo(150.0);
		assertThat(s.errorRate()).isEqualTo(0.25);
		IntervalStats empty = IntervalStats.of(Duration.ofSeconds(1), new long[3], 0, 0, 0, 0);
		assertThat(empty.meanTtftMillis()).isNaN();
		assertThat(empty.errorRate()).isNaN();
		assertThat(empty.requestRate()).isZero();
	}

	@Test
	void intervalStatsRefuseBadCountsNamingThem() {
		assertThatThrownBy(() -> IntervalStats.of(Duration.ZERO, new long[3], 0, 0, 0, 0))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("interval must be positive, was PT0S");
		assertThatThrownBy(() -> IntervalStats.of(Duration.ofSeconds(1), new long[2], 0, 0, 0, 0))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("arrivalsByPriority must have 3 entries");
		assertThatThrownBy(() -> IntervalStats.of(Duration.ofSeconds(1), new long[] {0, -1, 0}, 0, 0, 0, 0))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("arrivals of P1 must not be negative, was -1");
		assertThatThrownBy(() -> IntervalStats.of(Duration.ofSeconds(1), new long[3], 0, 0, 1, 2))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("failures must not exceed attempts, was 2 > 1");
	}
}
