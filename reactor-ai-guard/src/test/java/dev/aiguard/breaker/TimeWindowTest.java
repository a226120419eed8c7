package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;

import org.junit.jupiter.api.Test;

class TimeWindowTest {

	private static final long SECOND = 1_000_000_000L;
	private static final int FAIL = SlidingWindow.CALL_BIT | SlidingWindow.FAILURE_BIT;
	private static final int OK = SlidingWindow.CALL_BIT;

	private static void assertConsistent(SlidingWindow w) {
		for (int k = 0; k < SlidingWindow.WIDTH; k++) {
			assertThat(w.slotSum(k)).as("counter %d", k).isEqualTo(w.total(k));
		}
	}

	@Test
	void countsEveryKindInItsOwnCounter() {
		TimeWindow w = new TimeWindow(60, SECOND, 0);
		w.record(0, OK);
		w.record(1, OK | SlidingWindow.SLOW_BIT);
		w.record(2, FAIL | SlidingWindow.STALL_BIT);
		w.record(3, FAIL | SlidingWindow.INCOMPLETE_BIT);

		assertThat(w.calls()).isEqualTo(4);
		assertThat(w.failures()).isEqualTo(2);
		assertThat(w.slowCalls()).isEqualTo(1);
		assertThat(w.stalls()).isEqualTo(1);
		assertThat(w.incomplete()).isEqualTo(1);
		assertThat(w.failureRate()).isEqualTo(0.5);
		assertConsistent(w);
	}

	@Test
	void bucketsSlideOutAndAreSubtractedFromTheTotals() {
		TimeWindow w = new TimeWindow(3, SECOND, 0);
		w.record(0, FAIL);                  // epoch 0
		w.record(SECOND, OK);               // epoch 1
		w.record(2 * SECOND + 5, OK);       // epoch 2
		assertThat(w.calls()).isEqualTo(3);

		w.record(3 * SECOND, OK);           // epoch 3 evicts epoch 0 (the failure)
		assertThat(w.calls()).isEqualTo(3);
		assertThat(w.failures()).isZero();
		assertConsistent(w);
	}

	@Test
	void readingAfterALongSilenceShowsAnEmptyWindow() {
		TimeWindow w = new TimeWindow(60, SECOND, 0);
		w.record(0, FAIL);
		w.record(SECOND, FAIL);
		w.advanceTo(59 * SECOND);
		assertThat(w.calls()).isEqualTo(2);
		w.advanceTo(60 * SECOND);
		assertThat(w.calls()).isEqualTo(1);
		w.advanceTo(1000 * SECOND);
		assertThat(w.calls()).isZero();
		assertConsistent(w);
	}

	@Test
	void aJumpFarAheadEmptiesEveryBucketOnce() {
		TimeWindow w = new TimeWindow(4, SECOND, 0);
		for (int i = 0; i < 4; i++) {
			w.record(i * SECOND, FAIL);
		}
		w.record(1_000_000 * SECOND, OK);
		assertThat(w.calls()).isEqualTo(1);
		assertThat(w.failures()).isZero();
		assertConsistent(w);
	}

	@Test
	void lateRecordsInsideTheWindowLandInTheirOwnBucket() {
		TimeWindow w = new TimeWindow(3, SECOND, 0);
		w.record(2 * SECOND, OK);
		w.record(SECOND, FAIL); // a thread that read the clock a second ago
		assertThat(w.failures()).isEqualTo(1);

		w.record(4 * SECOND, OK); // epoch 1 slides out with its failure
		assertThat(w.failures()).isZero();
		assertConsistent(w);
	}

	@Test
	void recordsOlderThanTheWindowAreDropped() {
		TimeWindow w = new TimeWindow(3, SECOND, 0);
		w.record(10 * SECOND, OK);
		assertThat(w.record(7 * SECOND, FAIL)).isFalse();
		assertThat(w.record(8 * SECOND, FAIL)).isTrue();
		assertThat(w.calls()).isEqualTo(2);
		assertConsistent(w);
	}

