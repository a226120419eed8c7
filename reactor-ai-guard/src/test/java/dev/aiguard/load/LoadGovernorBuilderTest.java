package dev.aiguard.load;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LoadGovernorBuilderTest {

	static LoadGovernor.Builder valid() {
		return LoadGovernor.builder("chat").capacity(40);
	}

	static void refused(Runnable build, String message) {
		assertThatThrownBy(build::run).isInstanceOf(IllegalArgumentException.class).hasMessage(message);
	}

	@Test
	void defaultsFollowTheContract() {
		LoadGovernor governor = valid().build();
		assertThat(governor.name()).isEqualTo("chat");
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertThat(governor.state().mode()).isEqualTo(LoadState.Mode.COLD_START);
		assertThat(governor.state().subScores()).containsOnlyKeys("cpu", "memory", "response-time", "error-rate");
		assertThat(governor.state().subScores().keySet()).containsExactly("cpu", "memory", "response-time", "error-rate");
		assertThat(governor.rules()).isEqualTo(LoadRules.defaults());
		assertThat(governor.state().intervals()).isZero();
		assertThat(governor.state().lastChange()).isNull();
	}

	@Test
	void capacityIsRequiredAndPositive() {
		refused(() -> LoadGovernor.builder("chat").build(),
				"capacity is required (requests per second the service sustains), was not set");
		refused(() -> valid().capacity(0), "capacity must be a finite number > 0, was 0.0");
		refused(() -> valid().capacity(Double.NaN), "capacity must be a finite number > 0, was NaN");
		refused(() -> valid().capacity(Double.POSITIVE_INFINITY), "capacity must be a finite number > 0, was Infinity");
	}

	@Test
	void nameMustNotBeBlank() {
		refused(() -> LoadGovernor.builder(" "), "name must not be blank, was ' '");
	}

	@Test
	void timesAndCountsAreChecked() {
		refused(() -> valid().interval(Duration.ZERO), "interval must be > 0, was PT0S");
		refused(() -> valid().dwell(Duration.ofSeconds(-1)), "dwell must be >= 0, was PT-1S");
		refused(() -> valid().horizon(0), "horizon must be >= 1, was 0");
		refused(() -> valid().warmupIntervals(-1), "warmupIntervals must be >= 0, was -1");
	}

	@Test
	void loadLinesAreChecked() {
		refused(() -> valid().overloadLine(0), "overloadLine must be a finite number > 0, was 0.0");
		refused(() -> valid().degradeAt(-0.5), "degradeAt must be a finite number > 0, was -0.5");
		refused(() -> valid().recoverBelow(Double.NaN), "recoverBelow must be a finite number > 0, was NaN");
		refused(() -> valid().loadThresholds(0.8, 0, 2), "loadThresholds.degraded must be > 0 (or infinite: off), was 0.0");
		refused(() -> valid().loadThresholds(0.8, 2.0, 1.0).build(),
				"loadThresholds must increase (warning < degraded < critical), were 0.8, 2.0, 1.0");
		refused(() -> valid().loadThresholds(0.8, Double.POSITIVE_INFINITY, 2.0).build(),
				"loadThresholds must increase (warning < degraded < critical), were 0.8, Infinity, 2.0");
		refused(() -> valid().loadThresholds(0.8, 1.0, 2.0).degradeAt(1.5).build(),
				"loadThresholds must increase (warning < degraded < critical), were 1.5, 1.0, 2.0");
		refused(() -> valid().loadSmoothing(0), "loadSmoothing must be in (0, 1], was 0.0");
		refused(() -> valid().loadSmoothing(1.5), "loadSmoothing must be in (0, 1], was 1.5");
		assertThat(valid().loadThresholds(0.8, 1.5, Double.POSITIVE_INFINITY).build()).isNotNull();
		refused(() -> valid().recoverBelow(0.8).build(), "recoverBelow must be < degradeAt (0.8), was 0.8");
	}

	@Test
	void scoreLinesAreChecked() {
		refused(() -> valid().scoreThresholds(80, 60, 0), "scoreThresholds.critical must be in (0, 100], was 0.0");
		refused(() -> valid().scoreThresholds(101, 60, 40), "scoreThresholds.warning must be in (0, 100], was 101.0");
		refused(() -> valid().scoreThresholds(60, 80, 40).build(),
				"scoreThresholds must decrease (warning > degraded > critical), were 60.0, 80.0, 40.0");
	}

	@Test
	void signalsAreCheckedAndReplacedByName() {
		refused(() -> valid().signal(HealthSignals.cpu(() -> 0.5), 0), "weight of signal 'cpu' must be a finite number > 0, was 0.0");
		refused(() -> valid().withoutSignal("gpu"),
				"withoutSignal: no signal named 'gpu', signals are [cpu, memory, response-time, error-rate]");
		LoadGovernor governor = valid().signal(HealthSignals.cpu(() -> 0.5), 1.0).withoutSignal("memory")
				.signal(HealthSignals.of("queue", s -> 70), 0.5).build();
		assertThat(governor.state().subScores().keySet()).containsExactly("cpu", "response-time", "error-rate", "queue");
		governor.decide();
		assertThat(governor.state().subScores()).containsEntry("cpu", 50.0).containsEntry("queue", 70.0);
		assertThat(governor.state().score()).isEqualTo((1.0 * 50 + 0.5 * 70) / 1.5);
	}

	@Test
	void customThresholdsAreUsed() {
		GovernorFixture f = new GovernorFixture();
		LoadGovernor governor = f.builder().loadThresholds(0.5, 0.7, 0.9).recoverBelow(0.25)
				.scoreThresholds(90, 70, 50).dwell(Duration.ZERO).build().start();
		f.interval(governor, 5);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.interval(governor, 9);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		f.interval(governor, 4); // CRITICAL left below 0.9 * 0.5
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		f.score(85);
		f.interval(governor, 0); // DEGRADED left: load < 0.35, score >= 75
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.interval(governor, 0); // WARNING needs a score of 95
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		governor.dispose();
	}
}
