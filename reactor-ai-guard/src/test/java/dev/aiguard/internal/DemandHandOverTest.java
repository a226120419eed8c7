package dev.aiguard.internal;

import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.scheduler.Schedulers;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;

class DemandHandOverTest {

	/** An inner subscription that counts what it was asked for and claims to have delivered {@code delivered}. */
	static final class Inner implements Subscription {

		final AtomicLong requested = new AtomicLong();
		final long delivered;

		Inner(long delivered) {
			this.delivered = delivered;
		}

		@Override
		public void request(long n) {
			requested.addAndGet(n);
		}

		@Override
		public void cancel() {
		}
	}

	static final class Ladder extends DemandHandOver<Inner> {

		void request(long n) {
			addDemand(n);
		}

		void next(Inner inner) {
			handOver(inner);
		}

		@Override
		protected long consumedBy(Inner previous) {
			return previous.delivered;
		}
	}

	@Test
	void theNextOneIsAskedOnlyForWhatThePreviousDidNotDeliver() {
		Ladder ladder = new Ladder();
		ladder.request(10);
		Inner first = new Inner(4);
		ladder.next(first);
		assertThat(first.requested).hasValue(10);
		Inner second = new Inner(0);
		ladder.next(second);
		assertThat(second.requested).hasValue(6);
		ladder.request(5);
		assertThat(second.requested).hasValue(11);
		assertThat(ladder.outstandingDemand()).isEqualTo(11);
	}

	@Test
	void unboundedDemandStaysUnbounded() {
		Ladder ladder = new Ladder();
		ladder.request(Long.MAX_VALUE);
		Inner first = new Inner(7);
		ladder.next(first);
		Inner second = new Inner(0);
		ladder.next(second);
		assertThat(second.requested).hasValue(Long.MAX_VALUE);
	}

	// new demand races the hand-over to the next inner; the two overlap in well under 1 % of rounds, hence 500
	@RepeatedTest(500)
	void demandRacingAHandOverIsNeitherLostNorDoubled() {
		Ladder ladder = new Ladder();
		ladder.request(3);
		Inner first = new Inner(2);
		ladder.next(first);
		Inner second = new Inner(0);

		RaceTestUtils.race(Schedulers.boundedElastic(), () -> ladder.request(5), () -> ladder.next(second));

		// whichever came first, the second is asked for everything the first did not deliver
		assertThat(second.requested).hasValue(3 + 5 - 2);
		assertThat(first.requested.get()).isIn(3L, 8L);
	}

	// three threads add demand at once; at least two of them overlap in ~3 % of rounds
	@RepeatedTest(100)
	void concurrentDemandAddsUp() {
		Ladder ladder = new Ladder();
		Inner only = new Inner(0);
		ladder.next(only);

		RaceTestUtils.race(Schedulers.boundedElastic(), () -> ladder.request(1), () -> ladder.request(2),
				() -> ladder.request(4));

		assertThat(only.requested).hasValue(7);
		assertThat(ladder.outstandingDemand()).isEqualTo(7);
	}
}
