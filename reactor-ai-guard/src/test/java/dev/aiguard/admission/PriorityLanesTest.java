package dev.aiguard.admission;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.AdmissionRejectedException.Reason;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.testing.RecordingMetrics;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PriorityLanesTest {

	final List<PriorityLanes> built = new ArrayList<>();
	final VirtualTimeScheduler clock = VirtualTimeScheduler.create();

	@AfterEach
	void disposeLanes() {
		built.forEach(PriorityLanes::dispose);
		clock.dispose();
		Hooks.resetOnErrorDropped();
	}

	PriorityLanes lanes(LaneSpec p0, LaneSpec p1, LaneSpec p2) {
		return lanes(p0, p1, p2, GuardMetrics.noop());
	}

	PriorityLanes lanes(LaneSpec p0, LaneSpec p1, LaneSpec p2, GuardMetrics metrics) {
		PriorityLanes lanes = PriorityLanes.builder()
				.name("test")
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

	static LanePermit admitted(TestSubscriber<LanePermit> ts) {
		assertThat(ts.getReceivedOnNext()).as("permit granted").hasSize(1);
		assertThat(ts.isTerminatedComplete()).isTrue();
		return ts.getReceivedOnNext().get(0);
	}

	static LanePermit admitNow(PriorityLanes lanes, Priority priority) {
		return admitted(request(lanes, priority));
	}

	static void assertWaiting(TestSubscriber<LanePermit> ts) {
		assertThat(ts.getReceivedOnNext()).as("still waiting").isEmpty();
		assertThat(ts.isTerminated()).as("still waiting").isFalse();
	}

	static AdmissionRejectedException rejection(TestSubscriber<LanePermit> ts) {
		assertThat(ts.isTerminatedError()).as("refused").isTrue();
		assertThat(ts.expectTerminalError()).isInstanceOf(AdmissionRejectedException.class);
		return (AdmissionRejectedException) ts.expectTerminalError();
	}

	// ---------------------------------------------------------------- building

	@Test
	void builderRefusesMissingLanesAndInconsistentSpecs() {
		assertThatThrownBy(() -> PriorityLanes.builder().lane(P0, LaneSpec.of(1)).lane(P2, LaneSpec.of(1)).build())
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lane P1 is not configured");
		assertThatThrownBy(() -> PriorityLanes.builder().lane(P0, LaneSpec.of(0)).lane(P1, LaneSpec.of(0))
				.lane(P2, LaneSpec.of(0)).build()).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("concurrency").hasMessageContaining("was 0");
		assertThatThrownBy(() -> PriorityLanes.builder().lane(P0, LaneSpec.of(1)).lane(P1, LaneSpec.of(1))
				.lane(P2, LaneSpec.of(2).reservedForOwn(3)).build()).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("lane P2").hasMessageContaining("reservedForOwn").hasMessageContaining("3");
		assertThatThrownBy(() -> PriorityLanes.builder().lane(P0, LaneSpec.of(1).preemptBorrowers(true))
				.lane(P1, LaneSpec.of(1)).lane(P2, LaneSpec.of(1)).build())
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lane P0")
				.hasMessageContaining("preemptBorrowers").hasMessageContaining("lendToLower");
		assertThatThrownBy(() -> PriorityLanes.builder().name(" ")).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("name").hasMessageContaining("' '");
	}

	// ---------------------------------------------------------------- tryAcquire

	@Test
	void tryAcquireTakesAFreeOwnPermitAtOnceAndRecordsNoWait() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1), metrics);

		LanePermit permit = lanes.tryAcquire(P1);

		assertThat(permit).isNotNull();
		assertThat(permit.priority()).isEqualTo(P1);
		assertThat(permit.lane()).isEqualTo(P1);
		assertThat(permit.scheduler()).isSameAs(lanes.scheduler(P1));
		assertThat(lanes.inFlight(P1)).isEqualTo(1);
		assertThat(metrics.lastWaitNanos()).isZero();
		permit.release();
		permit.release();
		assertThat(lanes.inFlight(P1)).isZero();
		admitNow(lanes, P1).release();
	}

	@Test
	void tryAcquireNeverBorrowsAndLeavesThatToAcquire() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));
		LanePermit own = lanes.tryAcquire(P0);

		// P0's own permit is taken; P1's is idle and acquire would borrow it
		assertThat(lanes.tryAcquire(P0)).isNull();
		LanePermit borrowed = admitNow(lanes, P0);
		assertThat(borrowed.lane()).isEqualTo(P1);
		own.release();
		borrowed.release();
	}

	@Test
	void tryAcquireDoesNotJumpAQueue() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(1).lendToLower(0.0));
		LanePermit p2 = admitNow(lanes, P2);
		TestSubscriber<LanePermit> waiting = request(lanes, P2);
		assertWaiting(waiting);

		// P0 has a free permit of its own, but somebody is queued: the caller must go through acquire
		assertThat(lanes.tryAcquire(P0)).isNull();
		LanePermit p0 = admitNow(lanes, P0);
		p0.release();
		p2.release();
		admitted(waiting).release();
	}

	@Test
	void tryAcquireOnDisposedLanesLeavesTheRefusalToAcquire() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));
		lanes.dispose();

		assertThat(lanes.tryAcquire(P0)).isNull();
		assertThat(rejection(request(lanes, P0)).reason()).isEqualTo(AdmissionRejectedException.Reason.DISPOSED);
	}

	@Test
	void aPermitTakenAtOnceStillRunsPreemptionHooksOnlyIfPreemptedAndIgnoresThemAfterRelease() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));
		LanePermit permit = lanes.tryAcquire(P2);
		java.util.concurrent.atomic.AtomicInteger hooks = new java.util.concurrent.atomic.AtomicInteger();
		permit.onPreempted(e -> hooks.incrementAndGet());
		permit.release();
		permit.onPreempted(e -> hooks.incrementAndGet());
		assertThat(hooks).hasValue(0);
	}

	@Test
	void buildRegistersGaugesThatFollowTheLanes() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1), metrics);

		assertThat(metrics.events()).containsExactly("lanesCreated test");
		admitNow(lanes, P0);
		admitNow(lanes, P0); // borrows P1's idle permit
		request(lanes, P1); // P1 is full (own lent to P0), P1 may borrow P2's
		TestSubscriber<LanePermit> waiting = request(lanes, P2);

		assertWaiting(waiting);
		assertThat(metrics.inFlightOwn().applyAsInt(P0)).isEqualTo(1);
		assertThat(metrics.inFlightBorrowed().applyAsInt(P0)).isEqualTo(1);
		assertThat(metrics.inFlightBorrowed().applyAsInt(P1)).isEqualTo(1);
		assertThat(metrics.queued().applyAsInt(P2)).isEqualTo(1);
		assertThat(lanes.queued(P2)).isEqualTo(1);
	}

	@Test
	void laneSchedulersAreTheLanesOwnNamedAfterThePriority() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).threadCap(2), LaneSpec.of(1), LaneSpec.of(1));

		String thread = Mono.fromCallable(() -> Thread.currentThread().getName())
				.subscribeOn(lanes.scheduler(P0))
				.block(Duration.ofSeconds(10));

		assertThat(thread).startsWith("aiguard-p0");
		assertThat(lanes.scheduler(P0)).isNotSameAs(lanes.scheduler(P2));
		assertThat(admitNow(lanes, P2).scheduler()).isSameAs(lanes.scheduler(P2));
		assertThat(lanes.name()).isEqualTo("test");
		assertThat(lanes.spec(P0).threadCap()).isEqualTo(2);
	}

	// ---------------------------------------------------------------- admission

	@Test
	void acquireIsLazy() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));

		Mono<LanePermit> acquire = lanes.acquire(P0);
		assertThat(lanes.inFlight(P0)).isZero();

		StepVerifier.create(acquire, 0)
				.expectSubscription()
				.then(() -> assertThat(lanes.inFlight(P0)).as("nothing before demand").isZero())
				.thenRequest(1)
				.assertNext(permit -> assertThat(permit.lane()).isEqualTo(P0))
				.verifyComplete();
		assertThat(lanes.inFlight(P0)).isEqualTo(1);
	}

	@Test
	void admitsAtOnceOnItsOwnLaneAndReportsNoWait() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1), metrics);

		LanePermit permit = admitNow(lanes, P1);

		assertThat(permit.priority()).isEqualTo(P1);
		assertThat(permit.lane()).isEqualTo(P1);
		assertThat(permit.borrowed()).isFalse();
		assertThat(lanes.inFlight(P1)).isEqualTo(1);
		assertThat(metrics.waitedNanos(P1)).contains(0L);

		permit.release();
		assertThat(lanes.inFlight(P1)).isZero();
	}

	@Test
	void waitersAreServedFirstComeFirstServedWhenPermitsFree() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(0), LaneSpec.of(0), LaneSpec.of(1), metrics);
		LanePermit first = admitNow(lanes, P2);
		TestSubscriber<LanePermit> second = request(lanes, P2);
		TestSubscriber<LanePermit> third = request(lanes, P2);
		assertWaiting(second);
		assertWaiting(third);
		assertThat(lanes.queued(P2)).isEqualTo(2);

		clock.advanceTimeBy(Duration.ofMillis(250));
		first.release();

		LanePermit secondPermit = admitted(second);
		assertWaiting(third);
		assertThat(metrics.lastWaitNanos()).isEqualTo(Duration.ofMillis(250).toNanos());
		secondPermit.release();
		admitted(third);
		assertThat(lanes.queued(P2)).isZero();
	}

	@Test
	void fullQueueRefusesAtOnceWithQueueFull() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0).maxQueueSize(1), metrics);
		LanePermit held = admitNow(lanes, P0);
		TestSubscriber<LanePermit> queued = request(lanes, P2);

		TestSubscriber<LanePermit> refused = request(lanes, P2);

		assertWaiting(queued);
		AdmissionRejectedException e = rejection(refused);
		assertThat(e.reason()).isEqualTo(Reason.QUEUE_FULL);
		assertThat(e.priority()).isEqualTo(P2);
		assertThat(e.getMessage()).contains("P2 queue full").contains("maxQueueSize=1");
		assertThat(e.getStackTrace()).isEmpty();
		assertThat(metrics.admissionRejections()).contains("P2 QUEUE_FULL");
		assertThat(held.lane()).as("P2 never takes P0's idle permit without lending").isEqualTo(P0);
	}

	@Test
	void zeroQueueSizeRefusesWhateverCannotRunNow() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueSize(0), LaneSpec.of(0), LaneSpec.of(0));
		admitNow(lanes, P0);

		assertThat(rejection(request(lanes, P0)).reason()).isEqualTo(Reason.QUEUE_FULL);
	}

	@Test
	void waiterGivesUpAfterMaxQueueWaitInVirtualTime() {
		RecordingMetrics metrics = new RecordingMetrics();
		AtomicReference<PriorityLanes> holder = new AtomicReference<>();
		// default timer: Schedulers.parallel(), which withVirtualTime replaces
		StepVerifier.withVirtualTime(() -> {
					PriorityLanes lanes = PriorityLanes.builder()
							.lane(P0, LaneSpec.of(1).maxQueueWait(Duration.ofSeconds(2)))
							.lane(P1, LaneSpec.of(0))
							.lane(P2, LaneSpec.of(0))
							.metrics(metrics)
							.build();
					holder.set(lanes);
					built.add(lanes);
					return lanes.acquire(P0).flatMap(held -> lanes.acquire(P0));
				})
				.expectSubscription()
				.then(() -> assertThat(holder.get().queued(P0)).isEqualTo(1))
				.expectNoEvent(Duration.ofMillis(1_999))
				.thenAwait(Duration.ofMillis(1))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(AdmissionRejectedException.class);
					assertThat(((AdmissionRejectedException) e).reason()).isEqualTo(Reason.WAIT_TIMEOUT);
					assertThat(e.getMessage()).contains("maxQueueWait=PT2S");
				})
				.verify(Duration.ofSeconds(10));
		assertThat(holder.get().queued(P0)).isZero();
		assertThat(metrics.admissionRejections()).contains("P0 WAIT_TIMEOUT");
	}

	@Test
	void grantedWaiterNeverTimesOutLater() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueWait(Duration.ofSeconds(1)), LaneSpec.of(0),
				LaneSpec.of(0));
		LanePermit held = admitNow(lanes, P0);
		TestSubscriber<LanePermit> waiter = request(lanes, P0);

		clock.advanceTimeBy(Duration.ofMillis(500));
		held.release();
		clock.advanceTimeBy(Duration.ofSeconds(5));

		admitted(waiter);
		assertThat(lanes.inFlight(P0)).isEqualTo(1);
	}

	@Test
	void cancellingAQueuedRequestLeavesTheQueueAndConsumesNothing() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0), metrics);
		LanePermit held = admitNow(lanes, P0);
		TestSubscriber<LanePermit> waiter = request(lanes, P0);
		assertThat(lanes.queued(P0)).isEqualTo(1);

		waiter.cancel();

		assertThat(lanes.queued(P0)).isZero();
		held.release();
		clock.advanceTimeBy(Duration.ofMinutes(1));
		assertThat(waiter.getReceivedOnNext()).isEmpty();
		assertThat(waiter.isTerminated()).isFalse();
		assertThat(lanes.inFlight(P0)).isZero();
		assertThat(metrics.admissionRejections()).isEmpty();
		admitNow(lanes, P0); // the permit is free again
	}

	@Test
	void aRequestCancelledBeforeItAsksTakesNoPermit() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0));
		TestSubscriber<LanePermit> ts = TestSubscriber.builder().initialRequest(0).build();
		lanes.acquire(P0).subscribe(ts);

		ts.cancel();
		ts.request(1);

		assertThat(ts.getReceivedOnNext()).isEmpty();
		assertThat(lanes.inFlight(P0)).isZero();
		admitNow(lanes, P0).release(); // the permit is still free
	}

	@Test
	void requestingAgainAfterAnImmediateGrantTakesNoSecondPermit() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(2), LaneSpec.of(0), LaneSpec.of(0), metrics);
		TestSubscriber<LanePermit> ts = TestSubscriber.builder().initialRequest(0).build();
		lanes.acquire(P0).subscribe(ts);

		ts.request(1);
		ts.request(1);

		assertThat(ts.getReceivedOnNext()).hasSize(1);
		assertThat(ts.isTerminated()).isTrue();
		assertThat(lanes.inFlight(P0)).isEqualTo(1);
		assertThat(ts.getReceivedOnNext().get(0).lane()).isEqualTo(P0);
		ts.getReceivedOnNext().get(0).release();
		assertThat(lanes.inFlight(P0)).isZero();
	}

	@Test
	void releaseIsIdempotent() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueSize(0), LaneSpec.of(0), LaneSpec.of(0));
		LanePermit permit = admitNow(lanes, P0);

		permit.release();
		permit.release();

		admitNow(lanes, P0);
		assertThat(rejection(request(lanes, P0)).reason()).as("a second release freed nothing")
				.isEqualTo(Reason.QUEUE_FULL);
	}

	// ---------------------------------------------------------------- borrowing

	@Test
	void urgentRequestsBorrowIdlePermitsOfLessUrgentLanesNearestFirst() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));

		LanePermit own = admitNow(lanes, P0);
		LanePermit fromP1 = admitNow(lanes, P0);
		LanePermit fromP2 = admitNow(lanes, P0);
		TestSubscriber<LanePermit> fourth = request(lanes, P0);

		assertThat(own.lane()).isEqualTo(P0);
		assertThat(fromP1.lane()).isEqualTo(P1);
		assertThat(fromP1.borrowed()).isTrue();
		assertThat(fromP2.lane()).isEqualTo(P2);
		assertWaiting(fourth);
		assertThat(lanes.inFlight(P0)).isEqualTo(1);
		assertThat(lanes.borrowedInFlight(P0)).isEqualTo(2);
	}

	@Test
	void lessUrgentRequestsNeverTakeIdlePermitsOfMoreUrgentLanesByDefault() {
		PriorityLanes lanes = lanes(LaneSpec.of(4), LaneSpec.of(4), LaneSpec.of(1));
		admitNow(lanes, P2);

		TestSubscriber<LanePermit> p2 = request(lanes, P2);

		assertWaiting(p2);
		assertThat(lanes.inFlight(P0)).isZero();
		assertThat(lanes.inFlight(P1)).isZero();
	}

	@Test
	void borrowFromLowerOffKeepsALaneToItsOwnPermits() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).borrowFromLower(false), LaneSpec.of(1), LaneSpec.of(1));
		admitNow(lanes, P0);

		assertWaiting(request(lanes, P0));
		assertThat(lanes.borrowedInFlight(P0)).isZero();
	}

	@Test
	void reservedPermitsAreNeverBorrowedByMoreUrgentLanes() {
		PriorityLanes lanes = lanes(LaneSpec.of(0), LaneSpec.of(0), LaneSpec.of(3).reservedForOwn(2));

		assertThat(admitNow(lanes, P0).lane()).isEqualTo(P2);
		assertWaiting(request(lanes, P0));
		admitNow(lanes, P2);
		admitNow(lanes, P2);
		assertThat(lanes.inFlight(P2)).isEqualTo(2);
	}

	@Test
	void freedPermitGoesToTheMostUrgentWaiterAllowedToUseIt() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(1));
		LanePermit p0Own = admitNow(lanes, P0);
		LanePermit p2Own = admitNow(lanes, P2);
		TestSubscriber<LanePermit> batch = request(lanes, P2); // arrives first
		TestSubscriber<LanePermit> chat = request(lanes, P0);

		p2Own.release();

		LanePermit chatPermit = admitted(chat);
		assertThat(chatPermit.lane()).as("P0 borrows the freed P2 permit").isEqualTo(P2);
		assertWaiting(batch);

		p0Own.release();
		assertWaiting(batch); // a P0 permit is never used by P2 without lending
		assertThat(lanes.inFlight(P0)).isZero();

		chatPermit.release();
		assertThat(admitted(batch).lane()).isEqualTo(P2);
	}

	@Test
	void waitersOfTheSamePriorityAcrossReleasesKeepArrivalOrder() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(0));
		LanePermit a = admitNow(lanes, P0);
		LanePermit b = admitNow(lanes, P0); // on P1's permit
		TestSubscriber<LanePermit> w1 = request(lanes, P0);
		TestSubscriber<LanePermit> w2 = request(lanes, P0);

		b.release(); // the P1 permit frees first: still w1's turn
		assertThat(admitted(w1).lane()).isEqualTo(P1);
		assertWaiting(w2);
		a.release();
		assertThat(admitted(w2).lane()).isEqualTo(P0);
	}

	// ---------------------------------------------------------------- aging

	@Test
	void withoutAgingAFreshUrgentWaiterOvertakesALongWaitingBatchWaiter() {
		PriorityLanes lanes = lanes(LaneSpec.of(0), LaneSpec.of(0), LaneSpec.of(1));
		LanePermit held = admitNow(lanes, P2);
		TestSubscriber<LanePermit> batch = request(lanes, P2);
		clock.advanceTimeBy(Duration.ofSeconds(25));
		TestSubscriber<LanePermit> chat = request(lanes, P0);

		held.release();

		admitted(chat);
		assertWaiting(batch);
	}

	@Test
	void agedWaiterIsServedOnePriorityHigherPerPeriod() {
		PriorityLanes lanes = lanes(LaneSpec.of(0), LaneSpec.of(0),
				LaneSpec.of(1).agingAfter(Duration.ofSeconds(10)));
		LanePermit held = admitNow(lanes, P2);
		TestSubscriber<LanePermit> batch = request(lanes, P2);
		clock.advanceTimeBy(Duration.ofSeconds(15));
		TestSubscriber<LanePermit> assist = request(lanes, P1);
		TestSubscriber<LanePermit> chat = request(lanes, P0);

		// one period: batch competes as P1 and, having arrived first, beats the P1 waiter, but not P0
		held.release();
		LanePermit chatPermit = admitted(chat);
		assertWaiting(batch);
		assertWaiting(assist);

		chatPermit.release();
		LanePermit batchPermit = admitted(batch);
		assertWaiting(assist);
		assertThat(batchPermit.lane()).isEqualTo(P2);
	}

	@Test
	void agingTwoPeriodsLetsBatchBeatLaterUrgentArrivals() {
		PriorityLanes lanes = lanes(LaneSpec.of(0), LaneSpec.of(0),
				LaneSpec.of(1).agingAfter(Duration.ofSeconds(10)).maxQueueWait(Duration.ofMinutes(1)));
		LanePermit held = admitNow(lanes, P2);
		TestSubscriber<LanePermit> batch = request(lanes, P2);
		clock.advanceTimeBy(Duration.ofSeconds(20));
		TestSubscriber<LanePermit> chat = request(lanes, P0);

		held.release();

		admitted(batch);
		assertWaiting(chat);
	}

	// ---------------------------------------------------------------- lending and preemption

	@Test
	void lendingLetsLessUrgentWorkUseIdleUrgentPermitsUpToTheFraction() {
		PriorityLanes lanes = lanes(LaneSpec.of(4).lendToLower(0.5), LaneSpec.of(0), LaneSpec.of(1));

		assertThat(admitNow(lanes, P2).lane()).isEqualTo(P2);
		assertThat(admitNow(lanes, P2).lane()).isEqualTo(P0);
		assertThat(admitNow(lanes, P2).lane()).isEqualTo(P0);
		TestSubscriber<LanePermit> fourth = request(lanes, P2);

		assertWaiting(fourth);
		assertThat(lanes.borrowedInFlight(P2)).isEqualTo(2);
		assertThat(admitNow(lanes, P0).lane()).as("P0 keeps the rest").isEqualTo(P0);
	}

	@Test
	void lentPermitWithoutPreemptionMakesTheOwnerWait() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).lendToLower(1.0), LaneSpec.of(0), LaneSpec.of(0));
		LanePermit batch = admitNow(lanes, P2);

		TestSubscriber<LanePermit> chat = request(lanes, P0);

		assertWaiting(chat);
		batch.release();
		assertThat(admitted(chat).lane()).isEqualTo(P0);
	}

	@Test
	void urgentArrivalPreemptsTheLeastUrgentMostRecentBorrower() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(3).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(0),
				LaneSpec.of(0), metrics);
		LanePermit assist = admitNow(lanes, P1);
		LanePermit olderBatch = admitNow(lanes, P2);
		LanePermit newerBatch = admitNow(lanes, P2);
		List<String> stopped = new ArrayList<>();
		assist.onPreempted(e -> stopped.add("assist " + e.priority() + " on " + e.lane()));
		olderBatch.onPreempted(e -> stopped.add("olderBatch"));
		newerBatch.onPreempted(e -> stopped.add("newerBatch " + e.priority() + " on " + e.lane()));

		LanePermit chat = admitNow(lanes, P0);

		assertThat(chat.lane()).isEqualTo(P0);
		assertThat(stopped).containsExactly("newerBatch P2 on P0");
		assertThat(metrics.preempted()).contains(P2);
		assertThat(lanes.borrowedInFlight(P2)).isEqualTo(1);

		admitNow(lanes, P0);
		admitNow(lanes, P0);
		assertThat(stopped).containsExactly("newerBatch P2 on P0", "olderBatch", "assist P1 on P0");
		assertThat(lanes.inFlight(P0)).isEqualTo(3);
		assertWaiting(request(lanes, P0));

		newerBatch.release(); // the preempted stream's own release is a no-op
		assertThat(lanes.inFlight(P0)).isEqualTo(3);
	}

	@Test
	void urgentArrivalAlsoReclaimsAPermitThatALessUrgentLaneLent() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1).lendToLower(1.0).preemptBorrowers(true),
				LaneSpec.of(0));
		admitNow(lanes, P0);
		LanePermit batch = admitNow(lanes, P2);
		List<PreemptedException> stopped = new ArrayList<>();
		batch.onPreempted(stopped::add);
		assertThat(batch.lane()).isEqualTo(P1);

		LanePermit chat = admitNow(lanes, P0);

		assertThat(chat.lane()).as("P0 borrows the reclaimed P1 permit").isEqualTo(P1);
		assertThat(stopped).singleElement().satisfies(e -> {
			assertThat(e.priority()).isEqualTo(P2);
			assertThat(e.lane()).isEqualTo(P1);
		});
	}

	@Test
	void lanesThatNeverBorrowNeverReclaimOtherLanesPermits() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).borrowFromLower(false),
				LaneSpec.of(1).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(0));
		admitNow(lanes, P0);
		LanePermit batch = admitNow(lanes, P2);
		List<PreemptedException> stopped = new ArrayList<>();
		batch.onPreempted(stopped::add);

		assertWaiting(request(lanes, P0));
		assertThat(stopped).isEmpty();
	}

	@Test
	void actionRegisteredAfterPreemptionRunsAtOnceAndAfterReleaseNever() {
		PriorityLanes lanes = lanes(LaneSpec.of(2).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(0),
				LaneSpec.of(0));
		LanePermit released = admitNow(lanes, P2);
		LanePermit preempted = admitNow(lanes, P2);
		admitNow(lanes, P0); // takes back the most recent one
		List<PreemptedException> seen = new ArrayList<>();

		preempted.onPreempted(seen::add);
		released.release();
		released.onPreempted(seen::add);

		assertThat(seen).hasSize(1);
		assertThat(seen.get(0).priority()).isEqualTo(P2);
		assertThat(seen.get(0).lane()).isEqualTo(P0);
	}

	@Test
	void throwingPreemptionActionNeverBreaksTheLanes() {
		List<Throwable> dropped = new ArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		PriorityLanes lanes = lanes(LaneSpec.of(1).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(0),
				LaneSpec.of(0));
		LanePermit batch = admitNow(lanes, P2);
		batch.onPreempted(e -> {
			throw new IllegalStateException("listener bug");
		});

		LanePermit chat = admitNow(lanes, P0);

		assertThat(dropped).extracting(Throwable::getMessage).containsExactly("listener bug");
		chat.release();
		assertThat(admitNow(lanes, P2).lane()).isEqualTo(P0);
	}

	@Test
	void throwingMetricsNeverBreakAdmission() {
		List<Throwable> dropped = new ArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		GuardMetrics broken = new GuardMetrics() {
			@Override
			public void admissionWaited(String lanes, Priority priority, long nanos) {
				throw new IllegalStateException("waited");
			}

			@Override
			public void admissionRejected(String lanes, Priority priority, String reason) {
				throw new IllegalStateException("rejected");
			}
		};
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueSize(0), LaneSpec.of(0), LaneSpec.of(0), broken);

		LanePermit permit = admitNow(lanes, P0);
		assertThat(rejection(request(lanes, P0)).reason()).isEqualTo(Reason.QUEUE_FULL);
		permit.release();
		admitNow(lanes, P0);

		assertThat(dropped).extracting(Throwable::getMessage).containsExactly("waited", "rejected", "waited");
	}

	@Test
	void subscriberThatThrowsOnThePermitGetsItTakenBack() {
		List<Throwable> dropped = new ArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueSize(0), LaneSpec.of(0), LaneSpec.of(0));

		lanes.acquire(P0).subscribe(new CoreSubscriber<LanePermit>() {
			@Override
			public void onSubscribe(Subscription s) {
				s.request(1);
			}

			@Override
			public void onNext(LanePermit permit) {
				throw new IllegalStateException("subscriber bug");
			}

			@Override
			public void onError(Throwable t) {
			}

			@Override
			public void onComplete() {
			}
		});

		assertThat(dropped).extracting(Throwable::getMessage).containsExactly("subscriber bug");
		assertThat(lanes.inFlight(P0)).isZero();
		admitNow(lanes, P0);
	}

	// ---------------------------------------------------------------- disposal

	@Test
	void disposeFailsWaitersAndRefusesLaterRequests() {
		RecordingMetrics metrics = new RecordingMetrics();
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0), metrics);
		LanePermit held = admitNow(lanes, P0);
		TestSubscriber<LanePermit> waiter = request(lanes, P0);

		lanes.dispose();

		assertThat(lanes.isDisposed()).isTrue();
		AdmissionRejectedException e = rejection(waiter);
		assertThat(e.reason()).isEqualTo(Reason.DISPOSED);
		assertThat(e.getMessage()).contains("'test' are disposed");
		assertThat(rejection(request(lanes, P2)).reason()).isEqualTo(Reason.DISPOSED);
		assertThat(lanes.scheduler(P0).isDisposed()).isTrue();
		assertThat(lanes.queued(P0)).isZero();
		held.release();
		assertThat(lanes.inFlight(P0)).isZero();
		assertThat(metrics.admissionRejections()).containsOnlyOnce("P0 DISPOSED");
	}

	// ---------------------------------------------------------------- no blocking

	@Test
	void blockHoundIsWatchingNonBlockingThreads() {
		assertThatThrownBy(() -> Mono.fromCallable(() -> new java.util.concurrent.CountDownLatch(1)
						.await(1, java.util.concurrent.TimeUnit.MILLISECONDS))
				.subscribeOn(Schedulers.parallel()).block(Duration.ofSeconds(10)))
				.hasMessageContaining("Blocking call");
	}

	@Test
	void acquiringWaitingAndReleasingOnNonBlockingThreadsNeverBlocks() {
		PriorityLanes lanes = PriorityLanes.builder()
				.lane(P0, LaneSpec.of(1).maxQueueWait(Duration.ofSeconds(30)))
				.lane(P1, LaneSpec.of(1))
				.lane(P2, LaneSpec.of(1).maxQueueSize(10_000))
				.build(); // real timer: Schedulers.parallel()
		built.add(lanes);

		Long served = Flux.range(0, 400)
				.flatMap(i -> Mono.defer(() -> lanes.acquire(Priority.values()[i % 3]))
						.subscribeOn(Schedulers.parallel())
						.publishOn(Schedulers.parallel())
						.doOnNext(LanePermit::release), 64)
				.count()
				.block(Duration.ofSeconds(30));

		assertThat(served).isEqualTo(400L);
		for (Priority p : Priority.values()) {
			assertThat(lanes.inFlight(p)).isZero();
			assertThat(lanes.borrowedInFlight(p)).isZero();
			assertThat(lanes.queued(p)).isZero();
		}
	}

	// ---------------------------------------------------------------- resizing

	@Test
	void growingALaneHandsTheNewPermitsToWaitersAtOnce() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1).borrowFromLower(false));
		LanePermit first = admitNow(lanes, P2);
		TestSubscriber<LanePermit> second = request(lanes, P2);
		TestSubscriber<LanePermit> third = request(lanes, P2);
		assertWaiting(second);

		lanes.resize(P2, 3);

		admitted(second);
		admitted(third);
		assertThat(lanes.concurrency(P2)).isEqualTo(3);
		assertThat(lanes.spec(P2).concurrency()).as("the built size").isEqualTo(1);
		assertThat(lanes.inFlight(P2)).isEqualTo(3);
		first.release();
		assertThat(lanes.inFlight(P2)).isEqualTo(2);
	}

	@Test
	void shrinkingALaneKeepsAdmittedStreamsAndAdmitsOnlyUnderTheNewSize() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(4).borrowFromLower(false));
		List<LanePermit> running = new ArrayList<>();
		for (int i = 0; i < 4; i++) {
			running.add(admitNow(lanes, P2));
		}

		lanes.resize(P2, 2);

		assertThat(lanes.inFlight(P2)).as("nobody is stopped").isEqualTo(4);
		assertThat(lanes.tryAcquire(P2)).isNull();
		TestSubscriber<LanePermit> waiting = request(lanes, P2);
		running.remove(0).release();
		running.remove(0).release();
		assertWaiting(waiting); // two still run on a lane of two
		running.remove(0).release();
		admitted(waiting).release();
		running.remove(0).release();
		assertThat(lanes.inFlight(P2)).isZero();
		assertThat(lanes.concurrency(P2)).isEqualTo(2);
		LanePermit a = admitNow(lanes, P2);
		LanePermit b = admitNow(lanes, P2);
		assertThat(lanes.tryAcquire(P2)).as("two permits, not four").isNull();
		a.release();
		b.release();
	}

	@Test
	void aLaneResizedToZeroAdmitsNothingOfItsOwnAndReopensWhenResizedBack() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).borrowFromLower(false), LaneSpec.of(1).borrowFromLower(false),
				LaneSpec.of(2).maxQueueWait(Duration.ofSeconds(1)));
		lanes.resize(P2, 0);

		TestSubscriber<LanePermit> waiting = request(lanes, P2);
		assertWaiting(waiting);
		clock.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(rejection(waiting).reason()).isEqualTo(Reason.WAIT_TIMEOUT);

		TestSubscriber<LanePermit> next = request(lanes, P2);
		lanes.resize(P2, 2);
		admitted(next).release();
	}

	@Test
	void aShrunkLaneLendsAndLetsBorrowOnlyWhatItsNewSizeAllows() {
		PriorityLanes lanes = lanes(LaneSpec.of(4).lendToLower(1.0), LaneSpec.of(0).borrowFromLower(false),
				LaneSpec.of(4));
		lanes.resize(P0, 1);
		LanePermit lent = admitNow(lanes, P1);
		assertThat(lent.lane()).isEqualTo(P0);
		TestSubscriber<LanePermit> second = request(lanes, P1);
		assertWaiting(second); // P0 has one permit now, already lent
		lent.release();
		admitted(second).release();

		lanes.resize(P2, 1);
		LanePermit own = admitNow(lanes, P2);
		LanePermit borrowed = admitNow(lanes, P0); // P0's own permit
		TestSubscriber<LanePermit> p0 = request(lanes, P0);
		assertWaiting(p0); // P2's single permit is in use: nothing left to borrow
		own.release();
		assertThat(admitted(p0).lane()).isEqualTo(P2);
		borrowed.release();
		p0.getReceivedOnNext().get(0).release();
	}

	@Test
	void resizeRefusesANegativeSizeNamingTheLane() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));
		assertThatThrownBy(() -> lanes.resize(P1, -1)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("lane P1").hasMessageContaining("concurrency").hasMessageContaining("-1");
		assertThat(lanes.concurrency(P1)).isEqualTo(1);
	}

	@Test
	void resizeIsCountedAndTheCapacityGaugeFollowsIt() {
		io.micrometer.core.instrument.simple.SimpleMeterRegistry registry =
				new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
		PriorityLanes lanes = lanes(LaneSpec.of(2), LaneSpec.of(2), LaneSpec.of(8),
				new dev.aiguard.metrics.MicrometerGuardMetrics(registry));
		assertThat(registry.get("aiguard.lane.capacity").tag("priority", "P2").gauge().value()).isEqualTo(8.0);

		lanes.resize(P2, 4);
		lanes.resize(P2, 4); // no change: not counted

		assertThat(registry.get("aiguard.lane.capacity").tag("priority", "P2").gauge().value()).isEqualTo(4.0);
		assertThat(registry.get("aiguard.lane.resized").tag("priority", "P2").counter().count()).isEqualTo(1.0);
	}
}
