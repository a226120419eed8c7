package dev.aiguard.breaker;

import static dev.aiguard.breaker.PolicyFixtures.counts;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.data.Offset.offset;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import reactor.test.scheduler.VirtualTimeScheduler;

class ExpectedLossPolicyTest {

	private static final long SECOND = 1_000_000_000L;

	/**
	 * docs/breaker.md's worked example: C(failure) = 2000 × 2.50 / 1e6 + 8 s × 0.0005 + 0.003 = 0.012;
	 * C(unavailable) = 60 % cache misses × 0.005 = 0.003; the ratio is 4, so 25 % failures trip.
	 */
	static final ExpectedLossPolicy EXAMPLE = TripPolicy.expectedLoss(0.003).promptTokens(2000)
			.promptPricePerMillion(2.50).waitPricePerSecond(0.0005).failureWait(Duration.ofSeconds(8))
			.failedAnswerCost(0.003);

	private final BreakerConfig config = BreakerConfig.custom().minimumCalls(10).tripPolicy(EXAMPLE).build();

	@Test
	void theWorkedExampleTripsAtAQuarterOfTheCallsFailing() {
		assertThat(EXAMPLE.failureCost()).isCloseTo(0.012, offset(1e-12));
		assertThat(EXAMPLE.tripFailureRate()).isCloseTo(0.25, offset(1e-12));
		TripPolicy.Evaluator e = EXAMPLE.newEvaluator();
		// 20 % failing: 0.2 × 0.012 = 0.0024 < 0.003, keep calling
		assertThat(e.pressure(counts(100, 20, 0), config, 0)).isCloseTo(0.8, offset(1e-9));
		// 25 % failing: the expected loss equals the ladder's cost
		assertThat(e.pressure(counts(100, 25, 0), config, 0)).isCloseTo(1.0, offset(1e-9));
		assertThat(e.pressure(counts(100, 40, 0), config, 0)).isCloseTo(1.6, offset(1e-9));
	}

	@Test
	void belowMinimumCallsItStaysCalmAndSlowCallsDoNotCount() {
		TripPolicy.Evaluator e = EXAMPLE.newEvaluator();
		assertThat(e.pressure(counts(9, 9, 0), config, 0)).isZero();
		assertThat(e.pressure(counts(10, 0, 10), config, 0)).isZero();
		assertThat(e.onCall(counts(10, 0, 10), config, Outcome.SUCCESS, 20 * SECOND, true, 0)).isFalse();
		assertThat(e.onCall(counts(10, 1, 0), config, Outcome.STALLED, -1, false, 0)).isTrue();
	}

	@Test
	void withTheDefaultsItIsAFailureRateThresholdOfTheUnavailableCost() {
		ExpectedLossPolicy plain = TripPolicy.expectedLoss(0.5);
		assertThat(plain.failureCost()).isEqualTo(1.0);
		assertThat(plain.tripFailureRate()).isEqualTo(0.5);
		TripPolicy.Evaluator loss = plain.newEvaluator();
		TripPolicy.Evaluator classic = TripPolicy.failureRate().newEvaluator();
		for (long failures = 0; failures <= 20; failures++) {
			WindowCounts w = counts(20, failures, 0);
			assertThat(loss.pressure(w, config, 0)).isCloseTo(classic.pressure(w, config, 0), offset(1e-12));
		}
	}

	@Test
	void aDearerFailureOrACheaperLadderTripsSooner() {
		assertThat(EXAMPLE.promptTokens(8000).tripFailureRate()).isLessThan(EXAMPLE.tripFailureRate());
		assertThat(EXAMPLE.unavailableCost(0.001).tripFailureRate()).isLessThan(EXAMPLE.tripFailureRate());
		// a ladder dearer than a failed attempt: calling is always the better bet
		assertThat(EXAMPLE.unavailableCost(0.02).newEvaluator().pressure(counts(100, 100, 0), config, 0))
				.isLessThan(1.0);
	}

