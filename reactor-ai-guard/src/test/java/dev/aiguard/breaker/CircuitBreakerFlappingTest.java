package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.testing.ManualClock;

/**
 * Load hovering at the threshold must not flap the breaker: a failure rate oscillating ±5 % around
 * the 50 % threshold for 10 simulated minutes causes at most 2 transitions in any minute with the
 * default config (hysteresis, dwell, growing open wait). The same traffic without those measures does
 * flap, so the check can fail.
 */
class CircuitBreakerFlappingTest {

	private static final long MINUTE = Duration.ofMinutes(1).toNanos();
	private static final long STEP = Duration.ofMillis(100).toNanos(); // 10 calls per second
	private static final long FAST = Duration.ofMillis(300).toNanos();

	/**
	 * Drives 10 minutes of traffic whose failure rate is {@code 0.5 + 0.05·sin(2πt/period + phase)}.
	 * Failures are spread by error diffusion over the calls actually made, so every run of calls has the
	 * rate of its moment to within one call: no luck either way.
	 *
	 * @return the times of the transitions
	 */
	private static List<Long> simulate(BreakerConfig config, Duration period, double phase) {
		ManualClock clock = new ManualClock();
		List<Long> transitions = new ArrayList<>();
		CircuitBreaker breaker = CircuitBreaker.builder("flap").config(config).clock(clock).listener(e -> {
			if (e instanceof BreakerEvent.StateTransition t) {
				transitions.add(t.nanoTime());
			}
		}).build();
		double debt = 0;
		for (long t = 0; t < 10 * MINUTE; t += STEP) {
			clock.set(t);
			BreakerPermit permit = breaker.tryAcquire();
			if (permit == null) {
				continue;
			}
			double rate = 0.5 + 0.05 * Math.sin(2 * Math.PI * t / period.toNanos() + phase);
			debt += rate;
			if (debt >= 1) {
				debt -= 1;
				permit.record(Outcome.FAILURE, -1);
			}
			else {
				permit.record(Outcome.SUCCESS, FAST);
			}
		}
		return transitions;
	}

	private static int mostInAnyMinute(List<Long> times) {
		int most = 0;
		for (int i = 0; i < times.size(); i++) {
			int inMinute = 0;
			for (int j = i; j < times.size() && times.get(j) - times.get(i) < MINUTE; j++) {
				inMinute++;
			}
			most = Math.max(most, inMinute);
		}
		return most;
	}

	@Test
	void aFailureRateHoveringAtTheThresholdCausesAtMostTwoTransitionsPerMinute() {
		for (Duration period : new Duration[] { Duration.ofSeconds(20), Duration.ofSeconds(60),
				Duration.ofSeconds(180) }) {
			for (double phase = 0; phase < 2 * Math.PI; phase += Math.PI / 2) {
				List<Long> transitions = simulate(BreakerConfig.defaults(), period, phase);

				assertThat(transitions).as("period %s phase %.2f: the rate does reach the threshold", period, phase)
						.isNotEmpty();
				assertThat(mostInAnyMinute(transitions))
						.as("period %s phase %.2f, transitions at %s", period, phase, transitions)
						.isLessThanOrEqualTo(2);
			}
		}
	}

	@Test
	void withoutHysteresisDwellAndGrowthTheSameTrafficFlaps() {
		BreakerConfig naive = BreakerConfig.custom().hysteresis(0).minimumDwell(Duration.ZERO).openWaitMultiplier(1)
				.openWait(Duration.ofSeconds(5)).openWaitJitter(0).build();
		int worst = 0;
		for (double phase = 0; phase < 2 * Math.PI; phase += Math.PI / 2) {
			worst = Math.max(worst, mostInAnyMinute(simulate(naive, Duration.ofSeconds(60), phase)));
		}
		assertThat(worst).isGreaterThan(2);
	}
}
