package dev.aiguard;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.StallPhase;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.test.publisher.TestPublisher;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P2;
import static java.util.concurrent.TimeUnit.NANOSECONDS;
import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * A blocking upstream's attempt between being set up and being called: the hop onto a lane thread.
 * The test owns that thread (a lane with one thread, held by a latch), so the hop lands exactly
 * when the test lets it; deadlines, queue waits and upstream cancels run on one virtual scheduler.
 * A preempted or cancelled attempt never calls its upstream when the hop lands, nor does a
 * fallback step start after a preemption; the wait for the thread is not the model's first-token
 * time, and a wait that runs out is the lane's refusal, not a stall the breaker counts.
 */
@Timeout(60)
class GuardLaneThreadTest {

	static final Duration CONFIRM = Duration.ofNanos(StallWatch.CONFIRM_DELAY_NANOS);
	static final Duration FIRST_TOKEN = Duration.ofSeconds(2);
	static final String HOP_HOOK = "GuardLaneThreadTest.hop";
	static final ChatRequest REQUEST = ChatRequest.of("m", List.of(ChatMessage.user("summarise the report")));

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	final RecordingMetrics metrics = new RecordingMetrics();
	final RecordingMetrics laneMetrics = new RecordingMetrics();
	final List<PriorityLanes> built = new ArrayList<>();
	final List<CountDownLatch> heldThreads = new ArrayList<>();

	@AfterEach
	void dispose() {
		heldThreads.forEach(CountDownLatch::countDown);
		built.forEach(PriorityLanes::dispose);
		vts.dispose();
	}

	/** P0 lends its one permit to P2 (no permits, one thread) and takes it back when it needs it. */
	PriorityLanes preempting() {
		return lanes(LaneSpec.of(1).borrowFromLower(false).lendToLower(1.0).preemptBorrowers(true),
				LaneSpec.of(0).threadCap(1));
	}

	PriorityLanes lanes(LaneSpec p0, LaneSpec p2) {
		PriorityLanes lanes = PriorityLanes.builder()
				.name("chat")
				.lane(P0, p0)
				.lane(Priority.P1, LaneSpec.of(1).borrowFromLower(false))
				.lane(P2, p2)
				.timer(vts)
				.metrics(laneMetrics)
				.build();
		built.add(lanes);
		return lanes;
	}

