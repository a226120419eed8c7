package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CountWindowTest {

	private static final int FAIL = SlidingWindow.CALL_BIT | SlidingWindow.FAILURE_BIT;
	private static final int OK = SlidingWindow.CALL_BIT;

	private static void assertConsistent(SlidingWindow w) {
		for (int k = 0; k < SlidingWindow.WIDTH; k++) {
			assertThat(w.slotSum(k)).as("counter %d", k).isEqualTo(w.total(k));
		}
	}

	@Test
	void keepsTheLastNCallsWhateverTheirAge() {
		CountWindow w = new CountWindow(4);
		w.record(0, FAIL);
		w.record(0, FAIL);
		w.record(0, OK);
		w.record(0, OK);
		assertThat(w.failureRate()).isEqualTo(0.5);

		w.record(Long.MAX_VALUE, OK); // time means nothing; the oldest failure goes
		assertThat(w.calls()).isEqualTo(4);
		assertThat(w.failures()).isEqualTo(1);
		w.record(0, OK | SlidingWindow.SLOW_BIT);
		assertThat(w.failures()).isZero();
		assertThat(w.slowCalls()).isEqualTo(1);
		assertConsistent(w);
	}

	@Test
	void stallsAndIncompleteAreCountedAndReplaced() {
		CountWindow w = new CountWindow(2);
		w.record(0, FAIL | SlidingWindow.STALL_BIT);
		w.record(0, FAIL | SlidingWindow.INCOMPLETE_BIT);
		assertThat(w.stalls()).isEqualTo(1);
		assertThat(w.incomplete()).isEqualTo(1);
		w.record(0, OK);
		w.record(0, OK);
		assertThat(w.stalls()).isZero();
		assertThat(w.incomplete()).isZero();
		assertConsistent(w);
	}

	@Test
	void resetEmptiesTheWindowAndNewCallsRefillIt() {
		CountWindow w = new CountWindow(3);
		w.record(0, FAIL);
		w.record(0, FAIL);
		w.reset();
		assertThat(w.calls()).isZero();
		for (int i = 0; i < 5; i++) {
			w.record(0, OK);
		}
		assertThat(w.calls()).isEqualTo(3);
		assertConsistent(w);
	}

	@Test
	void aFailureSlidesOutAfterExactlySizeCallsWhenTheSuccessesBeforeItWroteNothing() {
		CountWindow w = new CountWindow(3);
		for (int i = 0; i < 8; i++) {
			w.record(0, OK); // from the 4th on, a success replaces a success: nothing is written
		}
		w.record(0, FAIL);
		assertThat(w.failures()).isEqualTo(1);
		w.record(0, OK);
		w.record(0, OK | SlidingWindow.SLOW_BIT);
		assertThat(w.failures()).isEqualTo(1);
		assertThat(w.slowCalls()).isEqualTo(1);
		w.record(0, OK); // the failure is the 3rd call back: it leaves
		assertThat(w.failures()).isZero();
		assertThat(w.slowCalls()).isEqualTo(1);
		w.record(0, OK);
		w.record(0, OK);
		assertThat(w.slowCalls()).isZero();
		assertThat(w.calls()).isEqualTo(3);
		assertConsistent(w);
	}

	@Test
	void aRunOfSuccessesCountsAsThatManySingleRecords() {
		java.util.SplittableRandom random = new java.util.SplittableRandom(3);
		for (int round = 0; round < 500; round++) {
			int size = 1 + random.nextInt(12);
			CountWindow bulk = new CountWindow(size);
			CountWindow single = new CountWindow(size);
			for (int step = 0; step < 20; step++) {
				if (random.nextBoolean()) {
					int flags = random.nextBoolean() ? FAIL : OK | SlidingWindow.SLOW_BIT;
					bulk.record(0, flags);
					single.record(0, flags);
				}
				else {
					int run = random.nextInt(2 * size + 2);
					assertThat(bulk.recordSuccesses(0, run)).isTrue();
					for (int i = 0; i < run; i++) {
						single.record(0, OK);
					}
				}
				for (int k = 0; k < SlidingWindow.WIDTH; k++) {
					assertThat(bulk.total(k)).as("round %d counter %d", round, k).isEqualTo(single.total(k));
				}
				assertConsistent(bulk);
			}
		}
	}

}
