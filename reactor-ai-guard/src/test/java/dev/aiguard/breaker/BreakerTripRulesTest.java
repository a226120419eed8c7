package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.testing.ManualClock;
import dev.aiguard.testing.RecordingMetrics;

/**
 * The rules beside the trip policy, on a manual clock: consecutive failures, trip delay, warm-up,
 * ramp-up after a re-close, slowness normalised by prompt size, and the latency-percentile policy
 * inside a breaker.
 */
class BreakerTripRulesTest {

	private static final long MS = 1_000_000L;
	private static final long FAST = 100 * MS;

	private final ManualClock clock = new ManualClock(1_000_000_000L);
	private final RecordingMetrics metrics = new RecordingMetrics();
	private final List<BreakerEvent> events = new CopyOnWriteArrayList<>();

	private static BreakerConfig.Builder base() {
		return BreakerConfig.custom().failureRateThreshold(0.5).minimumCalls(10).openWait(Duration.ofSeconds(10))
				.openWaitJitter(0).halfOpenProbes(2).successesToClose(2).minimumDwell(Duration.ZERO)
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

	private String lastReason() {
		return events.stream().filter(e -> e instanceof BreakerEvent.StateTransition)
				.map(e -> ((BreakerEvent.StateTransition) e).reason()).reduce((a, b) -> b).orElse("");
	}

	/** Trips, waits, and closes with two healthy probes: CLOSED again, after a re-close. */
	private void reclose(CircuitBreaker breaker) {
		record(breaker, Outcome.FAILURE, 10);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		clock.advance(Duration.ofSeconds(10));
		record(breaker, Outcome.SUCCESS, 2);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	// ------------------------------------------------------------- consecutive failures

	@Test
	void nFailuresInARowTripAtOnceBelowMinimumCalls() {
		CircuitBreaker breaker = breaker(base().minimumCalls(100).consecutiveFailuresToTrip(3).build());
		record(breaker, Outcome.SUCCESS, 5);
		record(breaker, Outcome.FAILURE, 2);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		record(breaker, Outcome.STALLED, 1); // a stall is a failure too
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(lastReason()).isEqualTo("3 consecutive failures");
	}

	@Test
	void aSuccessBetweenFailuresStartsTheRowAgain() {
		CircuitBreaker breaker = breaker(base().minimumCalls(100).consecutiveFailuresToTrip(3).build());
		for (int i = 0; i < 20; i++) {
			record(breaker, Outcome.FAILURE, 2);
			record(breaker, Outcome.SUCCESS, 1);
		}
		assertThat(breaker.state()).as("40 failures, never 3 in a row").isEqualTo(BreakerState.CLOSED);
		record(breaker, Outcome.INCOMPLETE, 3);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void ignoredOutcomesNeitherCountNorBreakTheRow() {
		CircuitBreaker breaker = breaker(base().minimumCalls(100).consecutiveFailuresToTrip(3).build());
		record(breaker, Outcome.FAILURE, 2);
		breaker.tryAcquire().record(Outcome.CANCELLED, -1);
		breaker.tryAcquire().record(Outcome.CLIENT_ERROR, -1);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		record(breaker, Outcome.FAILURE, 1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void aReclosedBreakerStartsItsRowFromZero() {
		CircuitBreaker breaker = breaker(base().consecutiveFailuresToTrip(12).build());
		reclose(breaker);
		record(breaker, Outcome.FAILURE, 1);
		assertThat(breaker.state()).as("one failure after the re-close is not the 11 before it plus one")
				.isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void consecutiveFailuresTripDespiteATripDelayAndAWarmUp() {
		CircuitBreaker breaker = breaker(base().consecutiveFailuresToTrip(5).tripDelay(Duration.ofMinutes(1))
				.warmUp(Duration.ofMinutes(10)).build());
		record(breaker, Outcome.FAILURE, 5);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	// ------------------------------------------------------------- trip delay

	@Test
	void aSpikeShorterThanTheTripDelayIsIgnored() {
		CircuitBreaker breaker = breaker(base().tripDelay(Duration.ofSeconds(5)).build());
		record(breaker, Outcome.SUCCESS, 10);
		// a 3 s spike: the failure rate is over the threshold from the 10th failure on
		for (int i = 0; i < 30; i++) {
			record(breaker, Outcome.FAILURE, 1);
			clock.advance(Duration.ofMillis(100));
		}
		assertThat(breaker.failureRate()).isGreaterThanOrEqualTo(0.5);
		// then successes bring the rate back under the threshold before the 5 s are up
		for (int i = 0; i < 25; i++) {
			record(breaker, Outcome.SUCCESS, 1);
			clock.advance(Duration.ofMillis(10));
		}
		assertThat(breaker.failureRate()).isLessThan(0.5);
		clock.advance(Duration.ofSeconds(10));
		record(breaker, Outcome.FAILURE, 1); // well after the delay: the spike's start is forgotten
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(metrics.transitions()).isEmpty();
	}

	@Test
	void pressureHeldForTheTripDelayTripsThenAndNotBefore() {
		CircuitBreaker breaker = breaker(base().tripDelay(Duration.ofSeconds(5)).build());
		record(breaker, Outcome.FAILURE, 10); // pressure 2 from now on
		long above = clock.nanoTime();
		while (clock.nanoTime() - above < Duration.ofSeconds(5).toNanos()) {
			assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
			clock.advance(Duration.ofMillis(100));
			record(breaker, Outcome.FAILURE, 1);
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(events.stream().filter(e -> e instanceof BreakerEvent.StateTransition).findFirst().orElseThrow()
				.nanoTime()).isEqualTo(above + Duration.ofSeconds(5).toNanos());
	}

	@Test
	void successesAreJudgedWhileATripWaits() {
		CircuitBreaker breaker = breaker(base().tripDelay(Duration.ofSeconds(5)).build());
		record(breaker, Outcome.FAILURE, 10);
		clock.advance(Duration.ofSeconds(6));
		// only successes now, but the pressure has been at 2 for 6 s: the first success sees that
		record(breaker, Outcome.SUCCESS, 1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	// ------------------------------------------------------------- warm-up

	@Test
	void warmUpRelaxesTheTripLimitForItsPeriod() {
		CircuitBreaker breaker = breaker(
				base().countWindow(10).warmUp(Duration.ofMinutes(1)).warmUpThresholdFactor(2).build());
		record(breaker, Outcome.SUCCESS, 4);
		record(breaker, Outcome.FAILURE, 6); // 60 %: pressure 1.2 < 2
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);

		clock.advance(Duration.ofSeconds(59));
		record(breaker, Outcome.FAILURE, 1); // 70 % in the last 10 calls, still warming up
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);

		clock.advance(Duration.ofSeconds(1));
		record(breaker, Outcome.FAILURE, 1); // warm-up over: 80 % trips
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void warmUpStillTripsAtItsRelaxedLimit() {
		CircuitBreaker breaker = breaker(
				base().countWindow(10).warmUp(Duration.ofMinutes(1)).warmUpThresholdFactor(2).build());
		record(breaker, Outcome.FAILURE, 10); // 100 %: pressure 2
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(lastReason()).startsWith("trip policy pressure 2.0 >= 2.0");
	}

	// ------------------------------------------------------------- ramp-up

	@Test
	void afterAReCloseTheAdmittedShareGrowsLinearly() {
		CircuitBreaker breaker = breaker(base().rampUp(Duration.ofSeconds(10)).build());
		reclose(breaker);
		long rejectedBefore = breaker.rejectedCalls();
		int[] admitted = new int[10];
		for (int second = 0; second < 10; second++) {
			for (int i = 0; i < 100; i++) {
				BreakerPermit permit = breaker.tryAcquire();
				if (permit != null) {
					admitted[second]++;
					permit.record(Outcome.SUCCESS, FAST);
				}
				clock.advance(Duration.ofMillis(10));
			}
		}
		for (int second = 0; second < 10; second++) {
			// the share over second s is (s + 0.5) / 10 on average
			assertThat(admitted[second]).as("second %d", second).isBetween(second * 10 + 3, second * 10 + 7);
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(breaker.rejectedCalls() - rejectedBefore).isEqualTo(1000 - sum(admitted));
		assertThat(breaker.snapshot().calls()).as("refusals are not calls, let alone failures")
				.isEqualTo(sum(admitted));
		assertThat(breaker.snapshot().failures()).isZero();

		// the ramp is over: every call is admitted and the ramp reads no clock any more
		for (int i = 0; i < 50; i++) {
			assertThat(breaker.tryAcquire()).isNotNull();
		}
		assertThat(breaker.phase().ramping).isFalse();
	}

	@Test
	void aRampRefusalIsReportedLikeAnOpenBreakersRefusal() {
		CircuitBreaker breaker = breaker(base().rampUp(Duration.ofSeconds(10)).build());
		reclose(breaker);
		events.clear();
		assertThat(breaker.tryAcquire()).as("share 0 at the ramp's first instant").isNull();
		assertThat(events).singleElement().isInstanceOfSatisfying(BreakerEvent.CallRejected.class,
				e -> assertThat(e.state()).isEqualTo(BreakerState.CLOSED));
		assertThat(metrics.breakerRejections()).isGreaterThanOrEqualTo(1);
	}

	@Test
	void aRampingBreakerStillTrips() {
		CircuitBreaker breaker = breaker(base().rampUp(Duration.ofSeconds(10)).build());
		reclose(breaker);
		clock.advance(Duration.ofSeconds(5));
		int failures = 0;
		while (breaker.state() == BreakerState.CLOSED && failures < 100) {
			BreakerPermit permit = breaker.tryAcquire();
			if (permit != null) {
				permit.record(Outcome.FAILURE, -1);
				failures++;
			}
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(failures).isEqualTo(10);
	}

	@Test
	void aNewBreakerAndAnOperatorsCloseDoNotRamp() {
		CircuitBreaker breaker = breaker(base().rampUp(Duration.ofSeconds(10)).build());
		assertThat(breaker.tryAcquire()).isNotNull();
		breaker.transitionToForcedOpen();
		breaker.transitionToClosed();
		for (int i = 0; i < 10; i++) {
			assertThat(breaker.tryAcquire()).isNotNull();
		}
	}

	@Test
	void theTimestampedApiRampsOnTheGivenTime() {
		CircuitBreaker breaker = breaker(base().rampUp(Duration.ofSeconds(10)).build());
		reclose(breaker);
		long now = clock.nanoTime();
		int admitted = 0;
		for (int i = 0; i < 100; i++) {
			if (breaker.tryAcquire(now + Duration.ofSeconds(5).toNanos()) != null) {
				admitted++;
			}
		}
		assertThat(admitted).isEqualTo(50);
		assertThat(breaker.tryAcquire(now + Duration.ofSeconds(10).toNanos())).isNotNull();
		assertThat(breaker.phase().ramping).isFalse();
	}

	private static int sum(int[] values) {
		int s = 0;
		for (int v : values) {
			s += v;
		}
		return s;
	}

	// ------------------------------------------------------------- prompt size

	@Test
	void aLongPromptIsAllowedALaterFirstToken() {
		// 1 s base, +7.2 ms per token: 1250 tokens (5000 characters) may take 10 s
		BreakerConfig config = base().slowCallRateThreshold(0.5)
				.slowTimeToFirstTokenPerPromptToken(Duration.ofNanos(7_200_000)).build();
		CircuitBreaker breaker = breaker(config);
		for (int i = 0; i < 50; i++) {
			breaker.tryAcquire().promptTokens(1250).record(Outcome.SUCCESS, 9_000 * MS);
		}
		assertThat(breaker.snapshot().slowCalls()).isZero();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);

		breaker.tryAcquire().promptTokens(1250).record(Outcome.SUCCESS, 10_000 * MS);
		assertThat(breaker.snapshot().slowCalls()).as("10 s is the limit itself").isEqualTo(1);

		// the same first-token time for a short prompt, or an unknown one, is slow: 49 more make half
		int slow = 0;
		while (breaker.state() == BreakerState.CLOSED && slow < 100) {
			breaker.tryAcquire().promptTokens(slow % 2 == 0 ? 10 : 0).record(Outcome.SUCCESS, 9_000 * MS);
			slow++;
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(slow).isEqualTo(49);
	}

	@Test
	void withoutThePerTokenSettingThePromptSizeChangesNothing() {
		CircuitBreaker breaker = breaker(base().build());
		breaker.tryAcquire().promptTokens(100_000).record(Outcome.SUCCESS, 1_000 * MS);
		assertThat(breaker.snapshot().slowCalls()).isEqualTo(1);
	}

	@Test
	void thePolicySeesTheFirstTokenTimeScaledToAnEmptyPrompt() {
		AtomicLong seen = new AtomicLong();
		TripPolicy recording = () -> new TripPolicy.Evaluator() {
			@Override
			public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long ttft, boolean slow,
					long now) {
				seen.set(ttft);
				return false;
			}

			@Override
			public double pressure(WindowCounts window, BreakerConfig config, long now) {
				return 0;
			}
		};
		CircuitBreaker breaker = breaker(base().tripPolicy(recording)
				.slowTimeToFirstTokenPerPromptToken(Duration.ofMillis(1)).build());
		breaker.tryAcquire().promptTokens(1000).record(Outcome.SUCCESS, 4_000 * MS); // allowance 1 s + 1 s
		assertThat(seen.get()).isEqualTo(2_000 * MS);
		breaker.tryAcquire().record(Outcome.SUCCESS, 4_000 * MS);
		assertThat(seen.get()).isEqualTo(4_000 * MS);
		breaker.tryAcquire().promptTokens(1000).record(Outcome.FAILURE, -1);
		assertThat(seen.get()).as("no first token stays no first token").isEqualTo(-1);
	}

	@Test
	void aDisabledBreakersPermitAcceptsAPromptSize() {
		CircuitBreaker breaker = breaker(base().build());
		breaker.transitionToDisabled();
		BreakerPermit permit = breaker.tryAcquire();
		assertThat(permit.promptTokens(10)).isSameAs(permit);
	}

	// ------------------------------------------------------------- latency percentile

	@Test
	void theLatencyPercentileTripsBesideTheFailureRate() {
		BreakerConfig config = base().tripPolicy(TripPolicy.anyOf(TripPolicy.failureRate(),
				TripPolicy.ttftPercentile(Duration.ofSeconds(3)).percentile(0.95).minSamples(20))).build();
		CircuitBreaker breaker = breaker(config);
		for (int i = 0; i < 97; i++) {
			breaker.tryAcquire().record(Outcome.SUCCESS, 500 * MS);
			clock.advance(Duration.ofMillis(100));
		}
		for (int i = 0; i < 3; i++) {
			breaker.tryAcquire().record(Outcome.SUCCESS, 5_000 * MS);
		}
		assertThat(breaker.state()).as("3 % slow: the p95 is fast").isEqualTo(BreakerState.CLOSED);
		int more = 0;
		while (breaker.state() == BreakerState.CLOSED && more < 20) {
			breaker.tryAcquire().record(Outcome.SUCCESS, 5_000 * MS);
			more++;
		}
		// 103 first tokens, 6 slow: the 98th (the p95's rank) is the first slow one
		assertThat(more).isEqualTo(3);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(breaker.failureRate()).isZero();
	}
}
