package dev.aiguard.admission;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.AdmissionRejectedException.Reason;
import dev.aiguard.testing.RecordingMetrics;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every way a permit or a waiter can end, raced against every other: the permit is freed exactly
 * once, a waiter ends at most once, and the lanes' counts come back to zero with the capacity
 * neither lost nor doubled.
 */
class PriorityLanesRaceTest {

	static final int ROUNDS = 2_000;

	final List<PriorityLanes> built = new ArrayList<>();
	final VirtualTimeScheduler clock = VirtualTimeScheduler.create();

	@AfterEach
	void disposeLanes() {
		built.forEach(PriorityLanes::dispose);
		clock.dispose();
	}

	PriorityLanes lanes(LaneSpec p0, LaneSpec p1, LaneSpec p2, RecordingMetrics metrics) {
		PriorityLanes lanes = PriorityLanes.builder()
				.lane(P0, p0)
				.lane(P1, p1)
				.lane(P2, p2)
				.timer(clock)
				.metrics(metrics)
				.build();
		built.add(lanes);
		return lanes;
	}

	static TestSubscriber<LanePermit> request(PriorityLanes lanes, Priority priority) {
		TestSubscriber<LanePermit> ts = TestSubscriber.create();
		lanes.acquire(priority).subscribe(ts);
		return ts;
	}

	/** What a well-behaved owner does: release whatever permit reached it, cancelled or not. */
	static void releaseReceived(TestSubscriber<LanePermit> ts) {
		ts.getReceivedOnNext().forEach(LanePermit::release);
		ts.getReceivedOnNextAfterCancellation().forEach(LanePermit::release);
	}

	/** Nothing in flight or queued, and exactly {@code permits} requests of {@code p} fit at once. */
	static void assertIdleWithCapacity(PriorityLanes lanes, Priority p, int permits) {
		for (Priority each : Priority.values()) {
			assertThat(lanes.inFlight(each)).as("in flight " + each).isZero();
			assertThat(lanes.borrowedInFlight(each)).as("borrowed " + each).isZero();
			assertThat(lanes.queued(each)).as("queued " + each).isZero();
		}
		List<TestSubscriber<LanePermit>> taken = new ArrayList<>();
		for (int i = 0; i <= permits; i++) {
			taken.add(request(lanes, p));
		}
		for (int i = 0; i < permits; i++) {
			assertThat(taken.get(i).getReceivedOnNext()).as("permit " + i + " free").hasSize(1);
		}
		TestSubscriber<LanePermit> extra = taken.get(permits);
		assertThat(extra.getReceivedOnNext()).as("no permit beyond capacity").isEmpty();
		extra.cancel();
		taken.forEach(PriorityLanesRaceTest::releaseReceived);
		assertThat(lanes.inFlight(p) + lanes.borrowedInFlight(p)).isZero();
	}