	@Test
	void aClockSteppingBackwardsNeverCorruptsTheCounts() {
		TimeWindow w = new TimeWindow(5, SECOND, 0);
		long[] times = { 100, 101, 50, 102, 99, 3, 104, 200, 150, 199, 201, -7, 205 };
		long accepted = 0;
		for (long t : times) {
			if (w.record(t * SECOND, FAIL)) {
				accepted++;
			}
			assertConsistent(w);
			assertThat(w.calls()).isBetween(0L, accepted);
			assertThat(w.failures()).isEqualTo(w.calls());
		}
		// the window ends at epoch 205: epochs 201 and 205 are inside, 200 and older are not
		assertThat(w.calls()).isEqualTo(2);
	}

	@Test
	void negativeClockOriginsWork() {
		long start = Long.MIN_VALUE / 2;
		TimeWindow w = new TimeWindow(3, SECOND, start);
		w.record(start, FAIL);
		w.record(start + SECOND, OK);
		w.record(start + 3 * SECOND, OK);
		assertThat(w.calls()).isEqualTo(2);
		assertThat(w.failures()).isZero();
		assertConsistent(w);
	}

	@Test
	void recordsFromBeforeTheWindowWasMadeAreDropped() {
		TimeWindow w = new TimeWindow(3, SECOND, 100 * SECOND);
		assertThat(w.record(97 * SECOND, FAIL)).isTrue();
		assertThat(w.record(96 * SECOND, FAIL)).isFalse();
		assertThat(w.calls()).isEqualTo(1);
		assertConsistent(w);
	}

	@Test
	void countsSaturateInsteadOfOverflowingIntoTheEpoch() {
		TimeWindow w = new TimeWindow(1, SECOND, 0);
		long max = TimeWindow.COUNT_MASK;
		w.record(0, OK);
		w.setHeadCount(SlidingWindow.CALLS, max - 2);
		assertThat(w.record(0, OK)).isTrue();
		assertThat(w.record(0, OK)).isTrue();
		assertThat(w.record(0, OK)).isFalse();
		assertThat(w.calls()).isEqualTo(max);
		w.record(SECOND, OK); // seals the full bucket, then evicts it
		assertThat(w.calls()).isEqualTo(1);
		assertConsistent(w);
	}

	@Test
	void aFullSealedBucketSaturatesLateRecordsToo() {
		TimeWindow w = new TimeWindow(3, SECOND, 0);
		w.record(0, OK);
		w.setHeadCount(SlidingWindow.CALLS, TimeWindow.COUNT_MASK);
		w.record(SECOND, OK); // epoch 0 is sealed with a full count
		assertThat(w.record(5, OK)).isFalse();
		assertThat(w.calls()).isEqualTo(TimeWindow.COUNT_MASK + 1);
		assertConsistent(w);
	}

	@Test
	void resetEmptiesTheWindowButKeepsCounting() {
		TimeWindow w = new TimeWindow(3, SECOND, 0);
		w.record(0, FAIL);
		w.record(SECOND, FAIL);
		w.reset();
		assertThat(w.calls()).isZero();
		w.record(SECOND, OK);
		assertThat(w.calls()).isEqualTo(1);
		assertConsistent(w);
	}

	private static long closed(SlidingWindow w, int counter) {
		return (long) SlidingWindow.LONGS.getVolatile(w.totals, counter);
	}

	@Test
	void theNewestBucketIsCountedOnTheFlyAndJoinsTheTotalsWhenTheHeadMovesOn() {
		TimeWindow w = new TimeWindow(60, SECOND, 0);
		w.record(0, OK);
		w.record(1, FAIL);
		w.record(2, OK);
		assertThat(w.calls()).isEqualTo(3);
		assertThat(closed(w, SlidingWindow.CALLS)).as("recording touched no total").isZero();

		w.advanceTo(SECOND);
		assertThat(closed(w, SlidingWindow.CALLS)).isEqualTo(3);
		assertThat(closed(w, SlidingWindow.FAILURES)).isEqualTo(1);
		assertThat(w.calls()).isEqualTo(3);
		assertThat(w.failures()).isEqualTo(1);
		assertConsistent(w);
	}

