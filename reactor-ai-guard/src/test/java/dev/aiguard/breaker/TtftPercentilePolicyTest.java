package dev.aiguard.breaker;

import static dev.aiguard.breaker.PolicyFixtures.counts;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;

class TtftPercentilePolicyTest {

	private static final long MS = 1_000_000L;
	private static final long SECOND = 1000 * MS;
	private final BreakerConfig config = BreakerConfig.defaults();
	private final WindowCounts window = counts(100, 0, 0);

	private static TtftPercentilePolicy.PercentileEvaluator evaluator(TtftPercentilePolicy policy) {
		return (TtftPercentilePolicy.PercentileEvaluator) policy.newEvaluator();
	}

	private void calls(TripPolicy.Evaluator e, long at, int n, long ttftMs) {
		for (int i = 0; i < n; i++) {
			e.onCall(window, config, Outcome.SUCCESS, ttftMs * MS, false, at);
		}
	}

	@Test
	void theP95AgainstTheLimitIsThePressure() {
		var e = evaluator(TripPolicy.ttftPercentile(Duration.ofSeconds(2)));
		calls(e, 0, 100, 1000);
		assertThat(e.currentPercentile(0)).isBetween(950 * MS, 1050 * MS);
		assertThat(e.pressure(window, config, 0)).isBetween(0.45, 0.55);
		calls(e, 0, 10, 3000); // 110 first tokens, 10 slow: the p95 (rank 105) is slow
		assertThat(e.pressure(window, config, 0)).isBetween(1.4, 1.6);
	}

	@Test
	void p99LooksFurtherIntoTheTailThanP95() {
		var p95 = evaluator(TripPolicy.ttftPercentile(Duration.ofSeconds(2)));
		var p99 = evaluator(TripPolicy.ttftPercentile(Duration.ofSeconds(2)).percentile(0.99));
		for (var e : new TripPolicy.Evaluator[] { p95, p99 }) {
			calls(e, 0, 97, 500);
			calls(e, 0, 3, 4000);
		}
		assertThat(p95.pressure(window, config, 0)).isLessThan(1);
		assertThat(p99.pressure(window, config, 0)).isGreaterThanOrEqualTo(1);
	}

	@Test
	void onlyAFirstTokenOverTheLimitAsksToJudge() {
		var e = evaluator(TripPolicy.ttftPercentile(Duration.ofSeconds(2)));
		assertThat(e.onCall(window, config, Outcome.SUCCESS, 1500 * MS, false, 0)).isFalse();
		assertThat(e.onCall(window, config, Outcome.SUCCESS, 2500 * MS, false, 0)).isTrue();
		assertThat(e.onCall(window, config, Outcome.FAILURE, -1, false, 0)).as("no first token, no sample")
				.isFalse();
	}

	@Test
	void noPressureWithFewerThanMinSamples() {
		var e = evaluator(TripPolicy.ttftPercentile(Duration.ofSeconds(2)).minSamples(20));
		calls(e, 0, 19, 9000);
		assertThat(e.pressure(window, config, 0)).isZero();
		calls(e, 0, 1, 9000);
		assertThat(e.pressure(window, config, 0)).isGreaterThan(4);
	}

	@Test
	void stallsBeforeTheFirstTokenCountAsTheSlowestFirstToken() {
		var e = evaluator(TripPolicy.ttftPercentile(Duration.ofSeconds(2)).minSamples(10));
		calls(e, 0, 5, 100);
		for (int i = 0; i < 5; i++) {
			assertThat(e.onCall(window, config, Outcome.STALLED, -1, false, 0)).isTrue();
		}
		assertThat(e.pressure(window, config, 0)).isGreaterThan(1000);
	}

	@Test
	void theWindowSlidesInSixthsAndForgetsOldSlowness() {
		// 60 s window: six slices of 10 s
		var e = evaluator(TripPolicy.ttftPercentile(Duration.ofSeconds(2)).window(Duration.ofSeconds(60)));
		calls(e, 0, 50, 5000); // slice 0: all slow
		for (int slice = 1; slice < 6; slice++) {
			calls(e, slice * 10 * SECOND, 50, 500);
		}
		// 300 samples, 50 slow: the p95 is slow while slice 0 is in the window
		assertThat(e.pressure(window, config, 59 * SECOND)).isGreaterThan(1);
		assertThat(e.pressure(window, config, 60 * SECOND)).as("slice 0 has slid out").isLessThan(1);
		// a new sample into slice 6 reuses slice 0's slot and clears it first
		calls(e, 60 * SECOND, 1, 500);
		assertThat(e.currentPercentile(60 * SECOND)).isLessThan(SECOND);
		assertThat(e.pressure(window, config, 200 * SECOND)).as("everything has slid out").isZero();
	}

	@Test
	void aLateSampleForASliceAlreadyReplacedIsDropped() {
		var e = evaluator(TripPolicy.ttftPercentile(Duration.ofSeconds(2)).window(Duration.ofSeconds(60))
				.minSamples(1));
		calls(e, 60 * SECOND, 10, 500); // slice 6 in slot 0
		assertThat(e.onCall(window, config, Outcome.SUCCESS, 9000 * MS, false, 0)).isFalse(); // slice 0: too late
		assertThat(e.pressure(window, config, 60 * SECOND)).isLessThan(1);
	}

	@Test
	void resetForgetsTheEvidence() {
		var e = evaluator(TripPolicy.ttftPercentile(Duration.ofSeconds(2)).minSamples(1));
		calls(e, 0, 10, 9000);
		e.reset(0);
		assertThat(e.pressure(window, config, 0)).isZero();
		calls(e, 0, 1, 500);
		assertThat(e.pressure(window, config, 0)).isLessThan(1);
	}

	@Test
	void settersValidateAndPoliciesCompareByValue() {
		TtftPercentilePolicy p = TripPolicy.ttftPercentile(Duration.ofSeconds(3));
		assertThat(p.limit()).isEqualTo(Duration.ofSeconds(3));
		assertThat(p.percentile()).isEqualTo(0.95);
		assertThat(p.window()).isEqualTo(Duration.ofSeconds(60));
		assertThat(p.minSamples()).isEqualTo(20);
		assertThat(p).isEqualTo(TripPolicy.ttftPercentile(Duration.ofSeconds(3))).hasSameHashCodeAs(
				TripPolicy.ttftPercentile(Duration.ofSeconds(3)));
		assertThat(p.percentile(0.99)).isNotEqualTo(p);
		assertThat(p.toString()).contains("limit=PT3S", "percentile=0.95");
		assertThatThrownBy(() -> p.percentile(95)).hasMessageContaining("percentile").hasMessageContaining("95.0")
				.hasMessageContaining("write 0.95");
		assertThatThrownBy(() -> p.percentile(1.0)).hasMessageContaining("1.0");
		assertThatThrownBy(() -> p.limit(Duration.ZERO)).hasMessageContaining("limit").hasMessageContaining("PT0S");
		assertThatThrownBy(() -> p.window(Duration.ofMillis(10))).hasMessageContaining("window")
				.hasMessageContaining("PT0.01S");
		assertThatThrownBy(() -> p.minSamples(0)).hasMessageContaining("minSamples").hasMessageContaining("0");
	}
}
