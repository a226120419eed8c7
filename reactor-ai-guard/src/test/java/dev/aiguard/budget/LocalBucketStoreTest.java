package dev.aiguard.budget;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LocalBucketStoreTest {

	private final VirtualTimeScheduler time = VirtualTimeScheduler.create();
	private final LocalBucketStore store = LocalBucketStore.create(() -> time.now(TimeUnit.NANOSECONDS));
	private final BucketStore.Immediate now = store.immediate();
	private final BucketSpec perMinute = BucketSpec.of("tenant.requests", 6, Duration.ofMinutes(1));

	@Test
	void aBucketStartsFullAndIsLocal() {
		assertThat(store.mode()).isEqualTo(BucketStore.Mode.LOCAL);
		assertThat(now.available(perMinute, "acme")).isEqualTo(6);
	}

	@Test
	void takesWhileItHoldsThenSaysHowLongToWait() {
		for (int i = 5; i >= 0; i--) {
			long packed = now.tryTake(perMinute, "acme", 1);
			assertThat(Take.isTaken(packed)).isTrue();
			assertThat(Take.remaining(packed)).isEqualTo(i);
		}
		long refused = now.tryTake(perMinute, "acme", 1);
		assertThat(Take.isTaken(refused)).isFalse();
		// 6 per minute, greedy: one every 10 s
		assertThat(Take.nanosToWait(refused)).isEqualTo(Duration.ofSeconds(10).toNanos());
		time.advanceTimeBy(Duration.ofSeconds(10));
		assertThat(Take.isTaken(now.tryTake(perMinute, "acme", 1))).isTrue();
	}

	@Test
	void reservationsQueueBehindOneAnotherAndTheBucketGoesIntoDebt() {
		now.tryTake(perMinute, "acme", 6);
		// one every 10 s: the first reservation waits 10 s, the next 20 s, in the order they came
		long first = now.reserve(perMinute, "acme", 1, Duration.ofMinutes(1).toNanos());
		long second = now.reserve(perMinute, "acme", 1, Duration.ofMinutes(1).toNanos());
		assertThat(Take.unpackReservation(first)).isEqualTo(Take.ofReserved(Duration.ofSeconds(10).toNanos()));
		assertThat(Take.unpackReservation(second)).isEqualTo(Take.ofReserved(Duration.ofSeconds(20).toNanos()));
		assertThat(now.available(perMinute, "acme")).isEqualTo(-2);
		// a newcomer cannot jump the queue
		assertThat(Take.isTaken(now.tryTake(perMinute, "acme", 1))).isFalse();
		time.advanceTimeBy(Duration.ofSeconds(20));
		assertThat(now.available(perMinute, "acme")).isZero();
	}

	@Test
	void aReservationLongerThanAllowedTakesNothingAndSaysTheWait() {
		now.tryTake(perMinute, "acme", 6);
		long refused = now.reserve(perMinute, "acme", 2, Duration.ofSeconds(15).toNanos());
		assertThat(Take.unpackReservation(refused)).isEqualTo(Take.ofRefused(Duration.ofSeconds(20).toNanos()));
		assertThat(now.available(perMinute, "acme")).isZero();
		assertThat(Take.unpackReservation(now.reserve(perMinute, "acme", 7, Long.MAX_VALUE)).nanosToWait())
				.isEqualTo(Long.MAX_VALUE);
	}

	@Test
	void aReservationWithRoomOrWithoutWaitingIsImmediate() {
		assertThat(now.reserve(perMinute, "acme", 6, 0L)).isZero();
		long refused = now.reserve(perMinute, "acme", 1, 0L);
		assertThat(Take.unpackReservation(refused)).isEqualTo(Take.ofRefused(Duration.ofSeconds(10).toNanos()));
		assertThat(store.reserve(perMinute, "globex", 1, 5L).join()).isEqualTo(Take.ofReserved(0L));
		assertThatThrownBy(() -> now.reserve(perMinute, "acme", 1, -1L)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("maxWaitNanos");
		assertThat(store.reserve(perMinute, "acme", 0, 1L)).isCompletedExceptionally();
	}

	@Test
	void aStoreWithoutQueueingReservesFromTryTake() {
		BucketStore plain = new BucketStore() {
			@Override
			public Mode mode() {
				return Mode.SHARED;
			}

			@Override
			public java.util.concurrent.CompletableFuture<Take> tryTake(BucketSpec spec, String id, long units) {
				return store.tryTake(spec, id, units);
			}

			@Override
			public java.util.concurrent.CompletableFuture<Void> takeRegardless(BucketSpec spec, String id, long units) {
				return store.takeRegardless(spec, id, units);
			}

			@Override
			public java.util.concurrent.CompletableFuture<Void> giveBack(BucketSpec spec, String id, long units) {
				return store.giveBack(spec, id, units);
			}

			@Override
			public java.util.concurrent.CompletableFuture<Void> pause(BucketSpec spec, String id, Duration duration) {
				return store.pause(spec, id, duration);
			}

			@Override
			public java.util.concurrent.CompletableFuture<Long> available(BucketSpec spec, String id) {
				return store.available(spec, id);
			}
		};
		assertThat(plain.reserve(perMinute, "acme", 6, Long.MAX_VALUE).join()).isEqualTo(Take.ofReserved(0L));
		assertThat(plain.reserve(perMinute, "acme", 1, Long.MAX_VALUE).join())
				.isEqualTo(Take.ofRefused(Duration.ofSeconds(10).toNanos()));
		assertThat(now.available(perMinute, "acme")).isZero();
	}

	@Test
	void racingReservationsEachGetTheirOwnTurn() {
		now.tryTake(perMinute, "acme", 6);
		long[] waits = new long[4];
		AtomicInteger next = new AtomicInteger();
		Runnable reserve = () -> waits[next.getAndIncrement()] = now.reserve(perMinute, "acme", 1, Long.MAX_VALUE);
		RaceTestUtils.race(reserve, reserve, reserve, reserve);
		assertThat(waits).containsExactlyInAnyOrder(Duration.ofSeconds(10).toNanos(), Duration.ofSeconds(20).toNanos(),
				Duration.ofSeconds(30).toNanos(), Duration.ofSeconds(40).toNanos());
		assertThat(now.available(perMinute, "acme")).isEqualTo(-4);
	}

	@Test
	void idsHaveTheirOwnBuckets() {
		now.tryTake(perMinute, "acme", 6);
		assertThat(now.available(perMinute, "acme")).isZero();
		assertThat(now.available(perMinute, "globex")).isEqualTo(6);
	}

	@Test
	void moreThanTheCapacityIsNeverTaken() {
		long packed = now.tryTake(perMinute, "acme", 7);
		assertThat(Take.isTaken(packed)).isFalse();
		assertThat(Take.nanosToWait(packed)).isEqualTo(Long.MAX_VALUE);
		assertThat(now.available(perMinute, "acme")).isEqualTo(6);
	}

	@Test
	void takingRegardlessRunsIntoDebtThatRefillsPayFirst() {
		now.takeRegardless(perMinute, "acme", 8);
		assertThat(now.available(perMinute, "acme")).isEqualTo(-2);
		time.advanceTimeBy(Duration.ofSeconds(20));
		assertThat(now.available(perMinute, "acme")).isZero();
		time.advanceTimeBy(Duration.ofSeconds(10));
		assertThat(now.available(perMinute, "acme")).isEqualTo(1);
	}

	@Test
	void givingBackNeverExceedsTheCapacity() {
		now.tryTake(perMinute, "acme", 2);
		now.giveBack(perMinute, "acme", 5);
		assertThat(now.available(perMinute, "acme")).isEqualTo(6);
	}

	@Test
	void aPauseEmptiesTheBucketUntilItEnds() {
		now.pause(perMinute, "openai", Duration.ofSeconds(30));
		assertThat(Take.isTaken(now.tryTake(perMinute, "openai", 1))).isFalse();
		time.advanceTimeBy(Duration.ofSeconds(29));
		assertThat(now.available(perMinute, "openai")).isLessThanOrEqualTo(0);
		time.advanceTimeBy(Duration.ofSeconds(11));
		assertThat(Take.isTaken(now.tryTake(perMinute, "openai", 1))).isTrue();
	}

	@Test
	void aShorterPauseKeepsTheLongerOne() {
		now.pause(perMinute, "openai", Duration.ofSeconds(60));
		long before = now.available(perMinute, "openai");
		now.pause(perMinute, "openai", Duration.ofSeconds(10));
		assertThat(now.available(perMinute, "openai")).isEqualTo(before);
	}

	@Test
	void aChangedSpecMovesTheBucketKeepingItsFillInProportion() {
		now.tryTake(perMinute, "acme", 3);
		BucketSpec doubled = BucketSpec.of("tenant.requests", 12, Duration.ofMinutes(1));
		assertThat(now.available(doubled, "acme")).isEqualTo(6);
		assertThat(now.available(perMinute, "acme")).isEqualTo(3);
	}

	@Test
	void theFuturesGiveTheSameAnswersCompleted() {
		Take take = store.tryTake(perMinute, "acme", 6).join();
		assertThat(take).isEqualTo(Take.ofTaken(0));
		assertThat(store.tryTake(perMinute, "acme", 1).join().taken()).isFalse();
		store.giveBack(perMinute, "acme", 1).join();
		assertThat(store.available(perMinute, "acme").join()).isEqualTo(1);
		store.takeRegardless(perMinute, "acme", 3).join();
		assertThat(store.available(perMinute, "acme").join()).isEqualTo(-2);
		assertThat(store.tryTake(perMinute, "acme", 0)).isCompletedExceptionally();
	}

	@Test
	void badUnitsAreRefusedNamingTheValue() {
		assertThatThrownBy(() -> now.tryTake(perMinute, "acme", 0)).hasMessage("units must be >= 1, was 0");
		assertThatThrownBy(() -> now.giveBack(perMinute, "acme", -1)).hasMessage("units must be >= 0, was -1");
	}

	@Test
	void concurrentTakesNeverOverAdmit() {
		for (int round = 0; round < 200; round++) {
			store.clear();
			AtomicInteger admitted = new AtomicInteger();
			BucketSpec two = BucketSpec.of("provider.requests", 2, Duration.ofMinutes(1));
			Runnable take = () -> {
				if (Take.isTaken(now.tryTake(two, "key", 1))) {
					admitted.incrementAndGet();
				}
			};
			RaceTestUtils.race(take, take, take);
			assertThat(admitted.get()).isEqualTo(2);
		}
	}

	@Test
	void packingKeepsEveryOutcome() {
		assertThat(Take.unpack(Take.ofTaken(0).pack())).isEqualTo(Take.ofTaken(0));
		assertThat(Take.unpack(Take.ofRefused(0).pack())).isEqualTo(Take.ofRefused(0));
		assertThat(Take.unpack(Take.ofRefused(Long.MAX_VALUE).pack())).isEqualTo(Take.ofRefused(Long.MAX_VALUE));
	}

	@Test
	void specsAreCheckedNamingTheField() {
		assertThatThrownBy(() -> BucketSpec.of("has space", 1, Duration.ofSeconds(1)))
				.hasMessageContaining("bucket name must be").hasMessageContaining("'has space'");
		assertThatThrownBy(() -> BucketSpec.of("x", 0, Duration.ofSeconds(1)))
				.hasMessage("bucket x: capacity must be > 0, was 0");
		assertThatThrownBy(() -> BucketSpec.of("x", 1, Duration.ZERO))
				.hasMessage("bucket x: period must be > 0, was PT0S");
		assertThatThrownBy(() -> BucketSpec.of("x", 2, Duration.ofNanos(1)))
				.hasMessage("bucket x: capacity must refill at most one unit per nanosecond (Bucket4j's highest rate), "
						+ "was 2 per PT0.000000001S");
		assertThatThrownBy(() -> TenantLimits.unlimited().tokensPerMinute(60_000_000_001L))
				.hasMessage("tokensPerMinute must be > 0 and at most 60000000000, was 60000000001");
		assertThat(perMinute.refilledIn(Duration.ofSeconds(30))).isEqualTo(3);
		assertThat(perMinute.intervally().refilledIn(Duration.ofSeconds(30))).isEqualTo(6);
	}
	@Test
	void aResolvedBucketIsTheSameBucketAndFollowsAClearAndANewSpec() {
		BucketStore.Immediate.Resolved acme = now.resolve(perMinute, "acme");
		assertThat(acme.tryTakeQuietly(2)).isTrue();
		long packed = acme.tryTake(1);
		assertThat(Take.remaining(packed)).as("the lookup's bucket").isEqualTo(3);
		assertThat(now.available(perMinute, "acme")).isEqualTo(3);
		assertThat(acme.tryTakeQuietly(4)).isFalse();
		assertThat(Take.nanosToWait(acme.tryTake(4))).isEqualTo(Duration.ofSeconds(10).toNanos());

		store.clear();
		assertThat(acme.tryTakeQuietly(1)).as("a cleared store starts full, for the resolved bucket too").isTrue();
		assertThat(now.available(perMinute, "acme")).isEqualTo(5);

		// another spec of the same bucket (a live change): the resolved bucket sees it moved
		BucketSpec doubled = BucketSpec.of("tenant.requests", 12, Duration.ofMinutes(1));
		assertThat(now.available(doubled, "acme")).isEqualTo(10);
		assertThat(Take.remaining(acme.tryTake(1))).as("back on its own spec, the fill kept in proportion").isEqualTo(4);
		assertThatThrownBy(() -> acme.tryTakeQuietly(0)).isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void racingTakesThroughAResolvedBucketNeverTakeMoreThanItHolds() {
		for (int round = 0; round < 200; round++) {
			store.clear();
			BucketStore.Immediate.Resolved acme = now.resolve(perMinute, "acme");
			AtomicInteger taken = new AtomicInteger();
			Runnable take = () -> {
				for (int i = 0; i < 4; i++) {
					if (acme.tryTakeQuietly(1)) {
						taken.incrementAndGet();
					}
				}
			};
			RaceTestUtils.race(take, take, take);
			assertThat(taken.get()).isEqualTo(6);
			assertThat(now.available(perMinute, "acme")).isZero();
		}
	}

	@Test
	void theDefaultResolveLooksTheBucketUpOnEachTake() {
		BucketStore.Immediate plain = new BucketStore.Immediate() {
			@Override
			public long tryTake(BucketSpec spec, String id, long units) {
				return now.tryTake(spec, id, units);
			}

			@Override
			public void takeRegardless(BucketSpec spec, String id, long units) {
				now.takeRegardless(spec, id, units);
			}

			@Override
			public void giveBack(BucketSpec spec, String id, long units) {
				now.giveBack(spec, id, units);
			}

			@Override
			public void pause(BucketSpec spec, String id, Duration duration) {
				now.pause(spec, id, duration);
			}

			@Override
			public long available(BucketSpec spec, String id) {
				return now.available(spec, id);
			}
		};
		BucketStore.Immediate.Resolved acme = plain.resolve(perMinute, "acme");
		assertThat(acme.tryTakeQuietly(5)).isTrue();
		assertThat(Take.remaining(acme.tryTake(1))).isZero();
		assertThat(acme.tryTakeQuietly(1)).isFalse();
		store.clear();
		assertThat(acme.tryTakeQuietly(1)).isTrue();
	}
}