	@Test
	void aLateRecordInAClosedBucketCountsAndLeavesWithItsBucket() {
		TimeWindow w = new TimeWindow(3, SECOND, 0);
		w.record(0, OK);
		w.record(2 * SECOND, OK);
		assertThat(w.record(5, FAIL)).isTrue(); // epoch 0, closed already
		assertThat(w.record(SECOND, FAIL)).isTrue(); // epoch 1, never the head
		assertThat(w.calls()).isEqualTo(4);
		assertThat(w.failures()).isEqualTo(2);
		assertConsistent(w);

		w.advanceTo(3 * SECOND); // epoch 0 leaves with its late failure
		assertThat(w.calls()).isEqualTo(2);
		assertThat(w.failures()).isEqualTo(1);
		w.advanceTo(4 * SECOND); // then epoch 1
		assertThat(w.calls()).isEqualTo(1);
		assertThat(w.failures()).isZero();
		assertConsistent(w);
	}

	@Test
	void millisecondBucketsStillCountAfterDecades() {
		long millis = 1_000_000L;
		TimeWindow w = new TimeWindow(60, millis, 0);
		long decades = Duration.ofDays(365L * 40).toNanos();
		assertThat(w.record(decades, FAIL)).isTrue();
		assertThat(w.record(decades + 59 * millis, OK)).isTrue();
		assertThat(w.calls()).isEqualTo(2);
		assertThat(w.record(decades + 60 * millis, OK)).isTrue();
		assertThat(w.calls()).isEqualTo(2);
		assertThat(w.failures()).isZero();
		assertConsistent(w);
	}

	@Test
	void slotsSharedByEpochsALapApartNeverMix() {
		// 3 buckets in a ring of 64 slots: epochs 0 and 64 share a slot
		TimeWindow w = new TimeWindow(3, SECOND, 0);
		w.record(0, FAIL);
		w.record(64 * SECOND, OK);
		assertThat(w.calls()).isEqualTo(1);
		assertThat(w.failures()).isZero();
		assertThat(w.record(0, FAIL)).as("a lap too late").isFalse();
		w.record(65 * SECOND, OK);
		w.record(66 * SECOND, FAIL);
		w.record(67 * SECOND, OK); // epoch 64 leaves
		assertThat(w.calls()).isEqualTo(3);
		assertThat(w.failures()).isEqualTo(1);
		assertConsistent(w);
	}

	@Test
	void aRunOfSuccessesCountsAsThatManySingleRecordsInTheHeadOrALateBucket() {
		TimeWindow bulk = new TimeWindow(3, SECOND, 0);
		TimeWindow single = new TimeWindow(3, SECOND, 0);
		long[][] runs = { { 0, 5 }, { SECOND, 7 }, { 0, 2 }, { 2 * SECOND, 300 }, { 4 * SECOND, 1 },
				{ 3 * SECOND, 4 }, { 0, 9 } }; // the last is older than the window: dropped
		for (long[] run : runs) {
			boolean counted = bulk.recordSuccesses(run[0], run[1]);
			boolean any = false;
			for (int i = 0; i < run[1]; i++) {
				any |= single.record(run[0], OK);
			}
			assertThat(counted).as("run at %d", run[0]).isEqualTo(any);
			assertThat(bulk.calls()).as("run at %d", run[0]).isEqualTo(single.calls());
		}
		bulk.advanceTo(10 * SECOND);
		single.advanceTo(10 * SECOND);
		assertThat(bulk.calls()).isZero().isEqualTo(single.calls());
		assertThat(bulk.recordSuccesses(10 * SECOND, 0)).isTrue();
	}

}
