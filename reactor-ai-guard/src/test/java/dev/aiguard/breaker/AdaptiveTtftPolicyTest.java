package dev.aiguard.breaker;

import static dev.aiguard.breaker.PolicyFixtures.counts;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;

class AdaptiveTtftPolicyTest {

	private static final long MS = 1_000_000L;
	private static final long PERIOD = 10_000 * MS;
	private final BreakerConfig config = BreakerConfig.defaults();
	private final WindowCounts window = counts(100, 0, 0);

	private final AdaptiveTtftPolicy policy = TripPolicy.adaptiveTtft().multiplier(2).minSamples(20);
	private final AdaptiveTtftPolicy.AdaptiveEvaluator e = (AdaptiveTtftPolicy.AdaptiveEvaluator) policy
			.newEvaluator();

	private void calls(long periodStart, int n, long ttftMs) {
		for (int i = 0; i < n; i++) {
			e.onCall(window, config, Outcome.SUCCESS, ttftMs * MS, false, periodStart + i);
		}
	}

	@Test
	void learnsTheHealthyP95FromTheFirstFullPeriod() {
		calls(0, 100, 400);
		assertThat(e.baseline()).as("nothing learned while the period is open").isZero();
		assertThat(e.pressure(window, config, 0)).isZero();

		calls(PERIOD, 1, 400);
		assertThat(e.baseline()).isBetween(400.0 * MS, 500.0 * MS);
	}

	@Test
	void tripsWhenTheCurrentP95ReachesKTimesTheBaseline() {
		calls(0, 100, 400);
		calls(PERIOD, 100, 400);
		assertThat(e.pressure(window, config, PERIOD)).isBetween(0.4, 0.6);

		calls(2 * PERIOD, 100, 1200); // the previous period still counts: p95 from 200 samples
		assertThat(e.pressure(window, config, 2 * PERIOD)).isGreaterThanOrEqualTo(1.0);
		assertThat(e.onCall(window, config, Outcome.SUCCESS, 1200 * MS, false, 2 * PERIOD)).isTrue();
	}

	@Test
	void aCallFromAnOlderPeriodAfterANewerOneIsDroppedNotCountedInTheNewerOne() {
		calls(0, 100, 400);
		calls(PERIOD, 100, 400); // the baseline is learned; the period of the latest call is PERIOD

		// a record stamped in period -1 (a clock that stepped back) shares a slot with period 1:
		// too late for its period, so it is dropped, not counted in the later one
		assertThat(e.onCall(window, config, Outcome.SUCCESS, 5000 * MS, false, -1)).isFalse();
		assertThat(e.currentP95(PERIOD)).isLessThan(1000 * MS);
		// and the next call of the current period still lands there
		calls(PERIOD + 10, 20, 400);
		assertThat(e.currentP95(PERIOD)).isLessThan(1000 * MS);
	}

	@Test
	void aFewSlowOutliersBelowTheP95DoNotTrip() {
		calls(0, 100, 400);
		calls(PERIOD, 97, 400);
		calls(PERIOD + 100, 3, 5000);
		assertThat(e.pressure(window, config, PERIOD)).isLessThan(1.0);
	}

	@Test
	void stallsBeforeTheFirstTokenCountAsTheSlowestFirstToken() {
		calls(0, 100, 400);
		calls(PERIOD, 80, 400);
		for (int i = 0; i < 20; i++) {
			e.onCall(window, config, Outcome.STALLED, -1, false, PERIOD + 100 + i);
		}
		assertThat(e.pressure(window, config, PERIOD)).isGreaterThanOrEqualTo(1.0);
	}

	@Test
	void healthyPeriodsMoveTheBaselineSlowlyAndUnhealthyOnesNotAtAll() {
		calls(0, 100, 400);
		calls(PERIOD, 100, 600);
		calls(2 * PERIOD, 1, 600);
		double afterHealthy = e.baseline();
		assertThat(afterHealthy).isGreaterThan(400.0 * MS).isLessThan(600.0 * MS);

		calls(3 * PERIOD, 100, 5000); // unhealthy
		calls(4 * PERIOD, 1, 400);
		assertThat(e.baseline()).isLessThan(afterHealthy * 1.01);
	}

