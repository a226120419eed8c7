package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;
import java.util.function.Supplier;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.testing.ManualClock;
import dev.aiguard.testing.RecordingMetrics;

class CircuitBreakerTest {

	private static final long FAST = Duration.ofMillis(100).toNanos();

	private final ManualClock clock = new ManualClock(1_000_000_000L);
	private final RecordingMetrics metrics = new RecordingMetrics();
	private final List<BreakerEvent> events = new CopyOnWriteArrayList<>();

	/** Small numbers so every edge is a few calls away; no jitter, no dwell unless a test sets them. */
	private static BreakerConfig.Builder base() {
		return BreakerConfig.custom()
				.failureRateThreshold(0.5)
				.minimumCalls(4)
				.openWait(Duration.ofSeconds(10))
				.openWaitMultiplier(2)
				.maxOpenWait(Duration.ofSeconds(40))
				.openWaitJitter(0)
				.halfOpenProbes(4)
				.successesToClose(2)
				.hysteresis(0.25)
				.minimumDwell(Duration.ZERO)
				.slowTimeToFirstToken(Duration.ofSeconds(1));
	}

	private CircuitBreaker breaker(BreakerConfig config) {
		return CircuitBreaker.builder("llm").config(config).clock(clock).metrics(metrics).listener(events::add)
				.build();
	}

	private static void record(CircuitBreaker breaker, Outcome outcome, int times) {
		for (int i = 0; i < times; i++) {
			BreakerPermit permit = breaker.tryAcquire();
			assertThat(permit).as("permit %d for %s", i, outcome).isNotNull();
			permit.record(outcome, outcome == Outcome.SUCCESS ? FAST : -1);
		}
	}

	private CircuitBreaker tripped(BreakerConfig config) {
		CircuitBreaker breaker = breaker(config);
		record(breaker, Outcome.FAILURE, config.minimumCalls());
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		return breaker;
	}

	private List<BreakerEvent.StateTransition> transitions() {
		return events.stream().filter(e -> e instanceof BreakerEvent.StateTransition)
				.map(e -> (BreakerEvent.StateTransition) e).toList();
	}

	// ------------------------------------------------------------- CLOSED -> OPEN

