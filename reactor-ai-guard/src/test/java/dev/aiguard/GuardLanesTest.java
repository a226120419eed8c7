package dev.aiguard;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.AdmissionRejectedException.Reason;
import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.core.Source;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.blockhound.BlockingOperationError;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static java.util.concurrent.TimeUnit.NANOSECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Outcome;

/**
 * Priority lanes as the guard drives them: non-blocking admission, priority from the Context, one
 * permit per request held across its retries and released exactly once whatever ends it, typed
 * refusals, blocking upstreams on the lane's own threads, preemption, and the races between them.
 * Queue deadlines, retries and stall deadlines run on one virtual scheduler.
 */
@Timeout(60)
class GuardLanesTest {

	static final Duration CONFIRM = Duration.ofNanos(StallWatch.CONFIRM_DELAY_NANOS);

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final List<PriorityLanes> built = new ArrayList<>();
	final Reports reports = new Reports();
	final RecordingMetrics laneMetrics = new RecordingMetrics();

	@AfterEach
	void dispose() {
		built.forEach(PriorityLanes::dispose);
		vts.dispose();
	}

	/** Lanes that only ever use their own permits: no borrowing, no lending. */
	PriorityLanes isolated(int p0, int p1, int p2) {
		return lanes(LaneSpec.of(p0).borrowFromLower(false), LaneSpec.of(p1).borrowFromLower(false), LaneSpec.of(p2));
	}

	PriorityLanes isolated(int p0, UnaryOperator<LaneSpec> p1, int p2) {
		return lanes(LaneSpec.of(p0).borrowFromLower(false), p1.apply(LaneSpec.of(1).borrowFromLower(false)),
				LaneSpec.of(p2));
	}

	/** P0 lends its one permit to P2 (which has none of its own) and takes it back when it needs it. */
	PriorityLanes preempting() {
		return lanes(LaneSpec.of(1).borrowFromLower(false).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(1),
				LaneSpec.of(0));
	}

	PriorityLanes lanes(LaneSpec p0, LaneSpec p1, LaneSpec p2) {
		PriorityLanes lanes = PriorityLanes.builder()
				.name("chat")
				.lane(P0, p0)
				.lane(P1, p1)
				.lane(P2, p2)
				.timer(vts)
				.metrics(laneMetrics)
				.build();
		built.add(lanes);
		return lanes;
	}