	@Test
	void tooFewSamplesGiveNoPressureAndResetKeepsTheBaseline() {
		calls(0, 100, 400);
		calls(PERIOD, 5, 4000);
		assertThat(e.pressure(window, config, PERIOD)).isBetween(0.0, 1.0);
		e.reset(PERIOD);
		assertThat(e.pressure(window, config, PERIOD)).isZero();
		assertThat(e.baseline()).isPositive();
	}

	@Test
	void histogramBinsAreMonotoneAndAtMostAQuarterWide() {
		long previous = 0;
		for (int b = 0; b < TtftHistogram.BINS; b++) {
			long upper = TtftHistogram.upperNanos(b);
			assertThat(upper).isGreaterThan(previous);
			assertThat(TtftHistogram.bin(upper - 1000)).isEqualTo(b);
			previous = upper;
		}
		assertThat(TtftHistogram.bin(Long.MAX_VALUE)).isEqualTo(TtftHistogram.LAST);
		assertThat(TtftHistogram.upperNanos(TtftHistogram.bin(1_000_000_000L)) / 1e9).isBetween(1.0, 1.25);
	}

	@Test
	void invalidSettingsNameTheFieldAndValue() {
		assertThatThrownBy(() -> TripPolicy.adaptiveTtft().multiplier(1)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("multiplier").hasMessageContaining("1.0");
		assertThatThrownBy(() -> TripPolicy.adaptiveTtft().period(Duration.ofMillis(1)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("period");
		assertThatThrownBy(() -> TripPolicy.adaptiveTtft().minSamples(0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("minSamples");
		assertThatThrownBy(() -> TripPolicy.adaptiveTtft().learningRate(0))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("learningRate");
	}

	@Test
	void aStartingBaselineJudgesFromTheFirstCall() {
		AdaptiveTtftPolicy given = policy.startingBaseline(Duration.ofMillis(400));
		var started = (AdaptiveTtftPolicy.AdaptiveEvaluator) given.newEvaluator();
		assertThat(started.baseline()).isEqualTo(400.0 * MS);
		for (int i = 0; i < 20; i++) {
			started.onCall(window, config, Outcome.SUCCESS, 1200 * MS, false, i);
		}
		assertThat(started.pressure(window, config, 20)).as("p95 1.2 s against 2 x 400 ms, in the first period")
				.isGreaterThanOrEqualTo(1.0);
	}

	@Test
	void aStartingBaselineMovesWithHealthyPeriodsLikeALearnedOne() {
		var started = (AdaptiveTtftPolicy.AdaptiveEvaluator) policy.learningRate(0.5)
				.startingBaseline(Duration.ofMillis(400)).newEvaluator();
		for (int i = 0; i < 100; i++) {
			started.onCall(window, config, Outcome.SUCCESS, 600 * MS, false, i);
		}
		started.onCall(window, config, Outcome.SUCCESS, 600 * MS, false, PERIOD);
		// half-way from 400 ms to the period's p95 (the upper edge of 600 ms's bin, 640 ms)
		assertThat(started.baseline()).isBetween(500.0 * MS, 530.0 * MS);
		var learning = (AdaptiveTtftPolicy.AdaptiveEvaluator) policy.newEvaluator();
		assertThat(learning.baseline()).as("no starting baseline: learned first").isZero();
	}

	@Test
	void theStartingBaselineIsValidatedAndPartOfEquality() {
		assertThat(policy.startingBaseline()).isZero();
		assertThat(policy.startingBaseline(Duration.ofMillis(400))).isNotEqualTo(policy)
				.isEqualTo(policy.startingBaseline(Duration.ofMillis(400)));
		assertThat(policy.startingBaseline(Duration.ofMillis(400)).toString()).contains("startingBaseline=PT0.4S");
		assertThatThrownBy(() -> policy.startingBaseline(Duration.ofNanos(10))).hasMessageContaining(
				"startingBaseline").hasMessageContaining("PT0.00000001S");
		assertThatThrownBy(() -> policy.startingBaseline(Duration.ofHours(2))).hasMessageContaining("PT2H");
	}
}