	@Test
	void tripsWhenFailureRateReachesThresholdExactly() {
		CircuitBreaker breaker = breaker(base().build());
		record(breaker, Outcome.SUCCESS, 2);
		record(breaker, Outcome.FAILURE, 1);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED); // 3 calls < minimumCalls
		record(breaker, Outcome.FAILURE, 1);

		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		BreakerEvent.StateTransition t = transitions().get(0);
		assertThat(t.from()).isEqualTo(BreakerState.CLOSED);
		assertThat(t.to()).isEqualTo(BreakerState.OPEN);
		assertThat(t.reason()).contains("failure rate 0.5");
		assertThat(t.window().calls()).isEqualTo(4);
		assertThat(t.window().failures()).isEqualTo(2);
		assertThat(metrics.transitions()).containsExactly("CLOSED->OPEN");
	}

	@Test
	void staysClosedJustBelowThreshold() {
		CircuitBreaker breaker = breaker(base().minimumCalls(10).build());
		record(breaker, Outcome.SUCCESS, 6);
		record(breaker, Outcome.FAILURE, 5); // 5 / 11 = 0.4545

		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(breaker.failureRate()).isCloseTo(5.0 / 11, org.assertj.core.data.Offset.offset(1e-9));
		record(breaker, Outcome.FAILURE, 1); // 6 / 12 = 0.5
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void doesNotJudgeBelowMinimumCalls() {
		CircuitBreaker breaker = breaker(base().minimumCalls(5).build());
		record(breaker, Outcome.FAILURE, 4);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		record(breaker, Outcome.FAILURE, 1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void slowIsMeasuredOnTimeToFirstTokenFromTheThresholdOn() {
		BreakerConfig config = base().slowCallRateThreshold(0.5).build();
		long threshold = config.slowTimeToFirstToken().toNanos();

		CircuitBreaker justFast = breaker(config);
		for (int i = 0; i < 4; i++) {
			justFast.tryAcquire().record(Outcome.SUCCESS, i % 2 == 0 ? FAST : threshold - 1);
		}
		assertThat(justFast.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(justFast.snapshot().slowCalls()).isZero();

		CircuitBreaker slow = breaker(config);
		for (int i = 0; i < 4; i++) {
			slow.tryAcquire().record(Outcome.SUCCESS, i % 2 == 0 ? FAST : threshold);
		}
		assertThat(slow.snapshot().slowCalls()).isEqualTo(2);
		assertThat(slow.slowCallRate()).isEqualTo(0.5);
		assertThat(slow.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void stallsAndIncompleteStreamsAreFailuresCountedByKind() {
		CircuitBreaker breaker = breaker(base().minimumCalls(100).build());
		record(breaker, Outcome.STALLED, 2);
		record(breaker, Outcome.INCOMPLETE, 3);
		record(breaker, Outcome.FAILURE, 1);
		record(breaker, Outcome.SUCCESS, 4);

		BreakerSnapshot s = breaker.snapshot();
		assertThat(s.calls()).isEqualTo(10);
		assertThat(s.failures()).isEqualTo(6);
		assertThat(s.stalls()).isEqualTo(2);
		assertThat(s.incomplete()).isEqualTo(3);
		assertThat(s.failureRate()).isEqualTo(0.6);
	}

	@Test
	void clientErrorsAreIgnoredByDefault() {
		CircuitBreaker breaker = breaker(base().build());
		record(breaker, Outcome.CLIENT_ERROR, 10);
		assertThat(breaker.snapshot().calls()).isZero();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void clientErrorsCountAsFailuresWhenConfigured() {
		CircuitBreaker breaker = breaker(base().recordClientErrors(true).build());
		record(breaker, Outcome.CLIENT_ERROR, 4);
		assertThat(breaker.snapshot().failures()).isEqualTo(4);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void cancelledAndRejectedAttemptsRecordNothing() {
		CircuitBreaker breaker = breaker(base().build());
		record(breaker, Outcome.CANCELLED, 5);
		record(breaker, Outcome.REJECTED, 5);
		assertThat(breaker.snapshot().calls()).isZero();
	}

	@Test
	void permitSettlesOnlyOnceFirstCallWins() {
		CircuitBreaker breaker = breaker(base().minimumCalls(1).build());
		BreakerPermit permit = breaker.tryAcquire();
		permit.record(Outcome.SUCCESS, FAST);
		permit.record(Outcome.FAILURE, -1);
		permit.record(Outcome.SUCCESS, FAST);

		assertThat(breaker.snapshot().calls()).isEqualTo(1);
		assertThat(breaker.snapshot().failures()).isZero();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void permitRejectsNullOutcomeWithoutSettling() {
		CircuitBreaker breaker = breaker(base().build());
		BreakerPermit permit = breaker.tryAcquire();
		assertThatThrownBy(() -> permit.record(null, 0)).isInstanceOf(NullPointerException.class)
				.hasMessageContaining("outcome");
		permit.record(Outcome.SUCCESS, FAST);
		assertThat(breaker.snapshot().calls()).isEqualTo(1);
	}

	// ------------------------------------------------------------- caller's timestamps

	@Test
	void callsThatBringTheirTimeNeverReadTheBreakersClock() {
		AtomicInteger reads = new AtomicInteger();
		BreakerConfig config = base().build(); // time window: it needs a time for every call
		CircuitBreaker breaker = CircuitBreaker.builder("llm").config(config).metrics(metrics)
				.listener(events::add).clock(() -> {
					reads.incrementAndGet();
					return clock.nanoTime();
				}).build();
		reads.set(0);
		long now = clock.nanoTime();

		for (int i = 0; i < 4; i++) {
			breaker.tryAcquire(now).record(Outcome.FAILURE, -1, now); // trips on the 4th
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(breaker.tryAcquire(now + 1)).isNull();
		long probeTime = now + config.openWait().toNanos();
		for (int i = 0; i < 2; i++) {
			breaker.tryAcquire(probeTime).record(Outcome.SUCCESS, FAST, probeTime);
		}
		assertThat(breaker.tryAcquire(probeTime)).isNotNull(); // two of four probes used: still probing

		assertThat(transitions()).extracting(BreakerEvent.StateTransition::to)
				.containsExactly(BreakerState.OPEN, BreakerState.HALF_OPEN);
		assertThat(events).anySatisfy(e -> assertThat(e).isInstanceOfSatisfying(BreakerEvent.CallRejected.class,
				r -> assertThat(r.nanoTime()).isEqualTo(now + 1)));
		assertThat(reads).as("clock reads").hasValue(0);
	}

	@Test
	void theOpenWaitIsMeasuredAgainstTheGivenTime() {
		CircuitBreaker breaker = tripped(base().build());
		long trippedAt = clock.nanoTime();
		long wait = Duration.ofSeconds(10).toNanos();

		assertThat(breaker.tryAcquire(trippedAt + wait - 1)).isNull();
		assertThat(breaker.tryAcquire(trippedAt + wait)).isNotNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		assertThat(transitions().get(1).nanoTime()).isEqualTo(trippedAt + wait);
	}

	@Test
	void aTimestampedRecordLandsInTheBucketOfItsTime() {
		CircuitBreaker breaker = breaker(base().minimumCalls(100).timeWindow(3, Duration.ofSeconds(1)).build());
		long start = clock.nanoTime();
		long second = Duration.ofSeconds(1).toNanos();
		breaker.tryAcquire(start).record(Outcome.FAILURE, -1, start);
		breaker.tryAcquire(start).record(Outcome.SUCCESS, FAST, start + 2 * second);
		assertThat(breaker.snapshot().calls()).isEqualTo(2);

		// three seconds on by the caller's time: the failure's bucket slides out, the success stays
		breaker.tryAcquire(start).record(Outcome.SUCCESS, FAST, start + 3 * second);
		assertThat(breaker.snapshot().calls()).isEqualTo(2);
		assertThat(breaker.snapshot().failures()).isZero();

		// a time older than the window is dropped, and corrupts nothing
		breaker.tryAcquire(start).record(Outcome.FAILURE, -1, start);
		assertThat(breaker.snapshot().calls()).isEqualTo(2);
		assertThat(breaker.snapshot().failures()).isZero();
	}

	@Test
	void aTimestampedPermitSettlesOnlyOnceWhicheverFormComesFirst() {
		CircuitBreaker breaker = breaker(base().minimumCalls(1).build());
		long now = clock.nanoTime();
		BreakerPermit permit = breaker.tryAcquire(now);
		permit.record(Outcome.SUCCESS, FAST, now);
		permit.record(Outcome.FAILURE, -1, now);
		permit.record(Outcome.FAILURE, -1);

		BreakerPermit other = breaker.tryAcquire();
		other.record(Outcome.SUCCESS, FAST);
		other.record(Outcome.FAILURE, -1, now);

		assertThat(breaker.snapshot().calls()).isEqualTo(2);
		assertThat(breaker.snapshot().failures()).isZero();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void aPermitOfYourOwnIgnoresTheTimestampByDefault() {
		List<String> seen = new CopyOnWriteArrayList<>();
		BreakerPermit own = (outcome, ttft) -> seen.add(outcome + " " + ttft);
		own.record(Outcome.STALLED, 42, 1_000_000L);
		assertThat(seen).containsExactly("STALLED 42");
	}

	@Test
	void aProbeTakenWithATimestampStillGivesItsSlotBackOnCancel() {
		CircuitBreaker breaker = halfOpen(base().halfOpenProbes(1).successesToClose(1).build());
		long now = clock.nanoTime();
		BreakerPermit probe = breaker.tryAcquire(now);
		assertThat(breaker.tryAcquire(now)).isNull();
		probe.record(Outcome.CANCELLED, -1, now);
		probe.record(Outcome.SUCCESS, FAST, now); // settled already: ignored
		assertThat(BreakerPhase.field(breaker.phase().probes, BreakerPhase.CALLS)).isZero();
		assertThat(breaker.tryAcquire(now)).isNotNull();
	}

	// ------------------------------------------------------------- OPEN

	@Test
	void openRefusesUntilTheWaitHasPassedThenHalfOpensLazily() {
		CircuitBreaker breaker = tripped(base().build());
		clock.advanceNanos(Duration.ofSeconds(10).toNanos() - 1);

		assertThat(breaker.tryAcquire()).isNull();
		assertThat(breaker.rejectedCalls()).isEqualTo(1);
		assertThat(metrics.breakerRejections()).isEqualTo(1);
		assertThat(events).anySatisfy(e -> assertThat(e).isInstanceOfSatisfying(BreakerEvent.CallRejected.class,
				r -> assertThat(r.state()).isEqualTo(BreakerState.OPEN)));
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);

		clock.advanceNanos(1);
		assertThat(breaker.state()).as("lazy: nothing happens without a call").isEqualTo(BreakerState.OPEN);
		assertThat(breaker.tryAcquire()).isNotNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		assertThat(metrics.transitions()).containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN");
	}

	// ------------------------------------------------------------- HALF_OPEN

	private CircuitBreaker halfOpen(BreakerConfig config) {
		CircuitBreaker breaker = tripped(config);
		clock.advance(config.openWait());
		return breaker;
	}

	@Test
	void halfOpenLetsThroughAtMostTheConfiguredProbesAndACancelGivesOneBack() {
		CircuitBreaker breaker = halfOpen(base().build());
		BreakerPermit[] probes = new BreakerPermit[4];
		for (int i = 0; i < 4; i++) {
			probes[i] = breaker.tryAcquire();
			assertThat(probes[i]).isNotNull();
		}
		assertThat(breaker.tryAcquire()).isNull();

		probes[0].record(Outcome.CANCELLED, -1);
		BreakerPermit again = breaker.tryAcquire();
		assertThat(again).isNotNull();
		assertThat(breaker.tryAcquire()).isNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
	}

	@Test
	void ignoredClientErrorInHalfOpenGivesTheSlotBack() {
		CircuitBreaker breaker = halfOpen(base().halfOpenProbes(2).successesToClose(1).build());
		BreakerPermit a = breaker.tryAcquire();
		breaker.tryAcquire();
		assertThat(breaker.tryAcquire()).isNull();
		a.record(Outcome.CLIENT_ERROR, -1);
		assertThat(breaker.tryAcquire()).isNotNull();
	}

	@Test
	void halfOpenClosesAfterEnoughHealthyProbesWithAFreshWindow() {
		CircuitBreaker breaker = halfOpen(base().build());
		record(breaker, Outcome.SUCCESS, 2);
		// 2 of 4 healthy is enough successes, but 2 more failures would make 0.5: not decided yet
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		record(breaker, Outcome.SUCCESS, 1); // even a failing 4th probe leaves 0.25 < 0.375

		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(breaker.snapshot().calls()).isZero();
		BreakerEvent.StateTransition close = transitions().get(transitions().size() - 1);
		assertThat(close.from()).isEqualTo(BreakerState.HALF_OPEN);
		assertThat(close.reason()).contains("3 of 3 probes healthy");
		assertThat(close.window().calls()).as("the event shows the window before the reset").isEqualTo(7);
	}

	@Test
	void slowProbesAreNotHealthy() {
		CircuitBreaker breaker = halfOpen(base().build());
		for (int i = 0; i < 2; i++) {
			breaker.tryAcquire().record(Outcome.SUCCESS, Duration.ofSeconds(2).toNanos());
		}
		// slow-call rate 1.0 reaches its threshold: re-open, though nothing failed
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void probesExactlyOnTheLowerBandDoNotClose() {
		// threshold 0.5, hysteresis 0.25: closing needs a probe failure rate below 0.375
		CircuitBreaker breaker = halfOpen(base().halfOpenProbes(8).successesToClose(5).build());
		Outcome[] probes = { Outcome.SUCCESS, Outcome.SUCCESS, Outcome.FAILURE, Outcome.SUCCESS, Outcome.FAILURE,
				Outcome.SUCCESS, Outcome.FAILURE, Outcome.SUCCESS };
		for (Outcome o : probes) {
			breaker.tryAcquire().record(o, o == Outcome.SUCCESS ? FAST : -1);
		}
		// 5 healthy, 3 failed: 0.375 is not below the band; every probe used, so it re-opens
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(transitions().get(transitions().size() - 1).reason()).contains("all 8 probes used");
	}

	@Test
	void probesJustBelowTheLowerBandClose() {
		CircuitBreaker breaker = halfOpen(base().halfOpenProbes(8).successesToClose(5).build());
		Outcome[] probes = { Outcome.SUCCESS, Outcome.SUCCESS, Outcome.FAILURE, Outcome.SUCCESS, Outcome.FAILURE,
				Outcome.SUCCESS, Outcome.SUCCESS };
		for (Outcome o : probes) {
			breaker.tryAcquire().record(o, o == Outcome.SUCCESS ? FAST : -1);
		}
		assertThat(breaker.state()).as("a failing 8th probe would make 3 / 8").isEqualTo(BreakerState.HALF_OPEN);
		breaker.tryAcquire().record(Outcome.SUCCESS, FAST);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED); // 2 / 8 = 0.25
	}

	@Test
	void probesBetweenTheBandsKeepProbing() {
		CircuitBreaker breaker = halfOpen(base().halfOpenProbes(10).successesToClose(5).build());
		Outcome[] probes = { Outcome.SUCCESS, Outcome.SUCCESS, Outcome.FAILURE, Outcome.SUCCESS, Outcome.FAILURE,
				Outcome.SUCCESS, Outcome.FAILURE, Outcome.SUCCESS };
		for (Outcome o : probes) {
			breaker.tryAcquire().record(o, o == Outcome.SUCCESS ? FAST : -1);
		}
		// 3 / 8 = 0.375: not healthy enough to close, not bad enough to re-open, probes left
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		breaker.tryAcquire().record(Outcome.SUCCESS, FAST); // 3 / 9, but a failing 10th would make 0.4
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		breaker.tryAcquire().record(Outcome.SUCCESS, FAST); // 3 / 10 = 0.3
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void failingProbesReopenWithADoubledWait() {
		CircuitBreaker breaker = halfOpen(base().build());
		record(breaker, Outcome.FAILURE, 2);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);

		clock.advanceNanos(Duration.ofSeconds(20).toNanos() - 1);
		assertThat(breaker.tryAcquire()).isNull();
		clock.advanceNanos(1);
		assertThat(breaker.tryAcquire()).isNotNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
	}

	@Test
	void untilProbeCountsDownTheOpenWaitThatLastOpenWaitReports() {
		CircuitBreaker breaker = breaker(base().build());
		assertThat(breaker.untilProbe()).isEmpty();
		assertThat(breaker.lastOpenWait()).isZero();
		record(breaker, Outcome.FAILURE, 4);
		assertThat(breaker.untilProbe()).contains(Duration.ofSeconds(10));
		clock.advance(Duration.ofSeconds(4));
		assertThat(breaker.untilProbe()).contains(Duration.ofSeconds(6));
		clock.advance(Duration.ofSeconds(7));
		assertThat(breaker.untilProbe()).as("the wait has passed; the next call probes").contains(Duration.ZERO);
		record(breaker, Outcome.FAILURE, 2);
		assertThat(breaker.untilProbe()).contains(Duration.ofSeconds(20));
		assertThat(breaker.lastOpenWait()).isEqualTo(Duration.ofSeconds(20));
		breaker.transitionToForcedOpen();
		assertThat(breaker.untilProbe()).as("forced open never probes").isEmpty();
		breaker.transitionToClosed();
		assertThat(breaker.lastOpenWait()).isZero();
	}

	@Test
	void nextOpenWaitIsTheWaitTheNextOpenReallyGets() {
		CircuitBreaker breaker = breaker(base().openWaitJitter(0.2).build());
		Duration predicted = breaker.nextOpenWait();
		record(breaker, Outcome.FAILURE, 4);
		assertThat(breaker.lastOpenWait()).as("the first trip").isEqualTo(predicted);
		predicted = breaker.nextOpenWait();
		assertThat(predicted).as("a failed probe doubles the wait, jitter aside").isBetween(Duration.ofSeconds(20),
				Duration.ofSeconds(24));
		clock.advance(breaker.lastOpenWait());
		BreakerPermit probe = breaker.tryAcquire();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		assertThat(breaker.nextOpenWait()).isEqualTo(predicted);
		probe.record(Outcome.FAILURE, -1);
		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(breaker.lastOpenWait()).isEqualTo(predicted);
		breaker.transitionToForcedOpen();
		predicted = breaker.nextOpenWait();
		breaker.transitionToClosed();
		record(breaker, Outcome.FAILURE, 4);
		assertThat(breaker.lastOpenWait()).as("an operator transition starts the streak over").isEqualTo(predicted)
			.isBetween(Duration.ofSeconds(10), Duration.ofSeconds(12));
	}

	@Test
	void consecutiveReopensGrowTheWaitUpToTheCap() {
		CircuitBreaker breaker = tripped(base().build());
		long[] expected = { 10, 20, 40, 40, 40 };
		for (long seconds : expected) {
			assertThat(breaker.phase().openUntil - breaker.phase().enteredAt)
					.isEqualTo(Duration.ofSeconds(seconds).toNanos());
			clock.advance(Duration.ofSeconds(seconds));
			record(breaker, Outcome.FAILURE, 2);
			assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		}
	}

	@Test
	void aTripSoonAfterReclosingContinuesTheStreakButALongHealthyStayEndsIt() {
		CircuitBreaker breaker = halfOpen(base().build());
		record(breaker, Outcome.SUCCESS, 3); // closed after a 10 s wait
		clock.advance(Duration.ofSeconds(9));
		record(breaker, Outcome.FAILURE, 4); // closed 9 s < 10 s: consecutive
		assertThat(breaker.phase().openUntil - breaker.phase().enteredAt)
				.isEqualTo(Duration.ofSeconds(20).toNanos());

		clock.advance(Duration.ofSeconds(20));
		record(breaker, Outcome.SUCCESS, 3); // closed after a 20 s wait
		clock.advance(Duration.ofSeconds(20));
		record(breaker, Outcome.FAILURE, 4); // closed 20 s: earned the short wait back
		assertThat(breaker.phase().openUntil - breaker.phase().enteredAt)
				.isEqualTo(Duration.ofSeconds(10).toNanos());
	}

	@Test
	void undecidedHalfOpenReopensAfterMaxTimeInHalfOpen() {
		CircuitBreaker breaker = halfOpen(base().maxTimeInHalfOpen(Duration.ofSeconds(30)).build());
		BreakerPermit hanging = breaker.tryAcquire();
		assertThat(hanging).isNotNull();
		clock.advanceNanos(Duration.ofSeconds(30).toNanos() - 1);
		assertThat(breaker.tryAcquire()).isNotNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);

		clock.advanceNanos(1);
		assertThat(breaker.tryAcquire()).isNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(transitions().get(transitions().size() - 1).reason()).contains("maxTimeInHalfOpen");
		assertThat(breaker.phase().openUntil - breaker.phase().enteredAt)
				.isEqualTo(Duration.ofSeconds(20).toNanos());

		hanging.record(Outcome.SUCCESS, FAST); // a probe of the old stay settles late: decides nothing
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void countedProbesCloseEarlyOnceNoOutstandingProbeCouldChangeTheResult() {
		CircuitBreaker breaker = halfOpen(base().halfOpenProbes(10).successesToClose(2).build());
		record(breaker, Outcome.SUCCESS, 6);
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN); // 4 failures to come would make 0.4
		record(breaker, Outcome.SUCCESS, 1); // 3 to come: at worst 0.3
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void probesAsAShareOfTrafficLetThroughEveryNth() {
		CircuitBreaker breaker = halfOpen(base().halfOpenProbeRatio(0.25).successesToClose(3).build());
		int admitted = 0;
		StringBuilder pattern = new StringBuilder();
		for (int i = 0; i < 8; i++) {
			BreakerPermit p = breaker.tryAcquire();
			pattern.append(p == null ? '.' : 'P');
			if (p != null) {
				admitted++;
				p.record(Outcome.CANCELLED, -1);
			}
		}
		assertThat(pattern).hasToString("P...P...");
		assertThat(admitted).isEqualTo(2);
	}

	// ------------------------------------------------------------- dwell

	@Test
	void halfOpenWaitsForTheMinimumDwellBeforeClosing() {
		CircuitBreaker breaker = halfOpen(base().minimumDwell(Duration.ofSeconds(5)).build());
		record(breaker, Outcome.SUCCESS, 2);
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		record(breaker, Outcome.SUCCESS, 2);
		assertThat(breaker.tryAcquire()).as("probes used up, close deferred").isNull();

		clock.advance(Duration.ofSeconds(5));
		assertThat(breaker.tryAcquire()).isNotNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void reclosedBreakerCannotTripWithinTheMinimumDwell() {
		CircuitBreaker breaker = halfOpen(base().minimumDwell(Duration.ofSeconds(5)).build());
		record(breaker, Outcome.SUCCESS, 4);
		clock.advance(Duration.ofSeconds(5));
		breaker.tryAcquire().record(Outcome.CANCELLED, -1);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);

		clock.advanceNanos(Duration.ofSeconds(5).toNanos() - 1);
		record(breaker, Outcome.FAILURE, 6);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		clock.advanceNanos(1);
		record(breaker, Outcome.FAILURE, 1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void aNewBreakerHasNoDwell() {
		CircuitBreaker breaker = breaker(base().minimumDwell(Duration.ofSeconds(5)).build());
		record(breaker, Outcome.FAILURE, 4);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	// ------------------------------------------------------------- jitter

	@Test
	void jitterOnlyLengthensTheWaitAndVaries() {
		CircuitBreaker breaker = breaker(base().openWaitJitter(0.5).build());
		BreakerConfig c = breaker.config();
		long base = Duration.ofSeconds(10).toNanos();
		java.util.Set<Long> seen = new java.util.HashSet<>();
		for (long seq = 0; seq < 200; seq++) {
			long wait = breaker.openWaitNanos(c, 0, seq);
			assertThat(wait).isBetween(base, base + base / 2);
			seen.add(wait);
		}
		assertThat(seen).hasSizeGreaterThan(150);
		assertThat(breaker.openWaitNanos(c, 10, 7)).isBetween(Duration.ofSeconds(40).toNanos(),
				Duration.ofSeconds(60).toNanos());
	}

	// ------------------------------------------------------------- operator controls

	@Test
	void forcedOpenRefusesEverythingUntilAnOperatorCloses() {
		CircuitBreaker breaker = breaker(base().build());
		breaker.transitionToForcedOpen();
		clock.advance(Duration.ofHours(1));
		assertThat(breaker.tryAcquire()).isNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.FORCED_OPEN);

		breaker.transitionToClosed();
		assertThat(breaker.tryAcquire()).isNotNull();
		assertThat(transitions()).extracting(BreakerEvent.StateTransition::reason).containsOnly("operator");
	}

	@Test
	void disabledPermitsEverythingAndRecordsNothing() {
		CircuitBreaker breaker = breaker(base().build());
		breaker.transitionToDisabled();
		record(breaker, Outcome.FAILURE, 100);
		assertThat(breaker.state()).isEqualTo(BreakerState.DISABLED);
		assertThat(breaker.snapshot().calls()).isZero();
	}

	@Test
	void operatorCloseResetsTheWindowAndTheStreak() {
		CircuitBreaker breaker = halfOpen(base().build());
		record(breaker, Outcome.FAILURE, 2); // streak 1
		breaker.transitionToClosed();
		assertThat(breaker.snapshot().calls()).isZero();
		record(breaker, Outcome.FAILURE, 4);
		assertThat(breaker.phase().openUntil - breaker.phase().enteredAt)
				.isEqualTo(Duration.ofSeconds(10).toNanos());
	}

	@Test
	void transitionToTheCurrentStateIsANoOp() {
		CircuitBreaker breaker = breaker(base().build());
		breaker.transitionToClosed();
		assertThat(transitions()).isEmpty();
	}

	@Test
	void aPermitFromAnEarlierStayIsCountedButDecidesNothing() {
		CircuitBreaker breaker = breaker(base().minimumCalls(1).build());
		BreakerPermit old = breaker.tryAcquire();
		breaker.transitionToForcedOpen();
		breaker.transitionToClosed();

		old.record(Outcome.FAILURE, -1);
		assertThat(breaker.snapshot().failures()).isEqualTo(1);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	// ------------------------------------------------------------- reconfigure

	@Test
	void reconfigureKeepsTheWindowAndEmitsAnAuditEvent() {
		Instant at = Instant.parse("2025-01-02T03:04:05Z");
		CircuitBreaker breaker = CircuitBreaker.builder("llm").config(base().minimumCalls(10).build()).clock(clock)
				.wallClock(Clock.fixed(at, ZoneOffset.UTC)).listener(events::add).build();
		record(breaker, Outcome.FAILURE, 3);
		BreakerConfig old = breaker.config();
		TripPolicy.Evaluator evaluator = breaker.evaluator();
		BreakerConfig lower = BreakerConfig.from(old).minimumCalls(3).build();

		breaker.reconfigure(lower, "ticket OPS-42: trip sooner");

		assertThat(breaker.config()).isSameAs(lower);
		assertThat(breaker.snapshot().calls()).isEqualTo(3);
		assertThat(breaker.evaluator()).isSameAs(evaluator);
		BreakerEvent.ConfigChanged changed = (BreakerEvent.ConfigChanged) events.get(events.size() - 1);
		assertThat(changed.oldConfig()).isSameAs(old);
		assertThat(changed.newConfig()).isSameAs(lower);
		assertThat(changed.reason()).isEqualTo("ticket OPS-42: trip sooner");
		assertThat(changed.at()).isEqualTo(at);
		assertThat(changed.nanoTime()).isEqualTo(clock.nanoTime());

		record(breaker, Outcome.FAILURE, 1);
		assertThat(breaker.state()).as("new thresholds apply from the next call").isEqualTo(BreakerState.OPEN);
	}

	@Test
	void reconfigureWithAnotherWindowShapeOrPolicyStartsFresh() {
		CircuitBreaker breaker = breaker(base().minimumCalls(10).build());
		record(breaker, Outcome.FAILURE, 3);
		TripPolicy.Evaluator evaluator = breaker.evaluator();

		breaker.reconfigure(BreakerConfig.from(breaker.config()).countWindow(50)
				.tripPolicy(TripPolicy.decayedFailureRate()).build(), "count-based now");

		assertThat(breaker.snapshot().calls()).isZero();
		assertThat(breaker.evaluator()).isNotSameAs(evaluator);
	}

	// ------------------------------------------------------------- metrics and listeners

	@Test
	void metricsSeeTheBreakerItsGaugesAndItsTransitions() {
		CircuitBreaker breaker = breaker(base().minimumCalls(10).build());
		assertThat(metrics.breakerName()).isEqualTo("llm");
		record(breaker, Outcome.FAILURE, 1);
		record(breaker, Outcome.SUCCESS, 3);
		breaker.tryAcquire().record(Outcome.SUCCESS, Duration.ofSeconds(3).toNanos());

		assertThat(metrics.breakerState().get()).isEqualTo(BreakerState.CLOSED);
		assertThat(metrics.failureRate().getAsDouble()).isEqualTo(0.2);
		assertThat(metrics.slowCallRate().getAsDouble()).isEqualTo(0.2);
		breaker.transitionToForcedOpen();
		assertThat(metrics.breakerState().get()).isEqualTo(BreakerState.FORCED_OPEN);
		breaker.tryAcquire();
		assertThat(metrics.breakerRejections()).isEqualTo(1);
		assertThat(metrics.transitions()).containsExactly("CLOSED->FORCED_OPEN");
	}

	@Test
	void aThrowingListenerIsIsolated() {
		List<BreakerEvent> seen = new CopyOnWriteArrayList<>();
		CircuitBreaker breaker = CircuitBreaker.builder("llm").config(base().build()).clock(clock)
				.listener(e -> {
					throw new IllegalStateException("listener bug");
				}).listener(seen::add).build();

		record(breaker, Outcome.FAILURE, 4);
		assertThat(breaker.tryAcquire()).isNull();

		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(seen).hasSize(2);
	}

	@Test
	void throwingMetricsAreIsolated() {
		GuardMetrics broken = new GuardMetrics() {
			@Override
			public void breakerCreated(String breaker, Supplier<Enum<?>> state, DoubleSupplier failureRate,
					DoubleSupplier slowCallRate) {
				throw new IllegalStateException("created");
			}

			@Override
			public void breakerTransition(String breaker, Enum<?> from, Enum<?> to) {
				throw new IllegalStateException("transition");
			}

			@Override
			public void breakerRejected(String breaker) {
				throw new IllegalStateException("rejected");
			}
		};
		CircuitBreaker breaker = CircuitBreaker.builder("llm").config(base().build()).clock(clock).metrics(broken)
				.build();
		record(breaker, Outcome.FAILURE, 4);
		assertThat(breaker.tryAcquire()).isNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(breaker.rejectedCalls()).isEqualTo(1);
	}

	@Test
	void aThrowingTripPolicyIsIsolated() {
		TripPolicy broken = () -> new TripPolicy.Evaluator() {
			@Override
			public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long ttft, boolean slow,
					long now) {
				throw new IllegalStateException("onCall");
			}

			@Override
			public double pressure(WindowCounts window, BreakerConfig config, long now) {
				throw new IllegalStateException("pressure");
			}
		};
		CircuitBreaker breaker = breaker(base().tripPolicy(broken).build());
		record(breaker, Outcome.FAILURE, 10);
		assertThat(breaker.snapshot().failures()).isEqualTo(10);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void removedListenerHearsNothingMore() {
		CircuitBreaker breaker = breaker(base().build());
		List<BreakerEvent> seen = new CopyOnWriteArrayList<>();
		BreakerListener listener = seen::add;
		breaker.addListener(listener);
		assertThat(breaker.removeListener(listener)).isTrue();
		assertThat(breaker.removeListener(listener)).isFalse();
		record(breaker, Outcome.FAILURE, 4);
		assertThat(seen).isEmpty();
		assertThat(events).isNotEmpty();
	}

	@Test
	void builderRejectsABlankName() {
		assertThatThrownBy(() -> CircuitBreaker.builder(" ")).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("name").hasMessageContaining("' '");
	}

	@Test
	void breakerOpenExceptionIsCheapAndNamesTheBreaker() {
		BreakerOpenException e = new BreakerOpenException("llm", BreakerState.OPEN);
		assertThat(e.getStackTrace()).isEmpty();
		assertThat(e.getMessage()).contains("llm").contains("OPEN");
	}
}
