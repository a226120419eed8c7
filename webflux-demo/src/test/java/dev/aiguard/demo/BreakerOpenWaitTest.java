package dev.aiguard.demo;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.core.Outcome;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link BreakerOpenWait} against the library's breaker built with the demo's default settings, on a
 * hand-driven clock: the deadline it computes is the one the breaker keeps (refused one nanosecond
 * before, a probe at it), through the doubling, the cap, a streak carried over a quick re-trip, a
 * streak earned back, and an operator's close.
 */
class BreakerOpenWaitTest {

	private static final long SECOND = 1_000_000_000L;
	private static final Instant WALL = Instant.parse("2030-01-01T00:00:00Z");

	private final AtomicLong now = new AtomicLong(1_000 * SECOND);
	private CircuitBreaker breaker;
	private BreakerOpenWait waits;

	@BeforeEach
	void demoBreaker() {
		DemoProperties.Breaker defaults = new DemoProperties.Breaker(0.5, 6, 30, Duration.ofSeconds(15), 3, 2,
				Duration.ofSeconds(2), Duration.ofSeconds(2));
		breaker = CircuitBreaker.builder("model").config(GuardConfiguration.breakerConfig(defaults)).clock(now::get)
			.build();
		waits = BreakerOpenWait.follow(breaker, now::get, Clock.fixed(WALL, ZoneOffset.UTC));
	}

	@Test
	void theWaitDoublesOnEachReopenUpToEightTimesTheFirstAndTheDeadlineIsTheBreakersOwn() {
		assertThat(waits.view()).isEqualTo(new BreakerOpenWait.View(null, null, null, 15_000));

		trip();
		assertOpenFor(15);
		for (long expected : new long[] { 30, 60, 120, 120 }) {
			failProbes();
			assertOpenFor(expected);
		}
	}

	@Test
	void aTripSoonAfterAReCloseContinuesTheStreakAndStayingClosedLongerEarnsTheShortWaitBack() {
		trip();
		assertOpenFor(15);
		failProbes();
		assertOpenFor(30);
		closeThroughProbes();
		assertThat(waits.view()).as("closed for less than the last wait: a trip now continues the streak")
			.isEqualTo(new BreakerOpenWait.View(null, null, null, 60_000));

		advance(3 * SECOND);
		trip();
		assertOpenFor(60);
		closeThroughProbes();

		advance(60 * SECOND);
		assertThat(waits.view().nextOpenWaitMs()).as("closed as long as the last wait: the short wait is back")
			.isEqualTo(15_000);
		trip();
		assertOpenFor(15);
	}

	@Test
	void anOperatorCloseStartsOver() {
		trip();
		assertOpenFor(15);
		failProbes();
		assertOpenFor(30);
		failProbes();
		assertThat(waits.view().openWaitMs()).isEqualTo(60_000);

		breaker.transitionToClosed();
		assertThat(waits.view().nextOpenWaitMs()).isEqualTo(15_000);
		trip();
		assertOpenFor(15);
	}

	@Test
	void retryInCountsDownToZeroOnceTheNextRequestWouldProbe() {
		trip();
		advance(2_700_000_000L);
		assertThat(waits.view()).isEqualTo(new BreakerOpenWait.View(WALL.toEpochMilli() + 12_300, 12_300L, 15_000L,
				30_000));

		advance(12_300_000_000L - 1);
		assertThat(waits.view().retryInMs()).as("rounded up: 1 ns left is still a refusal").isEqualTo(1);
		advance(1);
		assertThat(waits.view().retryInMs()).isZero();
		advance(40 * SECOND);
		assertThat(waits.view().retryInMs()).as("nobody asked: still OPEN, and the next request probes").isZero();
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);

		assertThat(breaker.tryAcquire()).isNotNull();
		assertThat(waits.view()).as("HALF_OPEN: no deadline, the wait that led here")
			.isEqualTo(new BreakerOpenWait.View(null, null, 15_000L, 30_000));
	}

	/** Six failed calls: the demo's breaker trips at 50 % of at least six. */
	private void trip() {
		for (int i = 0; i < 6; i++) {
			breaker.tryAcquire().record(Outcome.FAILURE, -1);
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	/** Checks the computed deadline against the breaker, then moves the clock to it. */
	private void assertOpenFor(long seconds) {
		BreakerOpenWait.View view = waits.view();
		assertThat(view.openWaitMs()).isEqualTo(seconds * 1000);
		assertThat(view.retryInMs()).isEqualTo(seconds * 1000);
		long rejected = breaker.rejectedCalls();
		advance(seconds * SECOND - 1);
		assertThat(breaker.tryAcquire()).as("refused 1 ns before the deadline").isNull();
		assertThat(breaker.rejectedCalls()).isEqualTo(rejected + 1);
		assertThat(waits.view().retryInMs()).isEqualTo(1);
		advance(1);
		assertThat(waits.view().retryInMs()).isZero();
		BreakerPermit probe = breaker.tryAcquire();
		assertThat(probe).as("a probe at the deadline").isNotNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		probe.record(Outcome.CANCELLED, -1); // hands the slot back: the next step decides the stay
	}

	/** Two failed probes re-open a HALF_OPEN breaker. */
	private void failProbes() {
		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	/** Three healthy probes, after the dwell, close it. */
	private void closeThroughProbes() {
		for (int i = 0; i < 3; i++) {
			breaker.tryAcquire().record(Outcome.SUCCESS, 1_000_000);
		}
		advance(2 * SECOND);
		assertThat(breaker.tryAcquire()).isNotNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	private void advance(long nanos) {
		now.addAndGet(nanos);
	}
}
