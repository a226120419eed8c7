package dev.aiguard.retry;

import java.io.IOException;
import java.time.Duration;
import java.util.PriorityQueue;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RetryBudgetTest {

	private static final long MS = 1_000_000L;

	/** Grants until refused; returns how many were granted. */
	private static int drain(RetryBudget budget) {
		int granted = 0;
		while (budget.tryAcquireRetry()) {
			granted++;
			assertThat(granted).as("budget never runs dry").isLessThan(1_000_000);
		}
		return granted;
	}

	@Test
	void theFloorAloneAllowsMinRetriesPerSecondTimesTheWindow() {
		AtomicLong now = new AtomicLong();
		RetryBudget budget = RetryBudget.of(0.1, 10, Duration.ofSeconds(10), now::get);
		assertThat(budget.available()).isEqualTo(100);
		assertThat(drain(budget)).isEqualTo(100);
		assertThat(budget.available()).isZero();
	}

	@Test
	void eachRequestEarnsRatioOfARetry() {
		AtomicLong now = new AtomicLong();
		RetryBudget budget = RetryBudget.of(0.1, 0, Duration.ofSeconds(10), now::get);
		assertThat(budget.tryAcquireRetry()).isFalse();
		for (int i = 0; i < 1000; i++) {
			budget.onRequest();
		}
		assertThat(drain(budget)).isEqualTo(100);
		for (int i = 0; i < 10; i++) {
			budget.onRequest();
		}
		assertThat(drain(budget)).isEqualTo(1);
	}

	@Test
	void spentRetriesComeBackWhenTheWindowSlidesPastThem() {
		AtomicLong now = new AtomicLong();
		RetryBudget budget = RetryBudget.of(0.0, 10, Duration.ofSeconds(1), now::get);
		assertThat(drain(budget)).isEqualTo(10);
		now.set(500 * MS);
		assertThat(budget.tryAcquireRetry()).as("still inside the window").isFalse();
		now.set(1_100 * MS);
		assertThat(drain(budget)).isEqualTo(10);
	}

	@Test
	void requestsOlderThanTheWindowNoLongerEarnRetries() {
		AtomicLong now = new AtomicLong();
		RetryBudget budget = RetryBudget.of(1.0, 0, Duration.ofSeconds(1), now::get);
		for (int i = 0; i < 100; i++) {
			budget.onRequest();
		}
		assertThat(budget.tryAcquireRetry()).isTrue();
		now.set(1_050 * MS);
		assertThat(budget.tryAcquireRetry()).isFalse();
		assertThat(budget.available()).isZero();
	}

	@Test
	void retriesSpentInEarlierSlotsStillCountWithinTheWindow() {
		AtomicLong now = new AtomicLong();
		RetryBudget budget = RetryBudget.of(0.5, 0, Duration.ofSeconds(1), now::get);
		for (int i = 0; i < 20; i++) {
			budget.onRequest();
		}
		assertThat(drain(budget)).isEqualTo(10);
		// new slots, same window: 10 more requests earn 5 more retries, the 10 spent still count
		now.set(350 * MS);
		for (int i = 0; i < 10; i++) {
			budget.onRequest();
		}
		now.set(720 * MS);
		assertThat(drain(budget)).isEqualTo(5);
		// the first slot leaves the window: its 20 requests and 10 retries go together
		now.set(1_010 * MS);
		assertThat(drain(budget)).isZero();
		assertThat(budget.available()).isZero();
	}

	@Test
	void aBurstOfFailingRequestsMakesAtMostTenPercentMoreAttemptsPlusTheFloor() {
		AtomicLong now = new AtomicLong();
		RetryBudget budget = RetryBudget.of(0.1, 10, Duration.ofSeconds(10), now::get);
		RetryRules spec = RetryRules.defaults();
		int attempts = 0;
		for (int request = 0; request < 1000; request++) {
			budget.onRequest();
			int made = 1;
			attempts++; // the upstream fails every time
			while (spec.canRetry(made) && budget.tryAcquireRetry()) {
				made++;
				attempts++;
			}
		}
		int floor = 10 * 10;
		assertThat(attempts).isLessThanOrEqualTo(1100 + floor).isGreaterThanOrEqualTo(1100);
		assertThat(attempts).as("without a budget").isLessThan(3000);
	}

	@Test
	void aBurstWithoutFloorMakesAtMostTenPercentMoreAttempts() {
		AtomicLong now = new AtomicLong();
		RetryBudget budget = RetryBudget.of(0.1, 0, Duration.ofSeconds(10), now::get);
		int attempts = 0;
		for (int request = 0; request < 1000; request++) {
			budget.onRequest();
			attempts++;
			for (int retry = 1; retry <= 2 && budget.tryAcquireRetry(); retry++) {
				attempts++;
			}
		}
		assertThat(attempts).isEqualTo(1100);
	}

	/**
	 * Something that happens to a simulated request at a time: an attempt starts, or an attempt
	 * fails and the retry decision is taken.
	 */
	record Event(long at, int attempt, boolean failure) {
	}

	/**
	 * A steady stream of requests against an upstream that always fails 100 ms into an attempt;
	 * retries follow the default backoff and ask the budget. Returns the upstream attempts made.
	 */
	private static int simulateFailingUpstream(RetryBudget budget, AtomicLong now, int requests, long spacingNanos) {
		RetryRules spec = RetryRules.defaults().random(new SplittableRandom(42)::nextDouble);
		PriorityQueue<Event> queue = new PriorityQueue<>((a, b) -> Long.compare(a.at(), b.at()));
		for (int r = 0; r < requests; r++) {
			queue.add(new Event(r * spacingNanos, 1, false));
		}
		int attempts = 0;
		while (!queue.isEmpty()) {
			Event e = queue.poll();
			now.set(e.at());
			if (!e.failure()) {
				if (e.attempt() == 1) {
					budget.onRequest();
				}
				attempts++;
				queue.add(new Event(e.at() + 100 * MS, e.attempt(), true));
			}
			else if (spec.canRetry(e.attempt()) && budget.tryAcquireRetry()) {
				long wait = spec.delayBefore(e.attempt(), new IOException("upstream down")).toNanos();
				queue.add(new Event(e.at() + wait, e.attempt() + 1, false));
			}
		}
		return attempts;
	}

	@Test
	void steadyFailingTrafficIsBoundedByTheRatioAndTheFloorRate() {
		AtomicLong now = new AtomicLong();
		RetryBudget budget = RetryBudget.of(0.1, 10, Duration.ofSeconds(10), now::get);
		int requests = 1000;
		long spacing = 50 * MS; // 20 requests per second for 50 s
		int attempts = simulateFailingUpstream(budget, now, requests, spacing);
		double seconds = now.get() / 1e9;
		// the floor grants at most 10/s over any 10 s window: count the windows the run touched
		long floor = 10L * 10L * ((long) Math.ceil(seconds / 10.0) + 1L);
		assertThat(attempts).isLessThanOrEqualTo((int) (1.1 * requests + floor));
		assertThat(attempts).as("three tries each without a budget").isLessThan(3 * requests);
	}

	@Test
	void steadyFailingTrafficWithoutFloorMakesAtMostTenPercentMoreAttempts() {
		AtomicLong now = new AtomicLong();
		RetryBudget budget = RetryBudget.of(0.1, 0, Duration.ofSeconds(10), now::get);
		int attempts = simulateFailingUpstream(budget, now, 1000, 50 * MS);
		assertThat(attempts).isLessThanOrEqualTo(1100).isGreaterThan(1000);
	}

	@Test
	void concurrentAcquiresNeverOverdraw() {
		for (int round = 0; round < 200; round++) {
			RetryBudget budget = RetryBudget.of(0.0, 7, Duration.ofSeconds(1), () -> 0L);
			AtomicInteger granted = new AtomicInteger();
			Runnable acquirer = () -> {
				for (int i = 0; i < 5; i++) {
					if (budget.tryAcquireRetry()) {
						granted.incrementAndGet();
					}
				}
			};
			RaceTestUtils.race(acquirer, acquirer, acquirer, acquirer);
			assertThat(granted).as("round %d", round).hasValue(7);
		}
	}

	@Test
	void concurrentAcquiresNeverOverdrawWhileTheSlotTurnsOver() {
		for (int round = 0; round < 200; round++) {
			AtomicLong now = new AtomicLong(95 * MS);
			RetryBudget budget = RetryBudget.of(0.0, 6, Duration.ofSeconds(1), now::get);
			AtomicInteger granted = new AtomicInteger();
			Runnable acquirer = () -> {
				for (int i = 0; i < 4; i++) {
					if (budget.tryAcquireRetry()) {
						granted.incrementAndGet();
					}
				}
			};
			Runnable clock = () -> {
				now.set(150 * MS);
				now.set(260 * MS);
			};
			RaceTestUtils.race(acquirer, clock, acquirer, acquirer);
			assertThat(granted).as("round %d", round).hasValue(6);
			assertThat(budget.tryAcquireRetry()).isFalse();
		}
	}

	@Test
	void concurrentRequestsAndRetriesNeverExceedTheEarnedShare() {
		for (int round = 0; round < 200; round++) {
			AtomicLong now = new AtomicLong();
			RetryBudget budget = RetryBudget.of(0.5, 0, Duration.ofSeconds(1), now::get);
			AtomicInteger granted = new AtomicInteger();
			AtomicInteger requested = new AtomicInteger();
			Runnable depositor = () -> {
				for (int i = 0; i < 20; i++) {
					// counted before it is deposited, so an acquirer's snapshot never lags the budget
					requested.incrementAndGet();
					budget.onRequest();
				}
			};
			Runnable acquirer = () -> {
				for (int i = 0; i < 20; i++) {
					int before = requested.get();
					if (budget.tryAcquireRetry()) {
						int total = granted.incrementAndGet();
						// earned so far can only have grown since it was read
						assertThat(total).isLessThanOrEqualTo((int) (0.5 * Math.max(before, requested.get())));
					}
				}
			};
			RaceTestUtils.race(depositor, acquirer, depositor, acquirer);
			int late = drain(budget);
			assertThat(granted.get() + late).as("round %d", round).isEqualTo(20);
		}
	}

	@Test
	void timeMayComeFromAScheduler() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		RetryBudget budget = RetryBudget.of(0.0, 2, Duration.ofSeconds(1), vts);
		assertThat(drain(budget)).isEqualTo(2);
		vts.advanceTimeBy(Duration.ofMillis(1_100));
		assertThat(drain(budget)).isEqualTo(2);
	}

	@Test
	void aClockThatGoesBackwardsDoesNotBreakTheBudget() {
		AtomicLong now = new AtomicLong(5_000 * MS);
		RetryBudget budget = RetryBudget.of(0.0, 3, Duration.ofSeconds(1), now::get);
		assertThat(drain(budget)).isEqualTo(3);
		now.set(0L);
		budget.onRequest();
		assertThat(budget.tryAcquireRetry()).isFalse();
	}

	@Test
	void unlimitedGrantsEverything() {
		RetryBudget budget = RetryBudget.unlimited();
		budget.onRequest();
		for (int i = 0; i < 10_000; i++) {
			assertThat(budget.tryAcquireRetry()).isTrue();
		}
		assertThat(budget.available()).isEqualTo(Long.MAX_VALUE);
	}

	@Test
	void createUsesTheDefaults() {
		RetryBudget budget = RetryBudget.create();
		assertThat(budget.ratio()).isEqualTo(0.1);
		assertThat(budget.minRetriesPerSecond()).isEqualTo(10);
		assertThat(budget.window()).isEqualTo(Duration.ofSeconds(10));
		assertThat(budget.available()).isEqualTo(100);
	}

	@Test
	void badConfigurationNamesTheFieldAndTheValue() {
		assertThatThrownBy(() -> RetryBudget.of(1.5, 10, Duration.ofSeconds(10)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ratio").hasMessageContaining("1.5");
		assertThatThrownBy(() -> RetryBudget.of(-0.1, 10, Duration.ofSeconds(10)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ratio").hasMessageContaining("-0.1");
		assertThatThrownBy(() -> RetryBudget.of(Double.NaN, 10, Duration.ofSeconds(10)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ratio").hasMessageContaining("NaN");
		assertThatThrownBy(() -> RetryBudget.of(0.1, -1, Duration.ofSeconds(10)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minRetriesPerSecond").hasMessageContaining("-1");
		assertThatThrownBy(() -> RetryBudget.of(0.1, 10, Duration.ofMillis(1)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("window").hasMessageContaining("PT0.001S");
		assertThatThrownBy(() -> RetryBudget.of(0.1, 10, Duration.ofHours(2)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("window").hasMessageContaining("PT2H");
		assertThatThrownBy(() -> RetryBudget.of(0.1, 10, null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("window").hasMessageContaining("null");
		assertThatThrownBy(() -> RetryBudget.of(0.1, 10, Duration.ofSeconds(1), (java.util.function.LongSupplier) null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("nanoClock");
	}
}
