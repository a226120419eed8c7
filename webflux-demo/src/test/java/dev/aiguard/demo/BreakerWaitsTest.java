package dev.aiguard.demo;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.boot.autoconfigure.AiGuardAutoConfiguration;
import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.core.Outcome;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.test.context.ConfigDataApplicationContextInitializer;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link BreakerWaits} against the library's breaker built with the demo's default settings (10 %
 * jitter, read from application.properties as the starter reads them), on a hand-driven clock: the numbers {@code /api/guard} shows are the breaker's own —
 * the probe deadline is refused one nanosecond before and let through at it, the wait said for the
 * next open is the one the breaker then uses, jitter and doubling included.
 */
class BreakerWaitsTest {

	private static final long SECOND = 1_000_000_000L;
	private static final Instant WALL = Instant.parse("2030-01-01T00:00:00Z");
	private static final Clock WALL_CLOCK = Clock.fixed(WALL, ZoneOffset.UTC);

	private final AtomicLong now = new AtomicLong(1_000 * SECOND);
	private CircuitBreaker breaker;

	/**
	 * The settings of the chat policy's endpoint breaker ({@code llm/mock/mock-large}, from the template
	 * {@code aiguard.breakers.model} in the demo's application.properties), as the starter reads them.
	 */
	private static BreakerConfig demoDefaults;

	@BeforeAll
	static void readTheDemoDefaults() {
		new ApplicationContextRunner()
			.withInitializer(new ConfigDataApplicationContextInitializer())
			// the demo's own settings under aiguard (base-url, api-key...) are bound as the application binds
			// them, so the starter's unknown-key check knows them
			.withUserConfiguration(DemoSettings.class)
			.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class))
			.run(context -> demoDefaults = context.getBean(AiGuardRegistry.class).guard(GuardConfiguration.POLICY)
				.policy().breaker().config());
		assertThat(demoDefaults.openWait()).as("application.properties was read").isEqualTo(Duration.ofSeconds(15));
	}

	@BeforeEach
	void demoBreaker() {
		breaker = CircuitBreaker.builder("mock-large").config(demoDefaults).clock(now::get).build();
	}

	@Test
	void aClosedBreakerShowsOnlyTheWaitATripWouldGet() {
		BreakerWaits.View view = view();

		assertThat(view.openUntil()).isNull();
		assertThat(view.retryInMs()).isNull();
		assertThat(view.openWaitMs()).isNull();
		assertThat(view.nextOpenWaitMs()).isEqualTo(breaker.nextOpenWait().toMillis()).isBetween(15_000L, 16_500L);
	}

	@Test
	void eachOpenWaitIsTheOneSaidBeforeAndItsDeadlineIsTheBreakersOwn() {
		long said = view().nextOpenWaitMs();
		trip();
		for (long first : new long[] { 15, 30, 60, 120, 120 }) {
			long wait = assertOpenAsSaid(said, first);
			said = view().nextOpenWaitMs();
			assertThat(said).as("HALF_OPEN: a failed probe re-opens for the next step")
				.isBetween(Math.min(first * 2, 120) * 1000, Math.min(first * 2, 120) * 1100);
			assertThat(view().openWaitMs()).as("the wait that led here").isEqualTo(wait);
			failProbes();
		}
	}

	@Test
	void retryInCountsDownToZeroOnceTheNextRequestWouldProbe() {
		trip();
		long waitNanos = breaker.lastOpenWait().toNanos();
		advance(2_700_000_000L);
		long left = waitNanos - 2_700_000_000L;
		long retryIn = (left + 999_999) / 1_000_000;
		assertThat(view()).isEqualTo(new BreakerWaits.View(WALL.toEpochMilli() + retryIn, retryIn,
				breaker.lastOpenWait().toMillis(), breaker.nextOpenWait().toMillis()));

		advance(left - 1);
		assertThat(view().retryInMs()).as("rounded up: 1 ns left is still a refusal").isEqualTo(1);
		advance(1);
		assertThat(view().retryInMs()).isZero();
		assertThat(view().openUntil()).isEqualTo(WALL.toEpochMilli());
		advance(40 * SECOND);
		assertThat(view().retryInMs()).as("nobody asked: still OPEN, and the next request probes").isZero();
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void anOperatorCloseStartsOverAndShowsNoStay() {
		trip();
		failProbesAfterTheWait();
		assertThat(view().openWaitMs()).isBetween(30_000L, 33_000L);

		breaker.transitionToClosed();
		assertThat(view()).isEqualTo(new BreakerWaits.View(null, null, null, breaker.nextOpenWait().toMillis()));
		assertThat(view().nextOpenWaitMs()).isBetween(15_000L, 16_500L);
	}

	private BreakerWaits.View view() {
		return BreakerWaits.of(breaker, WALL_CLOCK);
	}

	/**
	 * Checks an OPEN stay: its wait is the one said before it, within the rule's bounds; refused
	 * 1 ns before its deadline, a probe at it. Leaves the breaker HALF_OPEN.
	 *
	 * @return the stay's wait in milliseconds
	 */
	private long assertOpenAsSaid(long saidMs, long seconds) {
		BreakerWaits.View view = view();
		long waitNanos = breaker.lastOpenWait().toNanos();
		assertThat(view.openWaitMs()).isEqualTo(saidMs).isBetween(seconds * 1000, seconds * 1100);
		assertThat(view.retryInMs()).isEqualTo((waitNanos + 999_999) / 1_000_000);
		long rejected = breaker.rejectedCalls();
		advance(waitNanos - 1);
		assertThat(breaker.tryAcquire()).as("refused 1 ns before the deadline").isNull();
		assertThat(breaker.rejectedCalls()).isEqualTo(rejected + 1);
		assertThat(view().retryInMs()).isEqualTo(1);
		advance(1);
		assertThat(view().retryInMs()).isZero();
		BreakerPermit probe = breaker.tryAcquire();
		assertThat(probe).as("a probe at the deadline").isNotNull();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		probe.record(Outcome.CANCELLED, -1); // hands the slot back: the next step decides the stay
		return saidMs;
	}

	/** Six failed calls: the demo's breaker trips at 50 % of at least six. */
	private void trip() {
		for (int i = 0; i < 6; i++) {
			breaker.tryAcquire().record(Outcome.FAILURE, -1);
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	/** Two failed probes re-open a HALF_OPEN breaker. */
	private void failProbes() {
		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	private void failProbesAfterTheWait() {
		advance(breaker.lastOpenWait().toNanos());
		failProbes();
	}

	private void advance(long nanos) {
		now.addAndGet(nanos);
	}

	@EnableConfigurationProperties(DemoProperties.class)
	static class DemoSettings {
	}
}
