package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.testing.ManualClock;
import dev.aiguard.testing.RecordingMetrics;
import reactor.core.scheduler.Schedulers;
import reactor.test.util.RaceTestUtils;

/**
 * Many threads recording while transitions happen: no lost counts, one CAS per transition, never
 * more HALF_OPEN probes than configured, and a cancelled probe always gives its slot back.
 */
class CircuitBreakerRaceTest {

	private static final long FAST = Duration.ofMillis(100).toNanos();

	private final ManualClock clock = new ManualClock();

	private static BreakerConfig.Builder base() {
		return BreakerConfig.custom().failureRateThreshold(0.5).openWait(Duration.ofSeconds(10)).openWaitJitter(0)
				.minimumDwell(Duration.ZERO);
	}

	private static void assertConsistent(SlidingWindow w) {
		for (int k = 0; k < SlidingWindow.WIDTH; k++) {
			assertThat(w.slotSum(k)).as("counter %d", k).isEqualTo(w.total(k));
		}
	}

	@Test
	void recordingWhileOperatorsFlipTheStateLosesNoCount() {
		for (BreakerConfig config : new BreakerConfig[] { base().minimumCalls(1_000_000).build(),
				base().minimumCalls(1_000_000).countWindow(100_000).build() }) {
			CircuitBreaker breaker = CircuitBreaker.builder("race").config(config).clock(clock).build();
			int perThread = 5_000;
			BreakerPermit[][] permits = new BreakerPermit[4][perThread];
			for (BreakerPermit[] row : permits) {
				for (int i = 0; i < perThread; i++) {
					row[i] = breaker.tryAcquire();
				}
			}
			AtomicBoolean done = new AtomicBoolean();
			AtomicInteger running = new AtomicInteger(4);
			Runnable[] tasks = new Runnable[5];
			for (int t = 0; t < 4; t++) {
				BreakerPermit[] row = permits[t];
				tasks[t] = () -> {
					for (int i = 0; i < row.length; i++) {
						Outcome o = i % 4 == 0 ? Outcome.STALLED : i % 4 == 1 ? Outcome.FAILURE : Outcome.SUCCESS;
						row[i].record(o, FAST);
						row[i].record(Outcome.SUCCESS, FAST); // a racing second settlement is ignored
					}
					if (running.decrementAndGet() == 0) {
						done.set(true);
					}
				};
			}
			tasks[4] = () -> {
				while (!done.get()) {
					breaker.transitionToForcedOpen();
					breaker.transitionToDisabled();
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), tasks);

			BreakerSnapshot s = breaker.snapshot();
			assertThat(s.calls()).isEqualTo(4L * perThread);
			assertThat(s.failures()).isEqualTo(2L * perThread);
			assertThat(s.stalls()).isEqualTo(perThread);
			assertConsistent(breaker.window());
		}
	}