	GuardPolicy.Builder policy(PriorityLanes lanes) {
		// upstream cancels run on the virtual clock too, so they are done once it has advanced
		return Policies.onVirtualTime("chat", vts, reports, metrics)
				.lanes(lanes)
				.blockingUpstream(true)
				.defaultPriority(P2)
				.retry(RetryRules.none())
				.stall(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN).cancelOn(vts));
	}

	CircuitBreaker breaker() {
		return CircuitBreaker.builder("llm")
				.config(BreakerConfig.custom().countWindow(10).minimumCalls(10).build())
				.clock(() -> vts.now(NANOSECONDS))
				.build();
	}

	/** Holds the one thread of {@code lane} until the returned latch is counted down. */
	CountDownLatch holdThread(PriorityLanes lanes, Priority lane) throws InterruptedException {
		CountDownLatch running = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		heldThreads.add(release);
		lanes.scheduler(lane).schedule(() -> {
			running.countDown();
			try {
				release.await();
			}
			catch (InterruptedException e) {
				Thread.currentThread().interrupt();
			}
		});
		assertThat(running.await(10, SECONDS)).as("the %s thread is held", lane).isTrue();
		return release;
	}

	/** Returns once every task queued so far on the one thread of {@code lane} has run (its queue is FIFO). */
	static void drain(PriorityLanes lanes, Priority lane) throws InterruptedException {
		CountDownLatch done = new CountDownLatch(1);
		lanes.scheduler(lane).schedule(done::countDown);
		assertThat(done.await(10, SECONDS)).as("the %s thread ran its queue", lane).isTrue();
	}

	GuardReport reportOf(Priority p) {
		return reports.stream().filter(r -> r.priority() == p).reduce((a, b) -> b).orElseThrow();
	}

	// ---- preemption while the hop waits ----

	@Test
	void aRequestPreemptedWhileItsAttemptWaitsForALaneThreadNeverCallsItsUpstream() throws Exception {
		PriorityLanes lanes = preempting();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).build());
		CountDownLatch p2Thread = holdThread(lanes, P2);
		AtomicInteger calls = new AtomicInteger();
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();
		TestSubscriber<ChatChunk> urgent = TestSubscriber.create();

		guard.call(REQUEST, r -> {
			calls.incrementAndGet();
			return GuardLanesTest.answer("batch");
		}).subscribe(batch);
		assertThat(lanes.borrowedInFlight(P2)).as("on P0's lent permit").isEqualTo(1);
		guard.call(REQUEST, r -> GuardLanesTest.answer("urgent")).contextWrite(P0.asContext()).subscribe(urgent);
		assertThat(lanes.borrowedInFlight(P2)).as("taken back").isZero();

		p2Thread.countDown();
		drain(lanes, P2);
		assertThat(calls).as("the preempted attempt's upstream was called").hasValue(0);

		vts.advanceTimeBy(CONFIRM);
		assertThat(batch.expectTerminalError()).isInstanceOf(PreemptedException.class);
		assertThat(reportOf(P2).outcome()).isEqualTo(Outcome.REJECTED);
		urgent.block(Duration.ofSeconds(10));
		assertThat(urgent.isTerminatedComplete()).isTrue();
		GuardLanesTest.assertIdle(lanes);
	}

	@Test
	void aFallbackStepWaitingForALaneThreadNeverStartsAfterAPreemption() throws Exception {
		PriorityLanes lanes = preempting();
		AtomicInteger stepCalls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).blockingUpstream(false)
				.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.lightweight(r -> {
					stepCalls.incrementAndGet();
					return GuardLanesTest.answer("from the ladder");
				}, true)).build())
				.build());
		CountDownLatch p2Thread = holdThread(lanes, P2);
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();

		// the realtime attempt fails at once; the ladder's blocking step queues for the held thread
		guard.call(REQUEST, r -> Flux.error(GuardLanesTest.serverError())).subscribe(batch);
		guard.call(REQUEST, r -> Flux.never()).contextWrite(P0.asContext()).subscribe(TestSubscriber.create());
		assertThat(lanes.borrowedInFlight(P2)).isZero();

		p2Thread.countDown();
		drain(lanes, P2);
		assertThat(stepCalls).as("the step started after the preemption").hasValue(0);

		vts.advanceTimeBy(CONFIRM);
		assertThat(batch.expectTerminalError()).isInstanceOf(PreemptedException.class);
		assertThat(reportOf(P2).outcome()).isEqualTo(Outcome.REJECTED);
	}

	@Test
	void aLadderStepThatFailsAfterAPreemptionIsNotFollowedByTheNextStep() {
		PriorityLanes lanes = preempting();
		TestPublisher<ChatChunk> firstStep = TestPublisher.create();
		AtomicInteger secondStepCalls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).blockingUpstream(false)
				.fallback(FallbackChain.<ChatChunk>builder()
						.step(Fallback.lightweight(r -> firstStep.flux(), false))
						.step(Fallback.lightweight(r -> {
							secondStepCalls.incrementAndGet();
							return GuardLanesTest.answer("second");
						}, false))
						.build())
				.build());
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();

		guard.call(REQUEST, r -> Flux.error(GuardLanesTest.serverError())).subscribe(batch);
		firstStep.assertSubscribers(1);
		guard.call(REQUEST, r -> Flux.never()).contextWrite(P0.asContext()).subscribe(TestSubscriber.create());
		// before the preempted attempt is confirmed ended, its running step fails
		firstStep.error(new IllegalStateException("cache miss"));
		assertThat(secondStepCalls).as("a step started after the preemption").hasValue(0);

		vts.advanceTimeBy(CONFIRM);
		assertThat(batch.expectTerminalError()).isInstanceOf(PreemptedException.class);
		assertThat(secondStepCalls).hasValue(0);
	}

	// races the hop landing on the lane thread (the thread freed) against an urgent arrival preempting the permit
	@Test
	void preemptionRacingTheHopOntoTheLaneThreadNeverCallsTheUpstreamAfterItAndReleasesThePermitOnce() throws Exception {
		PriorityLanes lanes = preempting();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).build());
		// notes, as the hop's task starts on the P2 thread (before the guard looks at anything), how
		// many preemptions the lanes had finished: the guard heard of each before the lanes count it
		AtomicBoolean armed = new AtomicBoolean();
		AtomicInteger preemptionsAtLanding = new AtomicInteger();
		Schedulers.onScheduleHook(HOP_HOOK, task -> () -> {
			if (Thread.currentThread().getName().startsWith("aiguard-p2") && armed.compareAndSet(true, false)) {
				preemptionsAtLanding.set(laneMetrics.preempted().size());
			}
			task.run();
		});
		int rounds = 300;
		try {
			for (int i = 0; i < rounds; i++) {
				CountDownLatch p2Thread = holdThread(lanes, P2);
				AtomicInteger calls = new AtomicInteger();
				AtomicInteger cancels = new AtomicInteger();
				TestSubscriber<ChatChunk> batch = TestSubscriber.create();
				TestSubscriber<ChatChunk> urgent = TestSubscriber.create();
				guard.call(REQUEST, r -> {
					calls.incrementAndGet();
					return Flux.<ChatChunk>never().doOnCancel(cancels::incrementAndGet);
				}).subscribe(batch);
				assertThat(lanes.borrowedInFlight(P2)).as("round %d", i).isEqualTo(1);
				preemptionsAtLanding.set(-1);
				armed.set(true);

				RaceTestUtils.race(p2Thread::countDown,
						() -> guard.call(REQUEST, r -> Flux.never()).contextWrite(P0.asContext()).subscribe(urgent));
				drain(lanes, P2);
				vts.advanceTimeBy(CONFIRM);

				assertThat(preemptionsAtLanding.get()).as("round %d: the hop landed", i).isGreaterThanOrEqualTo(i);
				if (preemptionsAtLanding.get() > i) {
					assertThat(calls).as("round %d: upstream called after the preemption", i).hasValue(0);
				}
				assertThat(calls.get()).as("round %d: upstream calls", i).isLessThanOrEqualTo(1);
				// a call that began before the preemption was cancelled by it: none goes on on P0's permit
				assertThat(cancels.get()).as("round %d: upstream calls left running", i).isEqualTo(calls.get());
				assertThat(batch.expectTerminalError()).as("round %d", i).isInstanceOf(PreemptedException.class);
				assertThat(lanes.inFlight(P0)).isEqualTo(1);
				assertThat(lanes.borrowedInFlight(P2)).isZero();
				urgent.cancel();
				GuardLanesTest.assertIdle(lanes);
			}
		}
		finally {
			Schedulers.resetOnScheduleHook(HOP_HOOK);
		}
		assertThat(laneMetrics.preempted()).hasSize(rounds);
		assertThat(reports.stream().filter(r -> r.priority() == P2).map(GuardReport::outcome))
				.hasSize(rounds).containsOnly(Outcome.REJECTED);
		GuardLanesTest.assertCapacity(lanes, P0, 1);
	}

	// ---- the first-token clock and the wait for a thread ----

	@Test
	void theFirstTokenClockStartsWhenTheBlockingUpstreamIsCalledNotWhileItWaitsForALaneThread() throws Exception {
		PriorityLanes lanes = lanes(LaneSpec.of(1).borrowFromLower(false), LaneSpec.of(1).threadCap(1));
		CircuitBreaker breaker = breaker();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).breaker(breaker).build());
		CountDownLatch p2Thread = holdThread(lanes, P2);
		TestPublisher<ChatChunk> upstream = TestPublisher.create();
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();

		guard.call(REQUEST, r -> upstream.flux()).subscribe(batch);
		vts.advanceTimeBy(FIRST_TOKEN.multipliedBy(3));
		assertThat(batch.isTerminated()).as("waiting three first-token timeouts for a thread is not a stall").isFalse();

		p2Thread.countDown();
		drain(lanes, P2);
		upstream.assertSubscribers(1);
		vts.advanceTimeBy(FIRST_TOKEN.minusMillis(500));
		upstream.next(ChatChunk.token("a"), ChatChunk.done()).complete();

		assertThat(batch.isTerminatedComplete()).isTrue();
		GuardReport.Attempt attempt = reportOf(P2).attempts().get(0);
		assertThat(attempt.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(attempt.timeToFirstToken()).as("from the upstream's call").isEqualTo(FIRST_TOKEN.minusMillis(500));
		assertThat(breaker.snapshot().failures()).isZero();
		assertThat(breaker.snapshot().calls()).isEqualTo(1);
	}

	@Test
	void aBlockingUpstreamThatSendsNothingStallsOneFirstTokenTimeoutAfterItWasCalled() throws Exception {
		PriorityLanes lanes = lanes(LaneSpec.of(1).borrowFromLower(false), LaneSpec.of(1).threadCap(1));
		CircuitBreaker breaker = breaker();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).breaker(breaker).build());
		CountDownLatch p2Thread = holdThread(lanes, P2);
		TestPublisher<ChatChunk> upstream = TestPublisher.create();
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();

		guard.call(REQUEST, r -> upstream.flux()).subscribe(batch);
		vts.advanceTimeBy(FIRST_TOKEN.multipliedBy(3));
		p2Thread.countDown();
		drain(lanes, P2);
		vts.advanceTimeBy(FIRST_TOKEN.minus(CONFIRM));
		assertThat(batch.isTerminated()).isFalse();
		vts.advanceTimeBy(CONFIRM.multipliedBy(2));

		assertThat(batch.expectTerminalError()).isInstanceOfSatisfying(StreamStalledException.class,
				e -> assertThat(e.phase()).isEqualTo(StallPhase.FIRST_TOKEN));
		assertThat(breaker.snapshot().stalls()).as("the model's own stall").isEqualTo(1);
		upstream.assertWasCancelled();
	}

	@Test
	void anAttemptThatWaitsLongerThanItsLanesQueueWaitForAThreadIsRefusedAndNeverCallsItsUpstream() throws Exception {
		Duration queueWait = Duration.ofSeconds(5);
		PriorityLanes lanes = lanes(LaneSpec.of(1).borrowFromLower(false),
				LaneSpec.of(1).threadCap(1).maxQueueWait(queueWait));
		CircuitBreaker breaker = breaker();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).breaker(breaker).build());
		CountDownLatch p2Thread = holdThread(lanes, P2);
		AtomicInteger calls = new AtomicInteger();
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();

		guard.call(REQUEST, r -> {
			calls.incrementAndGet();
			return GuardLanesTest.answer("late");
		}).subscribe(batch);
		vts.advanceTimeBy(queueWait.minus(CONFIRM));
		assertThat(batch.isTerminated()).as("past the first-token timeout, within the queue wait").isFalse();
		vts.advanceTimeBy(CONFIRM.multipliedBy(2));

		assertThat(batch.expectTerminalError()).isInstanceOfSatisfying(AdmissionRejectedException.class, e -> {
			assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.WAIT_TIMEOUT);
			assertThat(e.priority()).isEqualTo(P2);
		});
		GuardReport report = reportOf(P2);
		assertThat(report.outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome).containsExactly(Outcome.REJECTED);
		assertThat(breaker.snapshot().calls()).as("not a call of the model").isZero();
		assertThat(breaker.snapshot().failures()).isZero();
		assertThat(metrics.stalled()).as("not a stall").isEmpty();
		assertThat(metrics.ended(Outcome.STALLED)).isZero();
		GuardLanesTest.assertIdle(lanes);

		p2Thread.countDown();
		drain(lanes, P2);
		assertThat(calls).as("the upstream was called after the attempt gave up").hasValue(0);
	}
}
