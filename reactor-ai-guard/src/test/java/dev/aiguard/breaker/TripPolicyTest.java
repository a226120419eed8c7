package dev.aiguard.breaker;

import static dev.aiguard.breaker.PolicyFixtures.counts;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.testing.ManualClock;

class TripPolicyTest {

	@Test
	void anyOfTakesTheHighestPressureAndJudgesWhenAnyAsks() {
		BreakerConfig config = BreakerConfig.custom().failureRateThreshold(0.5).minimumCalls(1).build();
		TripPolicy fixed = () -> new TripPolicy.Evaluator() {
			@Override
			public boolean onCall(WindowCounts w, BreakerConfig c, Outcome o, long ttft, boolean slow, long now) {
				return true;
			}

			@Override
			public double pressure(WindowCounts w, BreakerConfig c, long now) {
				return 0.7;
			}
		};
		TripPolicy.Evaluator any = TripPolicy.anyOf(TripPolicy.failureRate(), fixed).newEvaluator();

		assertThat(any.pressure(counts(10, 2, 0), config, 0)).isEqualTo(0.7);
		assertThat(any.pressure(counts(10, 6, 0), config, 0)).isEqualTo(1.2);
		assertThat(any.onCall(counts(10, 0, 0), config, Outcome.SUCCESS, 1, false, 0)).isTrue();
	}

	@Test
	void anyOfAnswersTheClassicRuleInlineAndStillCallsTheOthers() {
		BreakerConfig config = BreakerConfig.custom().failureRateThreshold(0.5).minimumCalls(1).build();
		int[] seen = new int[1];
		TripPolicy counting = () -> new TripPolicy.Evaluator() {
			@Override
			public boolean onCall(WindowCounts w, BreakerConfig c, Outcome o, long ttft, boolean slow, long now) {
				seen[0]++;
				return false;
			}

			@Override
			public double pressure(WindowCounts w, BreakerConfig c, long now) {
				return 0;
			}
		};
		TripPolicy.Evaluator withClassic = TripPolicy.anyOf(TripPolicy.failureRate(), counting).newEvaluator();
		TripPolicy.Evaluator without = TripPolicy.anyOf(counting, counting).newEvaluator();

		// the classic rule asks for judging after a failure or a slow call, never after a plain success
		assertThat(withClassic.onCall(counts(10, 0, 0), config, Outcome.SUCCESS, 1, false, 0)).isFalse();
		assertThat(withClassic.onCall(counts(10, 1, 0), config, Outcome.FAILURE, -1, false, 0)).isTrue();
		assertThat(withClassic.onCall(counts(10, 0, 1), config, Outcome.SUCCESS, 1, true, 0)).isTrue();
		assertThat(without.onCall(counts(10, 1, 0), config, Outcome.FAILURE, -1, false, 0)).isFalse();
		assertThat(seen[0]).as("every other policy still sees every call").isEqualTo(5);
		assertThat(withClassic.pressure(counts(10, 6, 0), config, 0)).isEqualTo(1.2);
	}

	@Test
	void anyOfNeedsPoliciesAndComparesByValue() {
		assertThatThrownBy(TripPolicy::anyOf).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("anyOf");
		assertThat(TripPolicy.anyOf(TripPolicy.failureRate())).isSameAs(TripPolicy.failureRate());
		assertThat(TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.adaptiveTtft()))
				.isEqualTo(TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.adaptiveTtft()));
	}

	@Test
	void aBreakerTripsOnAnAdaptiveLatencyPolicyWithoutAnyFailure() {
		ManualClock clock = new ManualClock();
		BreakerConfig config = BreakerConfig.custom().minimumCalls(5)
				.tripPolicy(TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.adaptiveTtft().minSamples(10)))
				.build();
		CircuitBreaker breaker = CircuitBreaker.builder("latency").config(config).clock(clock).build();
		for (int period = 0; period < 3; period++) {
			for (int i = 0; i < 20; i++) {
				breaker.tryAcquire().record(Outcome.SUCCESS, Duration.ofMillis(300).toNanos());
			}
			clock.advance(Duration.ofSeconds(10));
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		for (int i = 0; i < 20 && breaker.state() == BreakerState.CLOSED; i++) {
			breaker.tryAcquire().record(Outcome.SUCCESS, Duration.ofMillis(2000).toNanos());
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(breaker.snapshot().failures()).isZero();
	}
}