	@Test
	void batchedSuccessesRacingFailuresAndReadsLoseNoCountInTheWindowOrThePolicies() {
		TripPolicy batching = TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.decayedFailureRate());
		for (BreakerConfig config : new BreakerConfig[] { base().minimumCalls(1_000_000).tripPolicy(batching).build(),
				base().minimumCalls(1_000_000).countWindow(100_000).tripPolicy(batching).build() }) {
			CircuitBreaker breaker = CircuitBreaker.builder("batched-race").config(config).clock(clock).build();
			assertThat(breaker.settings().batch).as("the policy batches fast successes").isNotNull();
			int perThread = 5_000;
			AtomicInteger running = new AtomicInteger(4);
			Runnable[] tasks = new Runnable[5];
			for (int t = 0; t < 4; t++) {
				tasks[t] = () -> {
					for (int i = 0; i < perThread; i++) {
						breaker.tryAcquire().record(i % 4 == 0 ? Outcome.FAILURE : Outcome.SUCCESS, FAST);
					}
					running.decrementAndGet();
				};
			}
			tasks[4] = () -> {
				while (running.get() > 0) {
					breaker.snapshot(); // every read hands the batch over
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), tasks);

			BreakerSnapshot s = breaker.snapshot();
			assertThat(s.calls()).isEqualTo(4L * perThread);
			assertThat(s.failures()).isEqualTo(perThread);
			assertConsistent(breaker.window());
			DecayedFailureRatePolicy.DecayedEvaluator decayed = (DecayedFailureRatePolicy.DecayedEvaluator)
					((AnyOfPolicy.AnyOfEvaluator) breaker.evaluator()).evaluators()[1];
			// one clock reading for every call: equal weights, so the decayed rate is the plain one
			assertThat(decayed.rate()).isEqualTo(0.25);
			assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		}
	}

	@Test
	void concurrentFailuresTripExactlyOnce() {
		for (int round = 0; round < 200; round++) {
			RecordingMetrics metrics = new RecordingMetrics();
			AtomicInteger openEvents = new AtomicInteger();
			CircuitBreaker breaker = CircuitBreaker.builder("race").config(base().minimumCalls(4).build())
					.clock(clock).metrics(metrics).listener(e -> {
						if (e instanceof BreakerEvent.StateTransition t && t.to() == BreakerState.OPEN) {
							openEvents.incrementAndGet();
						}
					}).build();
			BreakerPermit[] permits = new BreakerPermit[8];
			for (int i = 0; i < permits.length; i++) {
				permits[i] = breaker.tryAcquire();
			}
			Runnable[] tasks = new Runnable[4];
			for (int t = 0; t < 4; t++) {
				int first = t * 2;
				tasks[t] = () -> {
					permits[first].record(Outcome.FAILURE, -1);
					permits[first + 1].record(Outcome.FAILURE, -1);
				};
			}
			RaceTestUtils.race(Schedulers.boundedElastic(), tasks);

			assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
			assertThat(metrics.transitions()).containsExactly("CLOSED->OPEN");
			assertThat(openEvents).hasValue(1);
			assertThat(breaker.snapshot().failures()).isEqualTo(8);
		}
	}

	private CircuitBreaker halfOpen(BreakerConfig config) {
		CircuitBreaker breaker = CircuitBreaker.builder("race").config(config).clock(clock).build();
		for (int i = 0; i < config.minimumCalls(); i++) {
			breaker.tryAcquire().record(Outcome.FAILURE, -1);
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		clock.advance(config.openWait());
		return breaker;
	}

	@Test
	void neverMoreProbesThanConfigured() {
		BreakerConfig config = base().minimumCalls(2).halfOpenProbes(5).successesToClose(5).build();
		for (int round = 0; round < 300; round++) {
			CircuitBreaker breaker = halfOpen(config);
			AtomicInteger granted = new AtomicInteger();
			Runnable grab = () -> {
				for (int i = 0; i < 10; i++) {
					if (breaker.tryAcquire() != null) {
						granted.incrementAndGet();
					}
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), grab, grab, grab, grab);

			assertThat(granted).hasValue(5);
			assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		}
	}

	@Test
	void cancellingProbesWhileOthersGrabThemAlwaysGivesTheSlotsBack() {
		BreakerConfig config = base().minimumCalls(2).halfOpenProbes(3).successesToClose(3).build();
		for (int round = 0; round < 100; round++) {
			CircuitBreaker breaker = halfOpen(config);
			AtomicInteger maxInFlight = new AtomicInteger();
			AtomicInteger inFlight = new AtomicInteger();
			Runnable churn = () -> {
				for (int i = 0; i < 200; i++) {
					BreakerPermit p = breaker.tryAcquire();
					if (p != null) {
						maxInFlight.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
						inFlight.decrementAndGet();
						p.record(Outcome.CANCELLED, -1);
					}
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), churn, churn, churn, churn);

			assertThat(maxInFlight.get()).isLessThanOrEqualTo(3);
			assertThat(breaker.phase().granted).isZero();
			assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
			for (int i = 0; i < 3; i++) {
				assertThat(breaker.tryAcquire()).as("slot %d came back", i).isNotNull();
			}
			assertThat(breaker.tryAcquire()).isNull();
		}
	}

	@Test
	void aProbeSettledAndCancelledAtOnceCountsOnceOrGivesItsSlotBackNeverBoth() {
		BreakerConfig config = base().minimumCalls(2).halfOpenProbes(3).successesToClose(3).build();
		for (int round = 0; round < 500; round++) {
			CircuitBreaker breaker = halfOpen(config);
			BreakerPermit probe = breaker.tryAcquire();
			RaceTestUtils.race(Schedulers.boundedElastic(), () -> probe.record(Outcome.SUCCESS, FAST),
					() -> probe.record(Outcome.CANCELLED, -1));

			BreakerPhase phase = breaker.phase();
			int probeCalls = BreakerPhase.field(phase.probes, BreakerPhase.CALLS);
			if (probeCalls == 1) {
				assertThat(phase.granted).isEqualTo(1);
			}
			else {
				assertThat(probeCalls).isZero();
				assertThat(phase.granted).isZero();
			}
		}
	}

	@Test
	void aProbeSettledWithTwoCountingOutcomesAtOnceCountsExactlyOnce() {
		BreakerConfig config = base().minimumCalls(2).halfOpenProbes(3).successesToClose(3).build();
		for (int round = 0; round < 500; round++) {
			CircuitBreaker breaker = halfOpen(config);
			BreakerPermit probe = breaker.tryAcquire();
			long now = clock.nanoTime();
			RaceTestUtils.race(Schedulers.boundedElastic(), () -> probe.record(Outcome.SUCCESS, FAST, now),
					() -> probe.record(Outcome.FAILURE, -1, now));

			BreakerPhase phase = breaker.phase();
			long tally = phase.probes;
			assertThat(BreakerPhase.field(tally, BreakerPhase.CALLS)).isEqualTo(1);
			assertThat(BreakerPhase.field(tally, BreakerPhase.FAILURES)
					+ BreakerPhase.field(tally, BreakerPhase.HEALTHY)).isEqualTo(1);
		}
	}

	@Test
	void aClosedPermitSettledOnOneThreadIsIgnoredOnAnother() throws InterruptedException {
		CircuitBreaker breaker = CircuitBreaker.builder("race").config(base().minimumCalls(1_000_000).build())
				.clock(clock).build();
		BreakerPermit[] permits = new BreakerPermit[2_000];
		for (int i = 0; i < permits.length; i++) {
			permits[i] = breaker.tryAcquire(clock.nanoTime());
		}
		Thread first = new Thread(() -> {
			for (BreakerPermit p : permits) {
				p.record(Outcome.FAILURE, -1, clock.nanoTime());
			}
		});
		first.start();
		first.join(); // the happens-before edge between the first settlement and the repeats
		Runnable repeat = () -> {
			for (BreakerPermit p : permits) {
				p.record(Outcome.SUCCESS, FAST);
				p.record(Outcome.STALLED, -1, clock.nanoTime());
			}
		};
		RaceTestUtils.race(Schedulers.boundedElastic(), repeat, repeat);

		BreakerSnapshot s = breaker.snapshot();
		assertThat(s.calls()).isEqualTo(permits.length);
		assertThat(s.failures()).isEqualTo(permits.length);
		assertThat(s.stalls()).isZero();
	}

	@Test
	void timestampedRecordsFromManyThreadsWhileTheBucketsTurnLoseNoCount() {
		for (int round = 0; round < 5; round++) {
			ManualClock time = new ManualClock();
			// 3600 buckets of 1 ms: the ticker below never lets one slide out
			BreakerConfig config = base().minimumCalls(1_000_000).timeWindow(3600, Duration.ofMillis(1)).build();
			CircuitBreaker breaker = CircuitBreaker.builder("race").config(config).clock(time).build();
			int perWriter = 20_000;
			AtomicInteger running = new AtomicInteger(3);
			Runnable writer = () -> {
				for (int i = 0; i < perWriter; i++) {
					long now = time.nanoTime();
					Outcome o = i % 5 == 0 ? Outcome.STALLED : Outcome.SUCCESS;
					breaker.tryAcquire(now).record(o, FAST, now);
				}
				running.decrementAndGet();
			};
			Runnable ticker = () -> {
				// a new bucket every 4 steps, turned by whoever comes first: a writer or this reader
				for (int step = 0; step < 3_000_000 && running.get() > 0; step++) {
					time.advanceNanos(250_000);
					if (step % 4 == 0) {
						breaker.snapshot();
					}
					if (time.nanoTime() > Duration.ofSeconds(3).toNanos()) {
						break;
					}
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), writer, writer, writer, ticker);

			BreakerSnapshot s = breaker.snapshot();
			assertThat(s.calls()).isEqualTo(3L * perWriter);
			assertThat(s.stalls()).isEqualTo(3L * perWriter / 5);
			assertConsistent(breaker.window());
		}
	}

	@Test
	void lateRecordsIntoClosedBucketsWhileTheHeadMovesLoseNoCount() {
		for (int round = 0; round < 20; round++) {
			ManualClock time = new ManualClock();
			TimeWindow window = new TimeWindow(100_000, 1_000, 0);
			int perWriter = 30_000;
			AtomicInteger running = new AtomicInteger(3);
			Runnable writer = () -> {
				for (int i = 0; i < perWriter; i++) {
					// up to 40 buckets late: into sealed buckets, or into a bucket still being sealed
					long late = (i % 41) * 1_000L;
					window.record(time.nanoTime() - late,
							SlidingWindow.CALL_BIT | (i % 3 == 0 ? SlidingWindow.FAILURE_BIT : 0));
				}
				running.decrementAndGet();
			};
			Runnable ticker = () -> {
				for (int step = 0; step < 90_000 && running.get() > 0; step++) {
					time.advanceNanos(1_000);
					window.advanceTo(time.nanoTime());
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), writer, writer, writer, ticker);

			assertThat(window.calls()).isEqualTo(3L * perWriter);
			assertThat(window.failures()).isEqualTo(3L * 10_000);
			assertConsistent(window);
		}
	}

	@Test
	void aSmallCountWindowStaysConsistentUnderManyWriters() {
		for (int round = 0; round < 20; round++) {
			CountWindow window = new CountWindow(7);
			Runnable writer = () -> {
				for (int i = 0; i < 20_000; i++) {
					// mostly plain successes, which usually write nothing
					window.record(0, SlidingWindow.CALL_BIT | (i % 97 == 0 ? SlidingWindow.FAILURE_BIT : 0)
							| (i % 89 == 0 ? SlidingWindow.SLOW_BIT : 0));
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), writer, writer, writer);

			assertConsistent(window);
			assertThat(window.calls()).isEqualTo(7);
			window.record(0, SlidingWindow.CALL_BIT | SlidingWindow.FAILURE_BIT);
			assertThat(window.failures()).isBetween(1L, 7L);
			for (int i = 0; i < 7; i++) {
				window.record(0, SlidingWindow.CALL_BIT);
			}
			assertThat(window.failures()).isZero();
			assertThat(window.slowCalls()).isZero();
			assertConsistent(window);
		}
	}

	@Test
	void writersAcrossManyBucketBoundariesLoseNoCount() {
		for (int round = 0; round < 20; round++) {
			ManualClock time = new ManualClock();
			TimeWindow window = new TimeWindow(100_000, 1_000, 0);
			int perWriter = 30_000;
			AtomicInteger running = new AtomicInteger(3);
			Runnable writer = () -> {
				for (int i = 0; i < perWriter; i++) {
					window.record(time.nanoTime(), SlidingWindow.CALL_BIT | (i % 3 == 0 ? SlidingWindow.FAILURE_BIT : 0));
				}
				running.decrementAndGet();
			};
			Runnable ticker = () -> {
				// a new bucket every step, never so many that one slides out
				for (int step = 0; step < 90_000 && running.get() > 0; step++) {
					time.advanceNanos(1_000);
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), writer, writer, writer, ticker);

			assertThat(window.calls()).isEqualTo(3L * perWriter);
			assertThat(window.failures()).isEqualTo(3L * 10_000);
			assertConsistent(window);
		}
	}

	@Test
	void aSmallWindowStaysConsistentWhileTheClockSlidesItUnderManyWriters() {
		TimeWindow window = new TimeWindow(8, 1_000, 0);
		AtomicBoolean done = new AtomicBoolean();
		AtomicInteger running = new AtomicInteger(3);
		Runnable writer = () -> {
			for (int i = 0; i < 50_000; i++) {
				window.record(clock.nanoTime(), SlidingWindow.CALL_BIT | (i % 3 == 0 ? SlidingWindow.FAILURE_BIT : 0));
			}
			if (running.decrementAndGet() == 0) {
				done.set(true);
			}
		};
		Runnable ticker = () -> {
			while (!done.get()) {
				clock.advanceNanos(137);
				window.advanceTo(clock.nanoTime());
			}
		};
		RaceTestUtils.race(Schedulers.boundedElastic(), writer, writer, writer, ticker);

		assertConsistent(window);
		assertThat(window.failures()).isLessThanOrEqualTo(window.calls());
	}

	// ------------------------------------------------------------- consecutive failures, ramp-up

	@Test
	void concurrentFailuresInARowLoseNoCountAndTripExactlyOnce() {
		for (int round = 0; round < 200; round++) {
			RecordingMetrics metrics = new RecordingMetrics();
			CircuitBreaker breaker = CircuitBreaker.builder("race")
					.config(base().minimumCalls(1000).consecutiveFailuresToTrip(8).build()).clock(clock)
					.metrics(metrics).build();
			BreakerPermit[] permits = new BreakerPermit[8];
			for (int i = 0; i < permits.length; i++) {
				permits[i] = breaker.tryAcquire();
			}
			Runnable[] tasks = new Runnable[4];
			for (int t = 0; t < 4; t++) {
				int first = t * 2;
				tasks[t] = () -> {
					permits[first].record(Outcome.FAILURE, -1);
					permits[first + 1].record(Outcome.STALLED, -1);
				};
			}
			RaceTestUtils.race(Schedulers.boundedElastic(), tasks);

			assertThat(breaker.state()).as("round %d: a lost increment would leave it closed", round)
					.isEqualTo(BreakerState.OPEN);
			assertThat(metrics.transitions()).containsExactly("CLOSED->OPEN");
		}
	}

	@Test
	void fewerFailuresThanTheRowNeverTripWhateverRacesThem() {
		for (int round = 0; round < 200; round++) {
			CircuitBreaker breaker = CircuitBreaker.builder("race")
					.config(base().minimumCalls(1000).consecutiveFailuresToTrip(8).build()).clock(clock).build();
			Runnable failures = () -> {
				for (int i = 0; i < 3; i++) {
					breaker.tryAcquire().record(Outcome.FAILURE, -1);
				}
			};
			Runnable successes = () -> {
				for (int i = 0; i < 3; i++) {
					breaker.tryAcquire().record(Outcome.SUCCESS, FAST);
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), failures, failures, successes, successes);
			assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		}
	}

	private CircuitBreaker reclosedRamping(ManualClock at) {
		CircuitBreaker breaker = CircuitBreaker.builder("race").config(base().minimumCalls(4).halfOpenProbes(1)
				.successesToClose(1).rampUp(Duration.ofSeconds(10)).build()).clock(at).build();
		for (int i = 0; i < 4; i++) {
			breaker.tryAcquire().record(Outcome.FAILURE, -1);
		}
		at.advance(Duration.ofSeconds(10));
		breaker.tryAcquire().record(Outcome.SUCCESS, FAST);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		at.advance(Duration.ofSeconds(3)); // a share of 0.3
		return breaker;
	}

	@Test
	void theRampShareUnderContentionIsExactlyTheSequentialOne() {
		ManualClock sequentialClock = new ManualClock();
		CircuitBreaker sequential = reclosedRamping(sequentialClock);
		int expected = 0;
		for (int i = 0; i < 1000; i++) {
			if (sequential.tryAcquire() != null) {
				expected++;
			}
		}
		assertThat(expected).isBetween(299, 301);

		for (int round = 0; round < 100; round++) {
			ManualClock raceClock = new ManualClock();
			CircuitBreaker breaker = reclosedRamping(raceClock);
			long rejectedBefore = breaker.rejectedCalls();
			AtomicInteger admitted = new AtomicInteger();
			Runnable offer = () -> {
				for (int i = 0; i < 250; i++) {
					BreakerPermit permit = breaker.tryAcquire();
					if (permit != null) {
						admitted.incrementAndGet();
						permit.record(Outcome.SUCCESS, FAST);
					}
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), offer, offer, offer, offer);
			assertThat(admitted).as("round %d", round).hasValue(expected);
			assertThat(breaker.rejectedCalls() - rejectedBefore).isEqualTo(1000 - expected);
			assertThat(breaker.snapshot().calls()).isEqualTo(expected);
		}
	}
}