	@Test
	void itTripsWhereTheDefaultFailureRateDoesNotAndClosesOnlyBelowTheLowerRatio() {
		VirtualTimeScheduler time = VirtualTimeScheduler.create();
		BreakerConfig.Builder common = BreakerConfig.custom().minimumCalls(20).openWait(Duration.ofSeconds(10))
				.openWaitJitter(0).halfOpenProbes(10).successesToClose(5).minimumDwell(Duration.ZERO);
		CircuitBreaker loss = CircuitBreaker.builder("loss").config(common.tripPolicy(EXAMPLE).build())
				.clock(() -> time.now(TimeUnit.NANOSECONDS)).build();
		CircuitBreaker classic = CircuitBreaker.builder("classic")
				.config(common.tripPolicy(TripPolicy.failureRate()).build())
				.clock(() -> time.now(TimeUnit.NANOSECONDS)).build();

		// 30 % of the calls fail: above the 25 % the costs allow, below the classic 50 %
		for (int i = 0; i < 40; i++) {
			Outcome outcome = i % 10 < 3 ? Outcome.FAILURE : Outcome.SUCCESS;
			BreakerPermit permit = loss.tryAcquire(); // refused once it has tripped
			if (permit != null) {
				permit.record(outcome, -1L);
			}
			record(classic, outcome);
			time.advanceTimeBy(Duration.ofMillis(250));
		}
		assertThat(loss.state()).isEqualTo(BreakerState.OPEN);
		assertThat(classic.state()).isEqualTo(BreakerState.CLOSED);

		// the probes fail 20 %: below the trip ratio (0.8) but not below 1 - hysteresis (0.8), so it re-opens
		time.advanceTimeBy(Duration.ofSeconds(10));
		probe(loss, "ssssssssff", time);
		assertThat(loss.state()).isEqualTo(BreakerState.OPEN);

		// after the longer wait, 10 % failing probes (ratio 0.4) close it
		assertThat(loss.lastOpenWait()).isGreaterThan(Duration.ofSeconds(10));
		time.advanceTimeBy(loss.untilProbe().orElseThrow());
		probe(loss, "fsssssssss", time);
		assertThat(loss.state()).isEqualTo(BreakerState.CLOSED);
	}

	/** Half-open probes, one per letter: {@code f} fails, {@code s} succeeds. */
	private static void probe(CircuitBreaker breaker, String outcomes, VirtualTimeScheduler time) {
		for (char c : outcomes.toCharArray()) {
			BreakerPermit permit = breaker.tryAcquire();
			assertThat(permit).isNotNull();
			assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
			permit.record(c == 'f' ? Outcome.FAILURE : Outcome.SUCCESS, c == 'f' ? -1L : 300_000_000L);
			time.advanceTimeBy(Duration.ofMillis(10));
		}
	}

	private static void record(CircuitBreaker breaker, Outcome outcome) {
		BreakerPermit permit = breaker.tryAcquire();
		assertThat(permit).as("a permit from %s", breaker.name()).isNotNull();
		permit.record(outcome, outcome == Outcome.SUCCESS ? 300_000_000L : -1L);
	}

	@Test
	void forecastByPredictiveItTripsOnARisingFailureRateBeforeTheCostsCross() {
		PredictivePolicy.HoltEvaluator e = (PredictivePolicy.HoltEvaluator) TripPolicy.predictive(EXAMPLE)
				.newEvaluator();
		double rate = 0;
		for (int s = 0; s < 6; s++) {
			rate = 0.14 + 0.01 * s; // 14 % → 19 %: the ratio rises from 0.56 to 0.76
			e.onCall(counts(1000, Math.round(rate * 1000), 0), config, Outcome.FAILURE, -1, false, s * SECOND);
		}
		WindowCounts now = counts(1000, Math.round(rate * 1000), 0);
		assertThat(EXAMPLE.newEvaluator().pressure(now, config, 5 * SECOND)).isLessThan(1.0);
		assertThat(e.pressure(now, config, 5 * SECOND)).isGreaterThanOrEqualTo(1.0);
		// the probes are judged by the expected-loss ratio, not the classic rates
		assertThat(e.probePressure(10, 2, 0, config)).isCloseTo(0.8, offset(1e-9));
	}