	@Test
	void releaseRacingReleaseFreesThePermitOnce() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0), new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			TestSubscriber<LanePermit> ts = request(lanes, P0);
			LanePermit permit = ts.getReceivedOnNext().get(0);

			RaceTestUtils.race(permit::release, permit::release);

			assertIdleWithCapacity(lanes, P0, 1);
		}
	}

	@Test
	void releaseRacingAnArrivalThatFindsNoPermitNeverStrandsIt() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0), new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			LanePermit holder = request(lanes, P0).getReceivedOnNext().get(0);
			TestSubscriber<LanePermit> arrival = TestSubscriber.create();

			RaceTestUtils.race(holder::release, () -> lanes.acquire(P0).subscribe(arrival));

			assertThat(arrival.getReceivedOnNext()).as("admitted whichever came first").hasSize(1);
			releaseReceived(arrival);
			assertIdleWithCapacity(lanes, P0, 1);
		}
	}

	/** A {@code tryAcquire(P0)} that keeps the permit it got, if any. */
	static Runnable tryInto(PriorityLanes lanes, List<LanePermit> taken) {
		return () -> {
			LanePermit p = lanes.tryAcquire(P0);
			if (p != null) {
				taken.add(p);
			}
		};
	}

	@Test
	void tryAcquireRacingReleaseTakesAFreedPermitAtMostOnce() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0), new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			LanePermit holder = request(lanes, P0).getReceivedOnNext().get(0);
			List<LanePermit> taken = new CopyOnWriteArrayList<>();

			RaceTestUtils.race(holder::release, tryInto(lanes, taken));

			// null when it ran before the release; never two permits of a one-permit lane
			assertThat(taken.size()).isLessThanOrEqualTo(1);
			taken.forEach(LanePermit::release);
			assertIdleWithCapacity(lanes, P0, 1);
		}
	}

	@Test
	void tryAcquireRacingAQueuedWaiterNeverJumpsTheQueue() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0), new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			LanePermit holder = request(lanes, P0).getReceivedOnNext().get(0);
			TestSubscriber<LanePermit> waiter = request(lanes, P0);
			List<LanePermit> taken = new CopyOnWriteArrayList<>();

			RaceTestUtils.race(holder::release, tryInto(lanes, taken));

			assertThat(waiter.getReceivedOnNext()).as("the waiter gets the freed permit").hasSize(1);
			assertThat(taken).as("the newcomer does not take it").isEmpty();
			releaseReceived(waiter);
			assertIdleWithCapacity(lanes, P0, 1);
		}
	}

	@Test
	void tryAcquireRacingTryAcquireNeverOverbooks() {
		PriorityLanes lanes = lanes(LaneSpec.of(2), LaneSpec.of(0), LaneSpec.of(0), new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			List<LanePermit> taken = new CopyOnWriteArrayList<>();
			Runnable attempt = tryInto(lanes, taken);

			RaceTestUtils.race(attempt, attempt, attempt);

			assertThat(taken).hasSize(2);
			taken.forEach(LanePermit::release);
			assertIdleWithCapacity(lanes, P0, 2);
		}
	}

	@Test
	void immediateGrantRacingCancelNeverLeaksThePermit() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0), new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			// the permit is free: request(1) takes the fast path, which a cancel may beat
			TestSubscriber<LanePermit> ts = TestSubscriber.builder().initialRequest(0).build();
			lanes.acquire(P0).subscribe(ts);

			RaceTestUtils.race(() -> ts.request(1), ts::cancel);

			assertThat(ts.getReceivedOnNext()).hasSizeLessThanOrEqualTo(1);
			releaseReceived(ts);
			assertThat(ts.getProtocolErrors()).isEmpty();
			assertIdleWithCapacity(lanes, P0, 1);
		}
	}

	@Test
	void grantRacingCancelNeverLeaksThePermit() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0), new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			LanePermit holder = request(lanes, P0).getReceivedOnNext().get(0);
			TestSubscriber<LanePermit> waiter = request(lanes, P0);
			assertThat(lanes.queued(P0)).isEqualTo(1);

			RaceTestUtils.race(holder::release, waiter::cancel);

			releaseReceived(waiter);
			assertThat(waiter.getProtocolErrors()).isEmpty();
			assertIdleWithCapacity(lanes, P0, 1);
		}
	}

	@Test
	void cancelRacingTimeoutEndsTheWaiterAtMostOnce() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueWait(Duration.ofSeconds(1)), LaneSpec.of(0),
				LaneSpec.of(0), metrics);
		LanePermit holder = request(lanes, P0).getReceivedOnNext().get(0);
		int timedOut = 0;
		for (int i = 0; i < ROUNDS; i++) {
			TestSubscriber<LanePermit> waiter = request(lanes, P0);

			RaceTestUtils.race(waiter::cancel, () -> clock.advanceTimeBy(Duration.ofSeconds(1)));

			assertThat(waiter.getReceivedOnNext()).isEmpty();
			assertThat(waiter.getProtocolErrors()).isEmpty();
			if (waiter.isTerminated()) {
				timedOut++;
				assertThat(((AdmissionRejectedException) waiter.expectTerminalError()).reason())
						.isEqualTo(Reason.WAIT_TIMEOUT);
			}
			assertThat(lanes.queued(P0)).isZero();
			assertThat(lanes.inFlight(P0)).isEqualTo(1);
		}
		assertThat(metrics.admissionRejections()).filteredOn("P0 WAIT_TIMEOUT"::equals).hasSize(timedOut);
		holder.release();
		assertIdleWithCapacity(lanes, P0, 1);
	}

	@Test
	void releaseRacingTimeoutEitherGrantsOrRefusesTheWaiter() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueWait(Duration.ofSeconds(1)), LaneSpec.of(0),
				LaneSpec.of(0), new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			LanePermit holder = request(lanes, P0).getReceivedOnNext().get(0);
			TestSubscriber<LanePermit> waiter = request(lanes, P0);

			RaceTestUtils.race(holder::release, () -> clock.advanceTimeBy(Duration.ofSeconds(1)));

			assertThat(waiter.isTerminated()).as("granted or refused").isTrue();
			if (waiter.isTerminatedError()) {
				assertThat(waiter.getReceivedOnNext()).isEmpty();
			}
			else {
				assertThat(waiter.getReceivedOnNext()).hasSize(1);
			}
			releaseReceived(waiter);
			assertIdleWithCapacity(lanes, P0, 1);
		}
	}

	@Test
	void releaseRacingPreemptionFreesTheLentPermitOnce() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(1).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(0),
				LaneSpec.of(0), metrics);
		int preemptions = 0;
		for (int i = 0; i < ROUNDS; i++) {
			LanePermit batch = request(lanes, P2).getReceivedOnNext().get(0);
			assertThat(batch.lane()).isEqualTo(P0);
			AtomicInteger stopped = new AtomicInteger();
			batch.onPreempted(e -> stopped.incrementAndGet());
			TestSubscriber<LanePermit> chat = TestSubscriber.create();

			RaceTestUtils.race(batch::release, () -> lanes.acquire(P0).subscribe(chat));

			assertThat(chat.getReceivedOnNext()).as("the P0 arrival never waits").hasSize(1);
			assertThat(stopped.get()).isLessThanOrEqualTo(1);
			preemptions += stopped.get();
			releaseReceived(chat);
			assertIdleWithCapacity(lanes, P0, 1);
		}
		assertThat(metrics.preempted()).filteredOn(p -> p == P2).hasSize(preemptions);
	}

	@Test
	void cancelRacingDisposeEndsTheWaiterAtMostOnce() {
		for (int i = 0; i < 300; i++) {
			PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0), new RecordingMetrics());
			LanePermit holder = request(lanes, P0).getReceivedOnNext().get(0);
			TestSubscriber<LanePermit> waiter = request(lanes, P0);

			RaceTestUtils.race(waiter::cancel, lanes::dispose);

			assertThat(waiter.getReceivedOnNext()).isEmpty();
			assertThat(waiter.getProtocolErrors()).isEmpty();
			if (waiter.isTerminated()) {
				assertThat(((AdmissionRejectedException) waiter.expectTerminalError()).reason())
						.isEqualTo(Reason.DISPOSED);
			}
			assertThat(lanes.queued(P0)).isZero();
			holder.release();
			assertThat(lanes.inFlight(P0)).isZero();
			built.remove(lanes);
		}
	}

	@Test
	void resizeRacingReleaseAndArrivalNeitherLosesNorDoublesAPermit() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(2).borrowFromLower(false),
				new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			LanePermit a = request(lanes, P2).getReceivedOnNext().get(0);
			LanePermit b = request(lanes, P2).getReceivedOnNext().get(0);
			TestSubscriber<LanePermit> arrival = TestSubscriber.create();

			RaceTestUtils.race(() -> lanes.resize(P2, 1), a::release, () -> lanes.acquire(P2).subscribe(arrival));

			// the arrival got a's permit before the shrink, or waits for b's after it
			assertThat(lanes.inFlight(P2)).isBetween(1, 2);
			b.release();
			assertThat(arrival.getReceivedOnNext()).as("admitted, at the latest once b left").hasSize(1);
			releaseReceived(arrival);
			assertIdleWithCapacity(lanes, P2, 1);

			lanes.resize(P2, 2);
			assertIdleWithCapacity(lanes, P2, 2);
		}
	}

	@Test
	void concurrentResizesEndAtOneOfTheRequestedSizesWithTheCountsIntact() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(2).borrowFromLower(false),
				new RecordingMetrics());
		for (int i = 0; i < ROUNDS; i++) {
			LanePermit held = request(lanes, P2).getReceivedOnNext().get(0);

			RaceTestUtils.race(() -> lanes.resize(P2, 1), () -> lanes.resize(P2, 3));

			int size = lanes.concurrency(P2);
			assertThat(size).isIn(1, 3);
			held.release();
			assertIdleWithCapacity(lanes, P2, size);
			lanes.resize(P2, 2);
		}
	}

	@Test
	void concurrentAcquireAndReleaseNeverExceedCapacityAndServeEveryone() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueSize(100_000), LaneSpec.of(1).maxQueueSize(100_000),
				LaneSpec.of(2).maxQueueSize(100_000), new RecordingMetrics());
		Queue<LanePermit> held = new ConcurrentLinkedQueue<>();
		AtomicInteger active = new AtomicInteger();
		AtomicInteger maxActive = new AtomicInteger();
		AtomicInteger served = new AtomicInteger();
		AtomicInteger refused = new AtomicInteger();
		CoreSubscriber<LanePermit> holder = new CoreSubscriber<>() {
			@Override
			public void onSubscribe(Subscription s) {
				s.request(1);
			}

			@Override
			public void onNext(LanePermit permit) {
				maxActive.accumulateAndGet(active.incrementAndGet(), Math::max);
				served.incrementAndGet();
				held.offer(permit);
			}

			@Override
			public void onError(Throwable t) {
				refused.incrementAndGet();
			}

			@Override
			public void onComplete() {
			}
		};
		int perThread = 5_000;
		Runnable[] threads = new Runnable[4];
		for (int t = 0; t < threads.length; t++) {
			Priority priority = Priority.values()[t % 3];
			threads[t] = () -> {
				for (int i = 0; i < perThread; i++) {
					lanes.acquire(priority).subscribe(holder);
					// every other round, release some permit, often one granted on another thread;
					// the others pile up as waiters that later releases serve
					LanePermit permit = (i & 1) == 1 ? held.poll() : null;
					if (permit != null) {
						active.decrementAndGet();
						permit.release();
					}
				}
			};
		}

		RaceTestUtils.race(threads);
		LanePermit rest;
		while ((rest = held.poll()) != null) {
			active.decrementAndGet();
			rest.release();
		}

		assertThat(refused.get()).isZero();
		assertThat(served.get()).isEqualTo(threads.length * perThread);
		assertThat(maxActive.get()).as("never more streams than the 4 permits").isEqualTo(4);
		assertIdleWithCapacity(lanes, P0, 4);
		assertIdleWithCapacity(lanes, P2, 2);
		assertIdleWithCapacity(lanes, P1, 3);
	}
}