	GuardPolicy.Builder policy(PriorityLanes lanes) {
		// upstream cancels after a preemption run on the virtual clock too, so they are done when it has advanced
		return Policies.onVirtualTime("chat", vts, reports).lanes(lanes).stall(StallSpec.defaults().cancelOn(vts));
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token).concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()));
	}

	static ProviderServerException serverError() {
		return new ProviderServerException("test", 503, "server_error", null, "HTTP 503: unavailable", null);
	}

	/** A source that counts its subscriptions; the n-th (0-based) gets {@code perAttempt[n]}, the last repeated. */
	@SafeVarargs
	static Flux<ChatChunk> attempts(AtomicInteger subscriptions, Flux<ChatChunk>... perAttempt) {
		return Flux.defer(() -> {
			int n = subscriptions.getAndIncrement();
			return perAttempt[Math.min(n, perAttempt.length - 1)];
		});
	}

	static void finish(TestPublisher<ChatChunk> upstream, String token) {
		upstream.next(ChatChunk.token(token)).next(ChatChunk.done()).complete();
	}

	/** Runs {@code action} on a non-blocking thread, where BlockHound fails any blocking call. */
	static void onParallel(Runnable action) {
		Mono.fromRunnable(action).subscribeOn(Schedulers.parallel()).block(Duration.ofSeconds(10));
	}

	static void assertIdle(PriorityLanes lanes) {
		for (Priority p : Priority.values()) {
			assertThat(lanes.inFlight(p)).as("%s in flight", p).isZero();
			assertThat(lanes.borrowedInFlight(p)).as("%s borrowed", p).isZero();
			assertThat(lanes.queued(p)).as("%s queued", p).isZero();
		}
	}

	/**
	 * Proves no permit was lost or given back twice: exactly {@code concurrency} requests of
	 * {@code p} get a permit, the next one waits. For lanes that do not borrow.
	 */
	static void assertCapacity(PriorityLanes lanes, Priority p, int concurrency) {
		List<TestSubscriber<LanePermit>> holders = new ArrayList<>();
		for (int i = 0; i <= concurrency; i++) {
			TestSubscriber<LanePermit> holder = TestSubscriber.create();
			lanes.acquire(p).subscribe(holder);
			holders.add(holder);
		}
		long granted = holders.stream().filter(h -> !h.getReceivedOnNext().isEmpty()).count();
		assertThat(granted).as("%s permits available", p).isEqualTo(concurrency);
		assertThat(lanes.queued(p)).isEqualTo(1);
		for (TestSubscriber<LanePermit> h : holders) {
			h.cancel();
			h.getReceivedOnNext().forEach(LanePermit::release);
		}
		assertIdle(lanes);
	}

	GuardReport reportOf(Priority p) {
		return reports.stream().filter(r -> r.priority() == p).reduce((a, b) -> b).orElseThrow();
	}

	// ---- admission ----

	@Test
	void aRequestWaitsForAdmissionWithoutBlockingAThread() {
		PriorityLanes lanes = isolated(1, 1, 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).build());
		TestPublisher<ChatChunk> first = TestPublisher.create();
		TestSubscriber<ChatChunk> a = TestSubscriber.create();
		TestSubscriber<ChatChunk> b = TestSubscriber.create();
		AtomicInteger secondSubscribed = new AtomicInteger();

		onParallel(() -> first.flux().transform(guard).subscribe(a));
		assertThat(lanes.inFlight(P1)).isEqualTo(1);

		// the second request parks in the queue; the parallel thread that subscribed it returns at once
		onParallel(() -> attempts(secondSubscribed, answer("b")).transform(guard).subscribe(b));
		assertThat(lanes.queued(P1)).isEqualTo(1);
		assertThat(secondSubscribed).hasValue(0);
		assertThat(b.getReceivedOnNext()).isEmpty();
		assertThat(b.isTerminatedOrCancelled()).isFalse();

		// the first answer ends on a non-blocking thread, which hands its permit to the second
		onParallel(() -> finish(first, "a"));
		assertThat(a.isTerminatedComplete()).isTrue();
		assertThat(secondSubscribed).hasValue(1);
		assertThat(b.isTerminatedComplete()).isTrue();
		assertThat(b.getReceivedOnNext()).extracting(ChatChunk::text).contains("b");
		assertIdle(lanes);
		assertThat(laneMetrics.waitedNanos(P1)).hasSize(2);
	}

	@Test
	void thePriorityComesFromTheContextElseThePolicyDefault() {
		PriorityLanes lanes = isolated(1, 1, 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).defaultPriority(P2).build());
		TestPublisher<ChatChunk> urgent = TestPublisher.create();
		TestPublisher<ChatChunk> batch = TestPublisher.create();
		TestSubscriber<ChatChunk> u = TestSubscriber.create();
		TestSubscriber<ChatChunk> b = TestSubscriber.create();

		urgent.flux().transform(guard).contextWrite(P0.asContext()).subscribe(u);
		batch.flux().transform(guard).subscribe(b);

		assertThat(lanes.inFlight(P0)).isEqualTo(1);
		assertThat(lanes.inFlight(P1)).isZero();
		assertThat(lanes.inFlight(P2)).isEqualTo(1);
		finish(urgent, "u");
		finish(batch, "b");
		assertIdle(lanes);
		assertThat(reports).extracting(GuardReport::priority).containsExactly(P0, P2);
	}

	@Test
	void thePermitIsHeldAcrossRetriesAndARetriedRequestDoesNotQueueAgain() {
		PriorityLanes lanes = isolated(1, 1, 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes)
				.retry(RetryRules.backoff(3, Duration.ofSeconds(1)).jitter(0))
				.build());
		AtomicInteger firstAttempts = new AtomicInteger();
		AtomicInteger secondSubscribed = new AtomicInteger();
		TestSubscriber<ChatChunk> a = TestSubscriber.create();
		TestSubscriber<ChatChunk> b = TestSubscriber.create();

		attempts(firstAttempts, Flux.error(serverError()), Flux.error(serverError()), answer("a")).transform(guard)
				.subscribe(a);
		attempts(secondSubscribed, answer("b")).transform(guard).subscribe(b);
		assertThat(firstAttempts).hasValue(1);
		assertThat(lanes.inFlight(P1)).as("held while backing off").isEqualTo(1);
		assertThat(lanes.queued(P1)).isEqualTo(1);

		vts.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(firstAttempts).hasValue(2);
		assertThat(lanes.inFlight(P1)).isEqualTo(1);
		assertThat(lanes.queued(P1)).as("the waiter did not get the permit between attempts").isEqualTo(1);
		assertThat(secondSubscribed).hasValue(0);

		vts.advanceTimeBy(Duration.ofSeconds(2));
		assertThat(firstAttempts).hasValue(3);
		assertThat(a.isTerminatedComplete()).isTrue();
		assertThat(b.isTerminatedComplete()).isTrue();
		assertThat(secondSubscribed).hasValue(1);
		assertIdle(lanes);
		assertThat(laneMetrics.waitedNanos(P1)).as("one admission per request, not per attempt").hasSize(2);
		assertThat(laneMetrics.waitedNanos(P1)).containsExactly(0L, Duration.ofSeconds(3).toNanos());
		assertThat(reports).extracting(r -> r.attempts().size()).containsExactlyInAnyOrder(3, 1);
		assertCapacity(lanes, P1, 1);
	}

	// ---- release exactly once ----

	@Test
	void thePermitIsFreeBeforeTheSubscriberSeesTheEndSoTheNextRequestInLineGetsIt() {
		PriorityLanes lanes = isolated(1, spec -> spec.maxQueueSize(0), 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).build());
		AtomicInteger sent = new AtomicInteger();

		// concatMap subscribes each request from the end signal of the one before
		StepVerifier.create(Flux.range(0, 3).concatMap(i -> attempts(sent, i == 1 ? Flux.error(serverError())
						: answer("a" + i)).transform(guard).onErrorResume(ProviderServerException.class, e -> Flux.empty())))
				.expectNextCount(6)
				.verifyComplete();

		assertThat(sent).hasValue(3);
		assertThat(reports).extracting(GuardReport::outcome)
				.containsExactlyInAnyOrder(Outcome.SUCCESS, Outcome.FAILURE, Outcome.SUCCESS);
		assertThat(laneMetrics.admissionRejections()).isEmpty();
		assertIdle(lanes);
	}

	@Test
	void thePermitIsReleasedWhenTheAnswerCompletes() {
		PriorityLanes lanes = isolated(1, 1, 1);
		StepVerifier.create(answer("a").transform(AiGuard.of(policy(lanes).build())))
				.expectNextCount(3)
				.verifyComplete();
		assertIdle(lanes);
		assertCapacity(lanes, P1, 1);
	}

	@Test
	void thePermitIsReleasedWhenTheAnswerFails() {
		PriorityLanes lanes = isolated(1, 1, 1);
		StepVerifier.create(Flux.<ChatChunk>error(serverError()).transform(AiGuard.of(policy(lanes).build())))
				.verifyError(ProviderServerException.class);
		assertIdle(lanes);
		assertCapacity(lanes, P1, 1);
	}

	@Test
	void thePermitIsReleasedWhenTheSubscriberCancels() {
		PriorityLanes lanes = isolated(1, 1, 1);
		TestPublisher<ChatChunk> upstream = TestPublisher.create();
		StepVerifier.create(upstream.flux().transform(AiGuard.of(policy(lanes).build())))
				.then(() -> upstream.next(ChatChunk.token("a")))
				.expectNextCount(1)
				.then(() -> assertThat(lanes.inFlight(P1)).isEqualTo(1))
				.thenCancel()
				.verify(Duration.ofSeconds(5));
		upstream.assertWasCancelled();
		assertIdle(lanes);
		assertCapacity(lanes, P1, 1);
	}

	@Test
	void thePermitIsReleasedWhenTheStreamStalls() {
		PriorityLanes lanes = isolated(1, 1, 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes)
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5)))
				.build());
		StepVerifier.create(Flux.<ChatChunk>never().transform(guard))
				.then(() -> assertThat(lanes.inFlight(P1)).isEqualTo(1))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(5).plus(CONFIRM)))
				.verifyError(StreamStalledException.class);
		assertIdle(lanes);
		assertCapacity(lanes, P1, 1);
	}

	@Test
	void cancellingWhileQueuedLeavesTheQueueAndConsumesNothing() {
		PriorityLanes lanes = isolated(1, 1, 1);
		CircuitBreaker breaker = CircuitBreaker.builder("llm")
				.config(BreakerConfig.custom().countWindow(10).minimumCalls(10).build())
				.clock(() -> vts.now(NANOSECONDS))
				.build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).breaker(breaker).build());
		TestPublisher<ChatChunk> holder = TestPublisher.create();
		TestSubscriber<ChatChunk> h = TestSubscriber.create();
		TestSubscriber<ChatChunk> q = TestSubscriber.create();
		AtomicInteger queuedSubscribed = new AtomicInteger();

		holder.flux().transform(guard).subscribe(h);
		attempts(queuedSubscribed, answer("q")).transform(guard).subscribe(q);
		assertThat(lanes.queued(P1)).isEqualTo(1);

		q.cancel();
		assertThat(lanes.queued(P1)).isZero();
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.CANCELLED);
			assertThat(r.attempts()).isEmpty();
		});

		finish(holder, "h");
		assertThat(queuedSubscribed).as("the cancelled request never ran").hasValue(0);
		assertThat(breaker.snapshot().calls()).as("only the holder was a call").isEqualTo(1);
		assertIdle(lanes);
		assertCapacity(lanes, P1, 1);
	}

	// ---- refusals ----

	@Test
	void aFullQueueRefusesWithATypedQueueFullRejection() {
		PriorityLanes lanes = isolated(1, spec -> spec.maxQueueSize(1), 1);
		CircuitBreaker breaker = CircuitBreaker.of("llm", BreakerConfig.defaults());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).breaker(breaker).build());
		TestPublisher<ChatChunk> holder = TestPublisher.create();
		TestSubscriber<ChatChunk> h = TestSubscriber.create();
		TestSubscriber<ChatChunk> q = TestSubscriber.create();
		AtomicInteger refusedSubscribed = new AtomicInteger();
		holder.flux().transform(guard).subscribe(h);
		answer("q").transform(guard).subscribe(q);

		StepVerifier.create(attempts(refusedSubscribed, answer("r")).transform(guard))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(AdmissionRejectedException.class);
					assertThat(((AdmissionRejectedException) e).reason()).isEqualTo(Reason.QUEUE_FULL);
					assertThat(((AdmissionRejectedException) e).priority()).isEqualTo(P1);
				})
				.verify(Duration.ofSeconds(5));

		assertThat(refusedSubscribed).hasValue(0);
		GuardReport r = reports.get(0);
		assertThat(r.outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(r.attempts()).isEmpty();
		assertThat(r.error()).isInstanceOf(AdmissionRejectedException.class);
		assertThat(breaker.rejectedCalls()).as("the breaker was never asked").isZero();

		finish(holder, "h");
		assertThat(q.isTerminatedComplete()).isTrue();
		assertIdle(lanes);
	}

	@Test
	void aQueueWaitLongerThanTheLaneAllowsIsATypedWaitTimeout() {
		PriorityLanes lanes = isolated(1, spec -> spec.maxQueueWait(Duration.ofSeconds(2)), 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).build());
		TestPublisher<ChatChunk> holder = TestPublisher.create();
		TestSubscriber<ChatChunk> h = TestSubscriber.create();
		holder.flux().transform(guard).subscribe(h);

		StepVerifier.create(answer("late").transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(2).minusMillis(1)))
				.then(() -> assertThat(lanes.queued(P1)).isEqualTo(1))
				.then(() -> vts.advanceTimeBy(Duration.ofMillis(1)))
				.expectErrorSatisfies(e -> assertThat(((AdmissionRejectedException) e).reason())
						.isEqualTo(Reason.WAIT_TIMEOUT))
				.verify(Duration.ofSeconds(5));

		assertThat(lanes.queued(P1)).isZero();
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.REJECTED);
			assertThat(r.attempts()).isEmpty();
			assertThat(r.duration()).isEqualTo(Duration.ofSeconds(2));
		});
		finish(holder, "h");
		assertIdle(lanes);
		assertThat(laneMetrics.admissionRejections()).containsExactly("P1 WAIT_TIMEOUT");
	}

	@Test
	void aRefusedRequestTakesTheFallbackLadderWhenThereIsOne() {
		PriorityLanes lanes = isolated(1, spec -> spec.maxQueueSize(0), 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes)
				.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy")).build())
				.build());
		TestPublisher<ChatChunk> holder = TestPublisher.create();
		TestSubscriber<ChatChunk> h = TestSubscriber.create();
		holder.flux().transform(guard).subscribe(h);

		StringBuilder text = new StringBuilder();
		StepVerifier.create(answer("never").transform(guard))
				.thenConsumeWhile(c -> true, c -> text.append(c.text()))
				.verifyComplete();

		assertThat(text).hasToString("busy");
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.source()).isEqualTo(Source.STATIC);
			assertThat(r.attempts()).isEmpty();
		});
		finish(holder, "h");
		assertIdle(lanes);
	}

	// ---- blocking upstreams ----

	/** A blocking call as a blocking SDK would make one; BlockHound reports it on a non-blocking thread. */
	static void blockBriefly() {
		try {
			new CountDownLatch(1).await(1, TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
		}
	}

	static Flux<ChatChunk> blockingSource(List<String> threads, Runnable onSubscribe) {
		return Flux.defer(() -> {
			threads.add(Thread.currentThread().getName());
			onSubscribe.run();
			blockBriefly();
			return answer("from a blocking SDK");
		});
	}

	@Test
	void aBlockingUpstreamIsSubscribedOnItsLanesScheduler() {
		PriorityLanes lanes = isolated(1, 1, 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).blockingUpstream(true).defaultPriority(P2).build());
		List<String> threads = new CopyOnWriteArrayList<>();

		StepVerifier.create(blockingSource(threads, () -> { }).transform(guard).subscribeOn(Schedulers.parallel()))
				.expectNextCount(3)
				.expectComplete()
				.verify(Duration.ofSeconds(10));
		StepVerifier.create(blockingSource(threads, () -> { }).transform(guard).contextWrite(P0.asContext())
						.subscribeOn(Schedulers.parallel()))
				.expectNextCount(3)
				.expectComplete()
				.verify(Duration.ofSeconds(10));

		assertThat(threads).hasSize(2);
		assertThat(threads.get(0)).startsWith("aiguard-p2");
		assertThat(threads.get(1)).startsWith("aiguard-p0");
		assertIdle(lanes);
	}

	@Test
	void withoutBlockingUpstreamTheSameSourceIsCaughtOnANonBlockingThread() {
		PriorityLanes lanes = isolated(1, 1, 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).defaultPriority(P2).build());

		StepVerifier.create(blockingSource(new CopyOnWriteArrayList<>(), () -> { }).transform(guard)
						.subscribeOn(Schedulers.parallel()))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BlockingOperationError.class))
				.verify(Duration.ofSeconds(10));
		assertIdle(lanes);
	}

	@Test
	void aBlockingBatchRequestOnLentUrgentCapacityStillRunsOnBatchThreads() {
		PriorityLanes lanes = preempting();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).blockingUpstream(true).defaultPriority(P2).build());
		List<String> threads = new CopyOnWriteArrayList<>();
		AtomicInteger borrowedWhileRunning = new AtomicInteger(-1);

		StepVerifier.create(blockingSource(threads, () -> borrowedWhileRunning.set(lanes.borrowedInFlight(P2)))
						.transform(guard).subscribeOn(Schedulers.parallel()))
				.expectNextCount(3)
				.expectComplete()
				.verify(Duration.ofSeconds(10));

		assertThat(borrowedWhileRunning).as("ran on P0's lent permit").hasValue(1);
		assertThat(threads).singleElement().asString().startsWith("aiguard-p2");
		assertIdle(lanes);
	}

	// ---- preemption ----

	@Test
	void preemptionFailsTheBorrowingStreamWithoutRetryAndGivesThePermitToTheUrgentArrival() {
		PriorityLanes lanes = preempting();
		CircuitBreaker breaker = CircuitBreaker.builder("llm")
				.config(BreakerConfig.custom().countWindow(10).minimumCalls(10).build())
				.clock(() -> vts.now(NANOSECONDS))
				.build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes)
				.defaultPriority(P2)
				.breaker(breaker)
				.retry(RetryRules.backoff(5, Duration.ofMillis(100)).jitter(0).retryOn(e -> true))
				.build());
		TestPublisher<ChatChunk> batchUpstream = TestPublisher.create();
		TestPublisher<ChatChunk> urgentUpstream = TestPublisher.create();
		AtomicInteger batchAttempts = new AtomicInteger();
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();
		TestSubscriber<ChatChunk> urgent = TestSubscriber.create();

		attempts(batchAttempts, batchUpstream.flux()).transform(guard).subscribe(batch);
		assertThat(lanes.borrowedInFlight(P2)).isEqualTo(1);

		urgentUpstream.flux().transform(guard).contextWrite(P0.asContext()).subscribe(urgent);
		urgentUpstream.assertSubscribers(1);
		assertThat(lanes.inFlight(P0)).as("the arrival got the permit at once").isEqualTo(1);
		assertThat(lanes.borrowedInFlight(P2)).isZero();

		vts.advanceTimeBy(CONFIRM);
		assertThat(batch.expectTerminalError()).isInstanceOfSatisfying(PreemptedException.class, e -> {
			assertThat(e.priority()).isEqualTo(P2);
			assertThat(e.lane()).isEqualTo(P0);
		});
		batchUpstream.assertWasCancelled();

		vts.advanceTimeBy(Duration.ofSeconds(10));
		assertThat(batchAttempts).as("a preempted stream is not retried").hasValue(1);
		GuardReport r = reportOf(P2);
		assertThat(r.outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(r.attempts()).extracting(GuardReport.Attempt::outcome).containsExactly(Outcome.REJECTED);
		assertThat(r.error()).isInstanceOf(PreemptedException.class);
		assertThat(breaker.snapshot().calls()).as("preemption is not the provider's failure").isZero();

		finish(urgentUpstream, "u");
		assertThat(urgent.isTerminatedComplete()).isTrue();
		assertIdle(lanes);
		assertThat(laneMetrics.preempted()).containsExactly(P2);
	}

	@Test
	void aStreamPreemptedAfterItsFirstTokensFailsAsAPartialAnswer() {
		PriorityLanes lanes = preempting();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).defaultPriority(P2).build());
		TestPublisher<ChatChunk> batchUpstream = TestPublisher.create();
		TestPublisher<ChatChunk> urgentUpstream = TestPublisher.create();
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();
		TestSubscriber<ChatChunk> urgent = TestSubscriber.create();

		batchUpstream.flux().transform(guard).subscribe(batch);
		batchUpstream.next(ChatChunk.token("a"), ChatChunk.token("b"));
		urgentUpstream.flux().transform(guard).contextWrite(P0.asContext()).subscribe(urgent);
		vts.advanceTimeBy(CONFIRM);

		assertThat(batch.getReceivedOnNext()).hasSize(2);
		assertThat(batch.expectTerminalError()).isInstanceOfSatisfying(PartialStreamException.class, e -> {
			assertThat(e.tokensDelivered()).isEqualTo(2);
			assertThat(e).hasCauseInstanceOf(PreemptedException.class);
		});
		assertThat(reportOf(P2).tokens()).isEqualTo(2);
		assertThat(reportOf(P2).outcome()).isEqualTo(Outcome.REJECTED);

		finish(urgentUpstream, "u");
		assertIdle(lanes);
	}

	// ---- races ----

	@Test
	void cancelRacingTheAdmissionGrantNeverLeaksAPermit() {
		PriorityLanes lanes = isolated(1, 1, 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).build());
		for (int i = 0; i < 15000; i++) {
			Sinks.Many<ChatChunk> holderUpstream = Sinks.many().unicast().onBackpressureBuffer();
			TestSubscriber<ChatChunk> holder = TestSubscriber.create();
			TestSubscriber<ChatChunk> waiter = TestSubscriber.create();
			holderUpstream.asFlux().transform(guard).subscribe(holder);
			assertThat(lanes.inFlight(P1)).as("round %d: the holder got the permit", i).isEqualTo(1);
			Flux.<ChatChunk>never().transform(guard).subscribe(waiter);
			assertThat(lanes.queued(P1)).isEqualTo(1);
			holderUpstream.tryEmitNext(ChatChunk.token("h"));
			holderUpstream.tryEmitNext(ChatChunk.done());

			RaceTestUtils.race(Schedulers.boundedElastic(), holderUpstream::tryEmitComplete, waiter::cancel);

			assertThat(holder.isTerminatedComplete()).isTrue();
			assertIdle(lanes);
		}
		assertCapacity(lanes, P1, 1);
	}

	@Test
	void cancelRacingCompletionReleasesThePermitOnce() {
		PriorityLanes lanes = isolated(1, 1, 1);
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).build());
		for (int i = 0; i < 500; i++) {
			reports.clear();
			Sinks.Many<ChatChunk> upstream = Sinks.many().unicast().onBackpressureBuffer();
			TestSubscriber<ChatChunk> user = TestSubscriber.create();
			upstream.asFlux().transform(guard).subscribe(user);
			assertThat(lanes.inFlight(P1)).as("round %d", i).isEqualTo(1);
			upstream.tryEmitNext(ChatChunk.token("a"));
			upstream.tryEmitNext(ChatChunk.done());

			RaceTestUtils.race(Schedulers.boundedElastic(), upstream::tryEmitComplete, user::cancel);

			assertIdle(lanes);
			assertThat(reports).hasSize(1);
		}
		assertCapacity(lanes, P1, 1);
	}

	@Test
	void preemptionRacingTokensEndsTheBorrowerCleanly() {
		PriorityLanes lanes = preempting();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(lanes).defaultPriority(P2).build());
		for (int i = 0; i < 300; i++) {
			Sinks.Many<ChatChunk> batchUpstream = Sinks.many().unicast().onBackpressureBuffer();
			TestPublisher<ChatChunk> urgentUpstream = TestPublisher.create();
			TestSubscriber<ChatChunk> batch = TestSubscriber.create();
			TestSubscriber<ChatChunk> urgent = TestSubscriber.create();
			batchUpstream.asFlux().transform(guard).subscribe(batch);
			assertThat(lanes.borrowedInFlight(P2)).as("round %d", i).isEqualTo(1);

			RaceTestUtils.race(Schedulers.boundedElastic(), () -> {
				for (int t = 0; t < 16; t++) {
					batchUpstream.tryEmitNext(ChatChunk.token("t"));
				}
				batchUpstream.tryEmitNext(ChatChunk.done());
				batchUpstream.tryEmitComplete();
			}, () -> urgentUpstream.flux().transform(guard).contextWrite(P0.asContext()).subscribe(urgent));
			vts.advanceTimeBy(CONFIRM);

			assertThat(batch.isTerminated()).as("round %d: the borrower ended", i).isTrue();
			assertThat(batch.getProtocolErrors()).isEmpty();
			if (batch.isTerminatedError()) {
				Throwable e = batch.getTerminalSignal().getThrowable();
				Throwable cause = e instanceof PartialStreamException ? e.getCause() : e;
				assertThat(cause).isInstanceOf(PreemptedException.class);
			}
			urgentUpstream.assertSubscribers(1);
			assertThat(lanes.inFlight(P0)).isEqualTo(1);
			finish(urgentUpstream, "u");
			assertThat(urgent.isTerminatedComplete()).isTrue();
			assertIdle(lanes);
		}
	}
}