	@Test
	void combinedWithTheClassicRuleTheProbesMustSatisfyBoth() {
		TripPolicy.Evaluator any = TripPolicy.anyOf(TripPolicy.failureRate(), EXAMPLE).newEvaluator();
		BreakerConfig c = BreakerConfig.custom().slowCallRateThreshold(0.5).build();
		// 1 of 10 failing: loss ratio 0.4, classic 0.2; 4 of 10 slow: classic 0.8
		assertThat(ProbePressure.of(any, 10, 1, 0, c)).isCloseTo(0.4, offset(1e-9));
		assertThat(ProbePressure.of(any, 10, 1, 4, c)).isCloseTo(0.8, offset(1e-9));
		// without an expected-loss policy inside, anyOf judges probes by the classic rates as before
		TripPolicy.Evaluator latency = TripPolicy.anyOf(TripPolicy.adaptiveTtft(), TripPolicy.decayedFailureRate())
				.newEvaluator();
		assertThat(ProbePressure.of(latency, 10, 3, 0, c)).isEqualTo(FailureRatePolicy.ratePressure(10, 3, 0, c));
	}

	@Test
	void badSettingsNameTheField() {
		assertThatThrownBy(() -> TripPolicy.expectedLoss(0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("unavailableCost").hasMessageContaining("0.0");
		assertThatThrownBy(() -> EXAMPLE.promptTokens(-1)).hasMessageContaining("promptTokens");
		assertThatThrownBy(() -> EXAMPLE.promptPricePerMillion(Double.NaN)).hasMessageContaining("promptPricePerMillion");
		assertThatThrownBy(() -> EXAMPLE.waitPricePerSecond(-0.1)).hasMessageContaining("waitPricePerSecond");
		assertThatThrownBy(() -> EXAMPLE.failureWait(Duration.ofSeconds(-1))).hasMessageContaining("failureWait");
		assertThatThrownBy(() -> EXAMPLE.failedAnswerCost(Double.POSITIVE_INFINITY))
				.hasMessageContaining("failedAnswerCost");
	}

	@Test
	void aFailureThatCostsNothingFailsAtBuildWhereverThePolicySits() {
		ExpectedLossPolicy free = TripPolicy.expectedLoss(0.01).failedAnswerCost(0);
		for (TripPolicy p : new TripPolicy[] { free, TripPolicy.predictive(free),
				TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.predictive(free)) }) {
			BreakerConfig.Builder b = BreakerConfig.custom().tripPolicy(p);
			assertThatThrownBy(b::build).isInstanceOf(IllegalArgumentException.class)
					.hasMessageContaining("tripPolicy.failedAnswerCost");
		}
		// any one priced part is enough
		BreakerConfig.custom().tripPolicy(free.waitPricePerSecond(0.001)).build();
	}

	@Test
	void equalPoliciesKeepTheirEvaluatorOnReconfiguration() {
		ExpectedLossPolicy same = TripPolicy.expectedLoss(0.003).failedAnswerCost(0.003).failureWait(Duration.ofSeconds(8))
				.waitPricePerSecond(0.0005).promptPricePerMillion(2.50).promptTokens(2000);
		assertThat(same).isEqualTo(EXAMPLE).hasSameHashCodeAs(EXAMPLE);
		assertThat(same.unavailableCost(0.004)).isNotEqualTo(EXAMPLE);
		assertThat(EXAMPLE.toString()).contains("unavailableCost=0.003");
	}
}
