package dev.aiguard.load;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class LoadGovernorTest {

	final GovernorFixture f = new GovernorFixture();
	LoadGovernor governor;

	@AfterEach
	void stop() {
		if (governor != null) {
			governor.dispose();
		}
	}

	LoadGovernor start(LoadGovernor.Builder builder) {
		governor = builder.build().start();
		return governor;
	}

	// ---- the load the levels read ----

	@Test
	void oneBusyIntervalDoesNotCrossTheLineOnItsOwnButASustainedRiseDoes() {
		start(f.builder().loadSmoothing(0.3).dwell(Duration.ZERO));
		f.intervals(governor, 5, 7); // 0.7 of capacity
		f.interval(governor, 10); // one interval at capacity: 0.3 * 1.0 + 0.7 * 0.7 = 0.79
		assertThat(governor.state().load()).isCloseTo(0.79, within(1e-9));
		assertThat(governor.state().requestRate()).isEqualTo(10.0);
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);

		f.interval(governor, 10); // 0.3 + 0.7 * 0.79 = 0.853
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
	}

	@Test
	void unsmoothedEachIntervalDecidesAlone() {
		start(f.builder().dwell(Duration.ZERO)); // the fixture reads each interval alone
		f.intervals(governor, 5, 7);
		f.interval(governor, 10);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
	}

	@Test
	void byDefaultTheOfferedLoadAloneNeverGoesPastWarning() {
		start(LoadGovernor.builder("chat").capacity(10).clock(f.time).signal(f.cpu, 0.20).signal(f.memory, 0.15)
				.dwell(Duration.ZERO).riseAfter(Duration.ofSeconds(3)));
		f.intervals(governor, 10, 50); // five times the capacity, a healthy score
		assertThat(governor.state().load()).isGreaterThan(4.0);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.score(30); // the score decides the rest, once it has stayed past the line for riseAfter (3 s)
		f.intervals(governor, 2, 50); // smoothed score 79.0, 64.3: not yet past DEGRADED's line
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.intervals(governor, 4, 50); // 54.0 (DEGRADED's line crossed), 46.8, 41.8, 38.3: confirmed
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
	}

	// ---- score ----

	@Test
	void scoreIsTheWeightedMeanOfTheSubScores() {
		start(f.builder().dwell(Duration.ZERO));
		f.cpu.set(50);
		f.memory.set(100);
		for (int i = 0; i < 100; i++) {
			governor.arrived(Priority.P0);
			governor.firstToken(Duration.ofMillis(400).toNanos()); // response time 100 - 20 = 80
			governor.ended(i == 0 ? Outcome.FAILURE : Outcome.SUCCESS); // 1 % -> 100 - 10 = 90
		}
		f.time.advanceTimeBy(Duration.ofSeconds(1));
		LoadState s = governor.state();
		assertThat(s.subScores()).containsExactly(
				org.assertj.core.api.Assertions.entry("cpu", 50.0),
				org.assertj.core.api.Assertions.entry("memory", 100.0),
				org.assertj.core.api.Assertions.entry("response-time", 80.0),
				org.assertj.core.api.Assertions.entry("error-rate", 90.0));
		// 0.20*50 + 0.15*100 + 0.35*80 + 0.30*90 = 80
		assertThat(s.score()).isCloseTo(80.0, within(1e-9));
	}

	@Test
	void signalsWithoutDataAreLeftOutAndTheWeightsRenormalised() {
		start(f.builder());
		f.cpu.set(50);
		f.memory.set(100);
		f.interval(governor, 0); // no first token, no attempt: response-time and error-rate are NaN
		LoadState s = governor.state();
		assertThat(s.subScores().get("response-time")).isNaN();
		assertThat(s.subScores().get("error-rate")).isNaN();
		assertThat(s.score()).isCloseTo((0.20 * 50 + 0.15 * 100) / 0.35, within(1e-9));
	}

	@Test
	void noSignalWithDataMeansNoScoreAndTheScoreHoldsNoLevel() {
		start(f.builder());
		f.score(Double.NaN);
		f.interval(governor, 1);
		assertThat(governor.state().score()).isNaN();
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
	}

	@Test
	void subScoresAreClampedAndAThrowingSignalCountsAsNoData() {
		HealthSignal broken = HealthSignals.of("broken", s -> {
			throw new IllegalStateException("signal failed");
		});
		List<Throwable> dropped = new ArrayList<>();
		reactor.core.publisher.Hooks.onErrorDropped(dropped::add);
		try {
			start(f.builder().signal(broken, 1.0));
			f.cpu.set(150);
			f.memory.set(-20);
			f.interval(governor, 0);
		}
		finally {
			reactor.core.publisher.Hooks.resetOnErrorDropped();
		}
		assertThat(governor.state().subScores()).containsEntry("cpu", 100.0).containsEntry("memory", 0.0);
		assertThat(governor.state().subScores().get("broken")).isNaN();
		assertThat(governor.state().score()).isCloseTo(0.20 * 100 / 0.35, within(1e-9));
		assertThat(dropped).singleElement().extracting(Throwable::getMessage).isEqualTo("signal failed");
	}

	// ---- levels ----

	@Test
	void scoreLevelsFollowTheThresholds() {
		start(f.builder().dwell(Duration.ZERO));
		assertThat(levelAtScore(80)).isEqualTo(LoadLevel.HEALTHY);
		assertThat(levelAtScore(79.9)).isEqualTo(LoadLevel.WARNING);
		assertThat(levelAtScore(60)).isEqualTo(LoadLevel.WARNING);
		assertThat(levelAtScore(59.9)).isEqualTo(LoadLevel.DEGRADED);
		assertThat(levelAtScore(40)).isEqualTo(LoadLevel.DEGRADED);
		assertThat(levelAtScore(39.9)).isEqualTo(LoadLevel.CRITICAL);
		assertThat(governor.state().lastChange().reason()).isEqualTo(LoadEvent.Reason.SCORE);
		assertThat(governor.state().lastChange().detail()).isEqualTo("cpu=39.9");
	}

	private LoadLevel levelAtScore(double score) {
		f.score(score);
		f.interval(governor, 0);
		return governor.level();
	}

	@Test
	void loadLevelsFollowTheThresholdsAndEscalationIsImmediate() {
		start(f.builder());
		f.interval(governor, 7);
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertThat(governor.state().load()).isCloseTo(0.7, within(1e-9));
		f.interval(governor, 8);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		assertThat(governor.state().lastChange().reason()).isEqualTo(LoadEvent.Reason.LOAD);
		assertThat(governor.state().lastChange().detail()).isEqualTo("load 0.80 of capacity");
		f.interval(governor, 10);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		f.interval(governor, 20);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
	}

	@Test
	void escalationSkipsLevels() {
		start(f.builder());
		f.interval(governor, 25);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		assertThat(governor.state().lastChange().from()).isEqualTo(LoadLevel.HEALTHY);
		assertThat(governor.state().intervals()).isEqualTo(1);
	}

	@Test
	void theWorstInputDecides() {
		start(f.builder());
		f.score(50); // DEGRADED by score
		f.interval(governor, 8); // WARNING by load
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		assertThat(governor.state().lastChange().reason()).isEqualTo(LoadEvent.Reason.SCORE);
	}

	// ---- hysteresis ----

	@Test
	void loadRecoversOnlyBelowTheRecoveryLine() {
		start(f.builder().dwell(Duration.ZERO));
		f.interval(governor, 8);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.interval(governor, 7);
		assertThat(governor.level()).as("0.7 is under the degrade line but not under 0.6").isEqualTo(LoadLevel.WARNING);
		f.interval(governor, 6);
		assertThat(governor.level()).as("0.6 is not below 0.6").isEqualTo(LoadLevel.WARNING);
		f.interval(governor, 5);
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertThat(governor.state().lastChange().reason()).isEqualTo(LoadEvent.Reason.RECOVERY);
	}

	@Test
	void everyLevelIsLeftBelowItsThresholdTimesTheRecoveryRatio() {
		start(f.builder().dwell(Duration.ZERO));
		f.interval(governor, 20);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		f.interval(governor, 15); // CRITICAL is left below 2.0 * 0.75 = 1.5
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		f.interval(governor, 14);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		f.interval(governor, 8); // DEGRADED is left below 1.0 * 0.75
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		f.interval(governor, 7);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
	}

	@Test
	void scoreRecoversOnlyFiveAboveItsThreshold() {
		start(f.builder().dwell(Duration.ZERO));
		f.score(79);
		f.interval(governor, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.score(84.9);
		f.interval(governor, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.score(85);
		f.interval(governor, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
	}

	@Test
	void noFlappingAroundTheDegradeLine() {
		List<LoadEvent> events = new ArrayList<>();
		start(f.builder().dwell(Duration.ZERO).listener(events::add));
		int[] rates = {8, 7, 8, 7, 8, 7, 8, 7};
		for (int r : rates) {
			f.interval(governor, r);
		}
		assertThat(events).hasSize(1);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
	}

	// ---- dwell ----

	@Test
	void recoveryWaitsTheDwellAndGoesOneLevelAtATime() {
		start(f.builder().dwell(Duration.ofSeconds(30)));
		f.interval(governor, 25);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		long enteredAt = governor.state().levelSinceNanos();
		f.intervals(governor, 29, 0);
		assertThat(governor.level()).as("29 s at CRITICAL").isEqualTo(LoadLevel.CRITICAL);
		f.interval(governor, 0);
		assertThat(governor.level()).as("30 s at CRITICAL, every input healthy").isEqualTo(LoadLevel.DEGRADED);
		assertThat(governor.state().levelSinceNanos() - enteredAt).isEqualTo(Duration.ofSeconds(30).toNanos());
		f.intervals(governor, 29, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		f.interval(governor, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.intervals(governor, 30, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
	}

	@Test
	void escalationDoesNotWaitTheDwell() {
		start(f.builder().dwell(Duration.ofSeconds(30)));
		f.interval(governor, 8);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.interval(governor, 10);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
	}

	@Test
	void dwellRestartsWhenTheLevelWorsens() {
		start(f.builder().dwell(Duration.ofSeconds(10)));
		f.interval(governor, 8); // WARNING at t=1
		f.intervals(governor, 5, 0);
		f.interval(governor, 10); // DEGRADED at t=7
		f.intervals(governor, 9, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		f.interval(governor, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
	}

	// ---- cold start and forecast ----

	@Test
	void coldStartUsesCurrentValuesThenTheForecastTakesPart() {
		start(f.builder().capacity(100).warmupIntervals(4).dwell(Duration.ZERO));
		int[] rates = {10, 20, 30, 40};
		for (int r : rates) {
			f.interval(governor, r);
			assertThat(governor.state().mode()).isEqualTo(LoadState.Mode.COLD_START);
			assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		}
		assertThat(governor.state().forecastPeak()).as("an overload forecast, ignored while cold")
				.isCloseTo(0.9, within(1e-9));
		f.interval(governor, 50);
		assertThat(governor.state().mode()).isEqualTo(LoadState.Mode.FORECAST);
		assertThat(governor.state().load()).isCloseTo(0.5, within(1e-9));
		assertThat(governor.level()).as("forecast-driven early warning at half the capacity").isEqualTo(LoadLevel.WARNING);
		LoadEvent change = governor.state().lastChange();
		assertThat(change.reason()).isEqualTo(LoadEvent.Reason.FORECAST);
		assertThat(change.detail()).isEqualTo("forecast peak 1.00 of capacity in 5 intervals");
		assertThat(change.forecastPeak()).isCloseTo(1.0, within(1e-9));
	}

	@Test
	void theForecastIsTheForecastersOverTheHorizon() {
		start(f.builder().capacity(100).horizon(3).warmupIntervals(0));
		Holt reference = Holt.of(0.3, 0.1);
		int[] rates = {12, 17, 15, 22, 30, 26};
		for (int r : rates) {
			f.interval(governor, r);
			reference.observe(r);
		}
		assertThat(governor.state().forecast()).containsExactly(
				new double[] {reference.forecast(1), reference.forecast(2), reference.forecast(3)}, within(1e-9));
		assertThat(governor.state().forecastPeak()).isCloseTo(reference.forecast(3) / 100, within(1e-9));
		assertThat(governor.state().requestRate()).isEqualTo(26.0);
	}

	@Test
	void aSuppliedForecasterIsUsedAndNegativeForecastsCountAsZero() {
		start(f.builder().capacity(100).horizon(2).warmupIntervals(0).forecaster(() -> Holt.of(1.0, 1.0)));
		f.interval(governor, 50);
		f.interval(governor, 10); // trend -40 per interval
		assertThat(governor.state().forecast()).containsExactly(0.0, 0.0);
		assertThat(governor.state().forecastPeak()).isZero();
	}

	@Test
	void aForecastWarningIsLeftWhenThePeakFallsUnderTheLine() {
		start(f.builder().capacity(100).warmupIntervals(0).dwell(Duration.ZERO).forecaster(() -> Holt.of(1.0, 1.0)));
		f.interval(governor, 40);
		f.interval(governor, 60); // level 60, trend 20: peak 160
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		f.interval(governor, 50); // trend -10: peak 40 (1 ahead)
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
	}

	@Test
	void theForecastNeverHoldsMoreThanWarning() {
		start(f.builder().capacity(10).warmupIntervals(0).forecaster(() -> Holt.of(1.0, 1.0)));
		f.interval(governor, 0);
		f.interval(governor, 5); // forecast up to 30 per second: 3x capacity
		assertThat(governor.state().forecastPeak()).isCloseTo(3.0, within(1e-9));
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
	}

	// ---- the interval ----

	@Test
	void intervalStatsCountWhatWasRecorded() {
		start(f.builder());
		governor.arrived(Priority.P0);
		governor.arrived(Priority.P2);
		governor.arrived(Priority.P2);
		governor.firstToken(Duration.ofMillis(200).toNanos());
		governor.firstToken(Duration.ofMillis(400).toNanos());
		governor.ended(Outcome.SUCCESS);
		governor.ended(Outcome.STALLED);
		governor.ended(Outcome.INCOMPLETE);
		governor.ended(Outcome.CANCELLED);
		governor.ended(Outcome.CLIENT_ERROR);
		governor.ended(Outcome.REJECTED);
		f.time.advanceTimeBy(Duration.ofSeconds(1));
		IntervalStats s = governor.state().interval();
		assertThat(s.arrivals()).isEqualTo(3);
		assertThat(s.arrivals(Priority.P2)).isEqualTo(2);
		assertThat(s.requestRate()).isEqualTo(3.0);
		assertThat(s.firstTokens()).isEqualTo(2);
		assertThat(s.meanTtftMillis()).isEqualTo(300.0);
		assertThat(s.attempts()).isEqualTo(3);
		assertThat(s.failures()).isEqualTo(2);
		assertThat(s.intervalNanos()).isEqualTo(Duration.ofSeconds(1).toNanos());
		f.interval(governor, 0);
		assertThat(governor.state().interval().arrivals()).as("counts are per interval").isZero();
		assertThat(governor.state().interval().attempts()).isZero();
	}

	// ---- timer and lifecycle ----

	@Test
	void startDecidesOncePerIntervalOnTheClockAndIsIdempotent() {
		governor = f.builder().interval(Duration.ofMillis(500)).build();
		f.time.advanceTimeBy(Duration.ofSeconds(3));
		assertThat(governor.state().intervals()).as("nothing before start").isZero();
		governor.start();
		governor.start();
		f.time.advanceTimeBy(Duration.ofSeconds(5));
		assertThat(governor.state().intervals()).isEqualTo(10);
		assertThat(governor.state().interval().intervalNanos()).isEqualTo(Duration.ofMillis(500).toNanos());
		governor.dispose();
		assertThat(governor.isDisposed()).isTrue();
		f.time.advanceTimeBy(Duration.ofSeconds(5));
		assertThat(governor.state().intervals()).isEqualTo(10);
		governor.start();
		f.time.advanceTimeBy(Duration.ofSeconds(5));
		assertThat(governor.state().intervals()).as("a disposed governor does not restart").isEqualTo(10);
	}

	@Test
	void theTimerSurvivesAThrowingListener() {
		List<Throwable> dropped = new ArrayList<>();
		reactor.core.publisher.Hooks.onErrorDropped(dropped::add);
		try {
			start(f.builder().dwell(Duration.ZERO).listener(e -> {
				throw new IllegalStateException("listener failed");
			}));
			f.interval(governor, 8);
			f.interval(governor, 0);
			f.interval(governor, 8);
		}
		finally {
			reactor.core.publisher.Hooks.resetOnErrorDropped();
		}
		assertThat(governor.state().intervals()).isEqualTo(3);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		assertThat(dropped).hasSize(3).allSatisfy(t -> assertThat(t).hasMessage("listener failed"));
	}

	@Test
	void decideCanBeCalledDirectly() {
		governor = f.builder().build();
		for (int i = 0; i < 9; i++) {
			governor.arrived(Priority.P1);
		}
		LoadState s = governor.decide();
		assertThat(s.level()).isEqualTo(LoadLevel.WARNING);
		assertThat(s.requestRate()).as("without elapsed time the interval is the configured one").isEqualTo(9.0);
		assertThat(governor.state()).isSameAs(s);
	}

	@Test
	void theRateIsMeasuredOverTheTimeThatPassed() {
		governor = f.builder().build().start();
		for (int i = 0; i < 8; i++) {
			governor.arrived(Priority.P1);
		}
		f.time.advanceTimeBy(Duration.ofMillis(500));
		governor.decide(); // half an interval: 16 per second
		assertThat(governor.state().requestRate()).isEqualTo(16.0);
		assertThat(governor.state().interval().intervalNanos()).isEqualTo(Duration.ofMillis(500).toNanos());
	}
}
