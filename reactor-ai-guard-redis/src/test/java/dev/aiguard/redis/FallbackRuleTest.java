package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import reactor.test.util.RaceTestUtils;

/** The fall-back and return rule alone: facts in, verdict out, no Redis and no clock. */
class FallbackRuleTest {

	private static final long SPAN = Duration.ofMillis(200).toNanos();

	private final FallbackRule rule = new FallbackRule(3, SPAN, 3);

	@Test
	void aBurstOfTimeoutsWithinOneCommandTimeoutIsOneSlowMoment() {
		for (int i = 0; i < 50; i++) {
			assertThat(rule.timedOut(1_000L + i * 1_000_000L)).isFalse(); // 50 timeouts within 50 ms
		}
		assertThat(rule.timeoutsInARow()).isEqualTo(50);
	}

	@Test
	void timeoutsSpreadOverACommandTimeoutMakeRedisCountAsDown() {
		assertThat(rule.timedOut(0L)).isFalse();
		assertThat(rule.timedOut(SPAN)).as("two are not enough").isFalse();
		assertThat(rule.timedOut(SPAN + 1)).as("the third, a command timeout after the first").isTrue();
	}

	@Test
	void manyTimeoutsButNotSpreadAndSpreadButTooFewDoNotCount() {
		FallbackRule five = new FallbackRule(5, SPAN, 1);
		assertThat(five.timedOut(0L)).isFalse();
		assertThat(five.timedOut(10 * SPAN)).as("spread, but two of five").isFalse();
		five.answered();
		for (int i = 0; i < 4; i++) {
			assertThat(five.timedOut(20 * SPAN + i)).isFalse();
		}
		assertThat(five.timedOut(21 * SPAN)).isTrue();
	}

	@Test
	void anAnsweredOperationEndsTheStreak() {
		rule.timedOut(0L);
		rule.timedOut(SPAN / 2);
		rule.answered();
		assertThat(rule.timeoutsInARow()).isZero();
		assertThat(rule.timedOut(SPAN)).isFalse();
		assertThat(rule.timedOut(SPAN + 1)).isFalse();
		assertThat(rule.timedOut(2 * SPAN)).as("three in a row since the answer, a command timeout apart").isTrue();
	}

	@Test
	void theReturnNeedsEnoughAnsweredPingsInARow() {
		assertThat(rule.probeAnswered(false)).isFalse();
		assertThat(rule.probeAnswered(false)).isFalse();
		rule.probeFailed();
		assertThat(rule.probesInARow()).isZero();
		assertThat(rule.probeAnswered(false)).isFalse();
		assertThat(rule.probeAnswered(false)).isFalse();
		assertThat(rule.probeAnswered(false)).isTrue();
	}

	@Test
	void theFirstConnectionNeedsOneAnswer() {
		assertThat(rule.probeAnswered(true)).isTrue();
	}

	@Test
	void aModeChangeStartsBothCountsAgain() {
		rule.timedOut(0L);
		rule.timedOut(1L);
		rule.probeAnswered(false);
		rule.reset();
		assertThat(rule.timeoutsInARow()).isZero();
		assertThat(rule.probesInARow()).isZero();
	}

	@Test
	void concurrentTimeoutsLoseNone() {
		for (int round = 0; round < 200; round++) {
			FallbackRule r = new FallbackRule(1000, SPAN, 1);
			RaceTestUtils.race(() -> r.timedOut(1L), () -> r.timedOut(2L), () -> r.timedOut(3L), () -> r.timedOut(4L));
			assertThat(r.timeoutsInARow()).isEqualTo(4);
		}
	}

	@Test
	void theSettingsRefuseASingleTimeoutRuleAndNamesTheField() {
		assertThatThrownBy(() -> RedisSettings.builder("redis://127.0.0.1:6379").fallbackAfterTimeouts(1))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("fallbackAfterTimeouts must be >= 2 and <= 1000, was 1");
		assertThatThrownBy(() -> RedisSettings.builder("redis://127.0.0.1:6379").sharedAfterProbes(0))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("sharedAfterProbes must be >= 1 and <= 1000, was 0");
		RedisSettings defaults = RedisSettings.of("redis://127.0.0.1:6379");
		assertThat(defaults.fallbackAfterTimeouts()).isEqualTo(3);
		assertThat(defaults.sharedAfterProbes()).isEqualTo(3);
	}
}
