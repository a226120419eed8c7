package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.testing.ManualClock;
import dev.aiguard.testing.RecordingMetrics;

/** {@link CircuitBreaker#transitionToOpen(Duration, String)} and {@link CircuitBreaker#transitionToClosed(String)}. */
class CircuitBreakerPeerTransitionTest {

	private final ManualClock clock = new ManualClock(1_000_000_000L);
	private final RecordingMetrics metrics = new RecordingMetrics();
	private final List<BreakerEvent> events = new CopyOnWriteArrayList<>();

	private static BreakerConfig.Builder base() {
		return BreakerConfig.custom()
				.failureRateThreshold(0.5)
				.minimumCalls(4)
				.openWait(Duration.ofSeconds(10))
				.openWaitMultiplier(2)
				.maxOpenWait(Duration.ofSeconds(40))
				.openWaitJitter(0)
				.halfOpenProbes(2)
				.successesToClose(2)
				.hysteresis(0)
				.minimumDwell(Duration.ZERO);
	}

	private CircuitBreaker breaker(BreakerConfig config) {
		return CircuitBreaker.builder("llm").config(config).clock(clock).metrics(metrics).listener(events::add)
				.build();
	}

	private List<BreakerEvent.StateTransition> transitions() {
		return events.stream().filter(e -> e instanceof BreakerEvent.StateTransition)
				.map(e -> (BreakerEvent.StateTransition) e).toList();
	}

	private static void record(CircuitBreaker breaker, Outcome outcome, int times) {
		for (int i = 0; i < times; i++) {
			BreakerPermit permit = breaker.tryAcquire();
			assertThat(permit).as("permit %d", i).isNotNull();
			permit.record(outcome, outcome == Outcome.SUCCESS ? 1_000 : -1);
		}
	}

	@Test
	void opensAClosedBreakerForTheGivenWaitThenProbes() {
		CircuitBreaker breaker = breaker(base().build());

		assertThat(breaker.transitionToOpen(Duration.ofSeconds(3), "peer b: failure rate 0.6 >= 0.5")).isTrue();

		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(breaker.tryAcquire()).isNull();
		assertThat(breaker.untilProbe()).contains(Duration.ofSeconds(3));
		assertThat(breaker.lastOpenWait()).isEqualTo(Duration.ofSeconds(3));
		BreakerEvent.StateTransition t = transitions().get(0);
		assertThat(t.from()).isEqualTo(BreakerState.CLOSED);
		assertThat(t.to()).isEqualTo(BreakerState.OPEN);
		assertThat(t.reason()).isEqualTo("peer b: failure rate 0.6 >= 0.5");
		assertThat(metrics.transitions()).containsExactly("CLOSED->OPEN");

		clock.advance(Duration.ofMillis(2_999));
		assertThat(breaker.tryAcquire()).isNull();
		clock.advance(Duration.ofMillis(1));
		assertThat(breaker.tryAcquire()).isNotNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
	}

	@Test
	void anOpenBreakerStartsANewStayWithTheGivenWait() {
		CircuitBreaker breaker = breaker(base().build());
		record(breaker, Outcome.FAILURE, 4);
		clock.advance(Duration.ofSeconds(9));

		assertThat(breaker.transitionToOpen(Duration.ofSeconds(5), "peer re-opened")).isTrue();

		assertThat(breaker.untilProbe()).contains(Duration.ofSeconds(5));
		assertThat(transitions()).extracting(t -> t.from() + "->" + t.to()).containsExactly("CLOSED->OPEN",
				"OPEN->OPEN");
		clock.advance(Duration.ofSeconds(4));
		assertThat(breaker.tryAcquire()).as("the peer's wait, not the breaker's own, decides").isNull();
	}

	@Test
	void fromHalfOpenTheStreakGrowsAsOnARealReopen() {
		CircuitBreaker breaker = breaker(base().build());
		record(breaker, Outcome.FAILURE, 4);
		clock.advance(Duration.ofSeconds(10));
		assertThat(breaker.tryAcquire()).isNotNull(); // HALF_OPEN, one probe outstanding

		breaker.transitionToOpen(Duration.ofSeconds(1), "peer probes failed");
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		clock.advance(Duration.ofSeconds(1));
		record(breaker, Outcome.FAILURE, 2); // probes fail: a re-open on the grown streak

		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(breaker.lastOpenWait()).as("10 s × 2^2: the peer's re-open counted in the streak")
				.isEqualTo(Duration.ofSeconds(40));
	}

	@Test
	void leavesOperatorStatesAlone() {
		CircuitBreaker forced = breaker(base().build());
		forced.transitionToForcedOpen();
		assertThat(forced.transitionToOpen(Duration.ofSeconds(1), "peer")).isFalse();
		assertThat(forced.transitionToClosed("peer")).isFalse();
		assertThat(forced.state()).isEqualTo(BreakerState.FORCED_OPEN);

		CircuitBreaker disabled = breaker(base().build());
		disabled.transitionToDisabled();
		assertThat(disabled.transitionToOpen(Duration.ofSeconds(1), "peer")).isFalse();
		assertThat(disabled.state()).isEqualTo(BreakerState.DISABLED);
		assertThat(transitions()).extracting(BreakerEvent.StateTransition::reason).containsOnly("operator");
	}

	@Test
	void rejectsANegativeWaitNamingIt() {
		CircuitBreaker breaker = breaker(base().build());
		assertThatThrownBy(() -> breaker.transitionToOpen(Duration.ofMillis(-1), "peer"))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("wait").hasMessageContaining("-0.001");
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void aHugeWaitSaturatesInsteadOfOverflowing() {
		CircuitBreaker breaker = breaker(base().build());
		breaker.transitionToOpen(Duration.ofSeconds(Long.MAX_VALUE), "peer");
		clock.advance(Duration.ofDays(365 * 50)); // a wait that overflowed would have passed long ago
		assertThat(breaker.tryAcquire()).isNull();
	}

	@Test
	void closesAnOpenOrHalfOpenBreakerWithAFreshWindow() {
		CircuitBreaker open = breaker(base().build());
		record(open, Outcome.FAILURE, 4);
		assertThat(open.transitionToClosed("peer b: 2 of 2 probes healthy")).isTrue();
		assertThat(open.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(open.snapshot().calls()).isZero();
		assertThat(transitions().get(transitions().size() - 1).reason()).isEqualTo("peer b: 2 of 2 probes healthy");

		CircuitBreaker halfOpen = breaker(base().build());
		record(halfOpen, Outcome.FAILURE, 4);
		clock.advance(Duration.ofSeconds(10));
		assertThat(halfOpen.tryAcquire()).isNotNull();
		assertThat(halfOpen.state()).isEqualTo(BreakerState.HALF_OPEN);
		assertThat(halfOpen.transitionToClosed("peer")).isTrue();
		assertThat(halfOpen.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void closingAClosedBreakerDoesNothing() {
		CircuitBreaker breaker = breaker(base().build());
		assertThat(breaker.transitionToClosed("peer")).isFalse();
		assertThat(transitions()).isEmpty();
	}

	@Test
	void aTripSoonAfterAPeerCloseContinuesTheStreak() {
		CircuitBreaker breaker = breaker(base().build());
		record(breaker, Outcome.FAILURE, 4); // 10 s wait
		breaker.transitionToClosed("peer");
		record(breaker, Outcome.FAILURE, 4); // within the last wait: streak 1
		assertThat(breaker.lastOpenWait()).isEqualTo(Duration.ofSeconds(20));
	}
}
