package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.data.Offset.offset;

import java.time.Duration;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.testing.ManualClock;
import reactor.core.scheduler.Schedulers;
import reactor.test.util.RaceTestUtils;

class SuccessBatchTest {

	private static final long MS = 1_000_000L;
	private final BreakerConfig config = BreakerConfig.defaults();
	private final CountWindow window = new CountWindow(100);
	private final ManualClock clock = new ManualClock();

	/** Adds up what it is handed, per bin. */
	static final class Tally implements SuccessBatch.Batching {
		final long[] perBin = new long[TtftHistogram.BINS + 1];
		final AtomicLong total = new AtomicLong();
		final AtomicLong ttftSumNanos = new AtomicLong();
		long quietBelow = Long.MAX_VALUE;
		long lastNow;

		@Override
		public boolean batches() {
			return true;
		}

		@Override
		public long quietBelowNanos() {
			return quietBelow;
		}

		@Override
		public boolean onSuccesses(WindowCounts window, BreakerConfig config, SuccessBatch.Drained successes,
				long nowNanos) {
			lastNow = nowNanos;
			for (int i = 0; i < successes.size(); i++) {
				int bin = successes.bin(i);
				perBin[bin < 0 ? TtftHistogram.BINS : bin] += successes.count(i);
			}
			total.addAndGet(successes.total());
			ttftSumNanos.addAndGet(successes.ttftSumNanos());
			return false;
		}

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long ttft, boolean slow,
				long nowNanos) {
			throw new AssertionError("a batch hands over, it never records one call");
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			return 0;
		}
	}

	@Test
	void aHandOverCarriesEveryBatchedSuccessOnceWithItsBinAndTime() {
		Tally tally = new Tally();
		SuccessBatch batch = new SuccessBatch(tally, clock);
		long[] ttfts = { -1, 0, 999, 1_000, 250 * MS, 250 * MS, 3_000 * MS, Duration.ofHours(5).toNanos() };
		long expectedSum = 0;
		for (long ttft : ttfts) {
			assertThat(batch.add(ttft, 0, false)).isNotEqualTo(SuccessBatch.FULL);
			if (ttft >= 0) {
				expectedSum += Math.min(ttft / 1000, (1L << 31) - 1) * 1000;
			}
		}
		assertThat(batch.pending()).isEqualTo(ttfts.length);
		assertThat(batch.tryLock()).isTrue();
		batch.handOver(window, config, 42);
		assertThat(batch.tryLock()).as("the holder keeps the lock").isFalse();
		assertThat(batch.unlock()).as("no judgement was left to it").isFalse();

		assertThat(tally.total.get()).isEqualTo(ttfts.length);
		assertThat(tally.ttftSumNanos.get()).isEqualTo(expectedSum);
		assertThat(tally.perBin[TtftHistogram.BINS]).as("without a first token").isEqualTo(1);
		assertThat(tally.perBin[TtftHistogram.bin(250 * MS)]).isEqualTo(2);
		assertThat(tally.perBin[TtftHistogram.LAST]).isEqualTo(1);
		assertThat(tally.lastNow).isEqualTo(42);
		assertThat(window.calls()).as("the window counts them at the hand-over").isEqualTo(ttfts.length);
		assertThat(batch.pending()).isZero();
		assertThat(batch.tryLock()).isTrue();
		assertThat(batch.oweJudgement()).isTrue();
		assertThat(batch.unlock()).as("a judgement was left to it").isTrue();
		assertThat(batch.oweJudgement()).as("nothing on its way: the caller judges").isFalse();
	}

	@Test
	void theLimitFollowsTheTrafficSoASuccessWaitsAboutTenMillisecondsAtMost() {
		Tally tally = new Tally();
		SuccessBatch batch = new SuccessBatch(tally, clock);
		assertThat(batch.limit()).as("no batching before the traffic is known").isEqualTo(1);
		// heavy traffic: a success a microsecond
		for (int round = 0; round < 20; round++) {
			int code;
			do {
				clock.advanceNanos(1_000);
				code = batch.add(100 * MS, 0, false);
			}
			while (code == SuccessBatch.ADDED);
			assertThat(code).isEqualTo(SuccessBatch.ADDED_HAND_OVER);
			assertThat(batch.tryLock()).isTrue();
			batch.handOver(window, config, clock.nanoTime());
			batch.unlock();
		}
		assertThat(batch.limit()).isEqualTo(SuccessBatch.MAX_LIMIT);
		int stride = batch.stride();
		assertThat(stride).isEqualTo(SuccessBatch.MAX_STRIDE);
		// the traffic falls to a success a second: an add that reads the clock finds the batch old and
		// hands it over first, and the limit goes back to one call per batch
		int code;
		do {
			clock.advance(Duration.ofSeconds(1));
			code = batch.add(100 * MS, 0, false);
		}
		while (code == SuccessBatch.ADDED);
		assertThat(code).isEqualTo(SuccessBatch.HAND_OVER_FIRST);
		assertThat(batch.pending()).isEqualTo(stride);
		assertThat(batch.tryLock()).isTrue();
		batch.handOver(window, config, clock.nanoTime());
		batch.unlock();
		assertThat(batch.limit()).isEqualTo(1);
		clock.advance(Duration.ofSeconds(1));
		assertThat(batch.add(100 * MS, 0, false)).isEqualTo(SuccessBatch.ADDED_HAND_OVER);
	}

	@Test
	void aBatchThatWaitedPastTheBoundIsCountedRightAfterTheLastReadingBeforeThePause() {
		Tally tally = new Tally();
		SuccessBatch batch = new SuccessBatch(tally, clock);
		for (int i = 0; i < 10; i++) { // heavy traffic: a success a microsecond; the limit doubles
			clock.advanceNanos(1_000);
			batch.add(MS, 0, false);
			assertThat(batch.tryLock()).isTrue();
			batch.handOver(window, config, clock.nanoTime());
			batch.unlock();
		}
		assertThat(batch.limit()).isEqualTo(SuccessBatch.MAX_LIMIT);
		// three successes, the first of which reads the clock; then the traffic stops for five seconds
		clock.advanceNanos(1_000);
		long reading = clock.nanoTime();
		for (int i = 0; i < 3; i++) {
			assertThat(batch.add(MS, 0, false)).isEqualTo(SuccessBatch.ADDED);
		}
		clock.advance(Duration.ofSeconds(5));
		assertThat(batch.tryLock()).isTrue();
		batch.handOver(window, config, clock.nanoTime()); // a failure, or a read of the breaker
		batch.unlock();
		assertThat(tally.lastNow).isEqualTo(reading + SuccessBatch.MAX_AGE_NANOS);
		assertThat(tally.total.get()).isEqualTo(13);
	}

	@Test
	void aCallerWithTheTimeHandsOverABatchOlderThanTheBound() {
		SuccessBatch batch = new SuccessBatch(new Tally(), clock);
		for (int i = 0; i < 10; i++) { // a large limit
			batch.add(MS, 0, true);
			batch.tryLock();
			batch.handOver(window, config, 0);
			batch.unlock();
		}
		int stride = batch.stride();
		assertThat(stride).isGreaterThan(1);
		assertThat(batch.add(MS, 0, true)).isEqualTo(SuccessBatch.ADDED); // opens the batch
		for (int i = 1; i < stride; i++) { // no reading between two strides
			assertThat(batch.add(MS, Long.MAX_VALUE, true)).isEqualTo(SuccessBatch.ADDED);
		}
		assertThat(batch.add(MS, SuccessBatch.MAX_AGE_NANOS - 1, true)).isEqualTo(SuccessBatch.ADDED);
		for (int i = 1; i < stride; i++) {
			batch.add(MS, 0, true);
		}
		assertThat(batch.add(MS, SuccessBatch.MAX_AGE_NANOS, true)).isEqualTo(SuccessBatch.HAND_OVER_FIRST);
		assertThat(batch.pending()).isEqualTo(2L * stride);
	}

	@Test
	void aFullCellTurnsTheCallerAwayInsteadOfOverflowing() {
		SuccessBatch batch = new SuccessBatch(new Tally(), clock);
		long hours = Duration.ofHours(9).toNanos();
		for (int i = 0; i < SuccessBatch.HARD_LIMIT; i++) {
			assertThat(batch.add(hours, 0, false)).isNotEqualTo(SuccessBatch.FULL);
		}
		assertThat(batch.add(hours, 0, false)).isEqualTo(SuccessBatch.FULL);
		assertThat(batch.add(MS, 0, false)).as("other cells still take successes").isNotEqualTo(SuccessBatch.FULL);
		assertThat(batch.pending()).isEqualTo(SuccessBatch.HARD_LIMIT + 1);
	}

	@Test
	void racingAddersAndHandOversLoseAndRepeatNothing() {
		for (int round = 0; round < 50; round++) {
			Tally tally = new Tally();
			SuccessBatch batch = new SuccessBatch(tally, clock);
			int perThread = 20_000;
			AtomicLong accepted = new AtomicLong();
			AtomicLong acceptedNanos = new AtomicLong();
			Runnable adder = () -> {
				long n = 0;
				long nanos = 0;
				for (int i = 0; i < perThread; i++) {
					long ttft = (i % 7) * 40 * MS;
					int added = batch.add(ttft, 0, false);
					if (added != SuccessBatch.FULL) { // a full batch: the breaker records the call directly
						n++;
						nanos += ttft;
					}
					if (added != SuccessBatch.ADDED && batch.tryLock()) {
						batch.handOver(window, config, i);
						batch.unlock();
					}
				}
				accepted.addAndGet(n);
				acceptedNanos.addAndGet(nanos);
			};
			Runnable reader = () -> {
				for (int i = 0; i < 2_000; i++) {
					if (batch.tryLock()) {
						batch.handOver(window, config, i);
						batch.unlock();
					}
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), adder, adder, reader);
			assertThat(batch.tryLock()).isTrue();
			batch.handOver(window, config, 0);
			batch.unlock();
			// a hand-over descheduled mid-way leaves cells full: those calls were turned away, not lost
			assertThat(accepted.get()).isPositive();
			assertThat(tally.total.get()).isEqualTo(accepted.get());
			assertThat(tally.ttftSumNanos.get()).isEqualTo(acceptedNanos.get());
			assertThat(batch.pending()).isZero();
		}
	}

	@Test
	void theQuietBoundIsTheLowerEdgeOfTheFirstBinThatCounts() {
		SplittableRandom random = new SplittableRandom(7);
		for (int i = 0; i < 20_000; i++) {
			double threshold = i < TtftHistogram.BINS * 3 ? TtftHistogram.upperNanos(i / 3) + (i % 3) - 1
					: Math.exp(random.nextDouble(0, Math.log(2e13)));
			for (boolean reaching : new boolean[] { true, false }) {
				long expected = Long.MAX_VALUE;
				for (int bin = 0; bin < TtftHistogram.BINS; bin++) {
					long upper = TtftHistogram.upperNanos(bin);
					if (reaching ? upper >= threshold : upper > threshold) {
						expected = TtftHistogram.lowerNanos(bin);
						break;
					}
				}
				assertThat(TtftHistogram.quietBelow(threshold, reaching)).as("%s %s", threshold, reaching)
						.isEqualTo(expected);
			}
		}
	}

	@Test
	void batchedSuccessesReachThePoliciesBeforeTheNextFailureIsJudged() {
		ManualClock clock = new ManualClock();
		BreakerConfig all = BreakerConfig.custom().countWindow(1000).minimumCalls(10)
				.tripPolicy(TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.decayedFailureRate(),
						TripPolicy.performanceScore(Duration.ofMillis(300)),
						TripPolicy.adaptiveTtft().startingBaseline(Duration.ofMillis(300)),
						TripPolicy.ttftPercentile(Duration.ofSeconds(2))))
				.build();
		CircuitBreaker breaker = CircuitBreaker.builder("batched").config(all).clock(clock).build();
		for (int i = 0; i < 300; i++) {
			breaker.tryAcquire().record(Outcome.SUCCESS, 100 * MS);
		}
		assertThat(breaker.settings().batch.pending()).as("the fast successes wait in the batch").isPositive();
		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		assertThat(breaker.settings().batch.pending()).as("the failure handed them over first").isZero();
		TripPolicy.Evaluator[] evaluators = ((AnyOfPolicy.AnyOfEvaluator) breaker.evaluator()).evaluators();
		DecayedFailureRatePolicy.DecayedEvaluator decayed = (DecayedFailureRatePolicy.DecayedEvaluator) evaluators[1];
		// all at one time, so equal weights: exactly one failure in 301 calls
		assertThat(decayed.rate()).isCloseTo(1.0 / 301, offset(1e-12));
		PerformanceScorePolicy.ScoreEvaluator score = (PerformanceScorePolicy.ScoreEvaluator) evaluators[2];
		assertThat(score.ttftRatio()).isCloseTo(100.0 / 300, offset(1e-9));
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void aSuccessThatMayRaiseThePressureIsNotBatchedSoItTripsAtOnce() {
		ManualClock clock = new ManualClock();
		BreakerConfig config = BreakerConfig.custom().countWindow(1000).minimumCalls(5)
				.slowTimeToFirstToken(Duration.ofSeconds(60))
				.tripPolicy(TripPolicy.anyOf(TripPolicy.failureRate(),
						TripPolicy.ttftPercentile(Duration.ofSeconds(1)).minSamples(20)))
				.build();
		CircuitBreaker breaker = CircuitBreaker.builder("latency").config(config).clock(clock).build();
		for (int i = 0; i < 1000; i++) {
			breaker.tryAcquire().record(Outcome.SUCCESS, 100 * MS); // heavy traffic: a large batch limit
		}
		assertThat(breaker.settings().batch.limit()).isGreaterThan(1);
		for (int i = 0; i < 2000 && breaker.state() == BreakerState.CLOSED; i++) {
			breaker.tryAcquire().record(Outcome.SUCCESS, 3_000 * MS);
		}
		assertThat(breaker.state()).as("p95 over 1 s, from successes alone, with no read of the breaker")
				.isEqualTo(BreakerState.OPEN);
	}

	@Test
	void aFailureRecordedWhileABatchIsOnItsWayIsJudgedOnceTheBatchIsIn() {
		ManualClock clock = new ManualClock();
		BreakerConfig config = BreakerConfig.custom().minimumCalls(5).failureRateThreshold(0.5)
				.tripPolicy(TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.decayedFailureRate())).build();
		CircuitBreaker breaker = CircuitBreaker.builder("in-flight").config(config).clock(clock).build();
		for (int i = 0; i < 100; i++) {
			breaker.tryAcquire().record(Outcome.SUCCESS, MS);
		}
		CircuitBreaker.Settings s = breaker.settings();
		assertThat(s.batch.pending()).isEqualTo(36);
		assertThat(s.batch.tryLock()).as("a hand-over starts on another thread").isTrue();
		for (int i = 0; i < 70; i++) {
			breaker.tryAcquire().record(Outcome.FAILURE, -1);
		}
		// without the 36 successes on their way, 70 of 134 calls failed: not the breaker's evidence
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		breaker.handOverLocked(s, s.batch, clock.nanoTime(), false);
		// the hand-over judged what the failures left to it: 70 of 170 failed
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(breaker.snapshot().calls()).isEqualTo(170);
		int more = 0;
		while (breaker.state() == BreakerState.CLOSED && more < 100) {
			breaker.tryAcquire().record(Outcome.FAILURE, -1);
			more++;
		}
		assertThat(more).as("trips at 100 of 200").isEqualTo(30);
	}
}
