package dev.aiguard;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.Stall;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.Reports;
import dev.aiguard.testing.TrackingScheduler;
import dev.aiguard.truncation.TruncationSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import org.reactivestreams.Subscription;
import reactor.blockhound.BlockingOperationError;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.CallbackException;

/**
 * The first invariant, "a guarded stream always terminates", against what broke it: a user
 * callback that throws or blocks while a chunk is being delivered, a null chunk, an upstream
 * whose cancel blocks, and a lane permit taken back between attempts. Each test here failed (or
 * hung) before the matching fix.
 */
class GuardReliabilityTest {

	static final Duration CONFIRM = Duration.ofNanos(StallWatch.CONFIRM_DELAY_NANOS);
	static final ChatRequest REQUEST = ChatRequest.of("m", List.of(ChatMessage.user("hi")));

	/** A conversation with enough earlier rounds for a truncator to drop some. */
	static ChatRequest longConversation() {
		List<ChatMessage> messages = new ArrayList<>();
		messages.add(ChatMessage.system("You are terse."));
		for (int i = 0; i < 20; i++) {
			messages.add(ChatMessage.user("question " + i + " " + "words ".repeat(200)));
			messages.add(ChatMessage.assistant("answer " + i + " " + "words ".repeat(200)));
		}
		messages.add(ChatMessage.user("and now?"));
		return ChatRequest.of("m", messages);
	}

	final TrackingScheduler timer = new TrackingScheduler();
	final Reports reports = new Reports();
	/** The first report; a report is delivered right after the subscriber's terminal signal, maybe on another thread. */
	final CompletableFuture<GuardReport> firstReport = new CompletableFuture<>();
	final List<PriorityLanes> built = new ArrayList<>();
	final List<Scheduler> schedulers = new ArrayList<>();

	@AfterEach
	void dispose() {
		built.forEach(PriorityLanes::dispose);
		schedulers.forEach(Scheduler::dispose);
		timer.dispose();
	}

	PriorityLanes lanes(LaneSpec p0, LaneSpec p1, LaneSpec p2) {
		PriorityLanes lanes = PriorityLanes.builder().name("chat").lane(P0, p0).lane(P1, p1).lane(P2, p2)
				.timer(timer.virtualTime()).build();
		built.add(lanes);
		return lanes;
	}

	/** P0 lends its one permit to P2 (which has none of its own) and takes it back when it needs it. */
	PriorityLanes preempting() {
		return lanes(LaneSpec.of(1).borrowFromLower(false).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(1),
				LaneSpec.of(0));
	}

	CircuitBreaker breaker() {
		return CircuitBreaker.builder("llm").config(BreakerConfig.custom().countWindow(10).minimumCalls(10).build())
				.clock(() -> timer.now(TimeUnit.NANOSECONDS)).build();
	}

	GuardPolicy.Builder policy() {
		return Policies.onVirtualTime("reliability", timer, reports).onReport(firstReport::complete);
	}

	static void assertIdle(PriorityLanes lanes) {
		for (Priority p : Priority.values()) {
			assertThat(lanes.inFlight(p)).as("%s in flight", p).isZero();
			assertThat(lanes.borrowedInFlight(p)).as("%s borrowed", p).isZero();
			assertThat(lanes.queued(p)).as("%s queued", p).isZero();
		}
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token).concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()));
	}

	static ProviderServerException serverError() {
		return new ProviderServerException("test", 503, "server_error", null, "HTTP 503: unavailable", null);
	}

	/** An inspector for chat chunks that throws for the chunk whose text is {@code poison}. */
	static ChunkInspector<ChatChunk> throwingAt(String poison, RuntimeException thrown) {
		ChunkInspector<ChatChunk> chat = ChatChunk.inspector();
		return ChunkInspector.of(c -> {
			if (poison.equals(c.text())) {
				throw thrown;
			}
			return chat.isContent(c);
		}, chat::isHeartbeat, chat::isTerminal, chat::finishReason);
	}

	Scheduler upstreamThread() {
		Scheduler s = Schedulers.newBoundedElastic(1, 16, "upstream");
		schedulers.add(s);
		return s;
	}

	// ---- a callback that throws, a null chunk ----

	@Test
	void anInspectorThatThrowsOnAnAsynchronousUpstreamFailsTheStreamAndReleasesEverything() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));
		CircuitBreaker breaker = breaker();
		IllegalStateException bug = new IllegalStateException("inspector bug");
		AiGuard<ChatChunk> guard = AiGuard.of(policy().lanes(lanes).breaker(breaker)
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5)).maxDuration(Duration.ofSeconds(30)))
				.build(), throwingAt("c", bug));

		StepVerifier.create(answer("a", "b", "c", "d").publishOn(upstreamThread()).transform(guard))
				.expectNextCount(2)
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
						.cause().isInstanceOfSatisfying(CallbackException.class, c -> {
							assertThat(c.callback()).isEqualTo("ChunkInspector");
							assertThat(c).hasCause(bug);
						}))
				.verify(Duration.ofSeconds(5));

		assertThat(firstReport).succeedsWithin(Duration.ofSeconds(5)).satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
			assertThat(r.tokens()).isEqualTo(2);
		});
		assertIdle(lanes);
		assertThat(breaker.snapshot().calls()).as("the attempt settled its permission").isEqualTo(1);
		assertThat(timer.pending()).as("the deadline task stopped").isZero();
		timer.advance(Duration.ofMinutes(1));
		assertThat(reports).as("still one report after every deadline").hasSize(1);
	}

	@Test
	void aNullChunkFailsTheStreamWithNullPointerException() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));
		Scheduler upstreamThread = upstreamThread();
		// not a Reactor operator: nothing before the guard checks rule 2.13
		Publisher<ChatChunk> broken = s -> s.onSubscribe(new Subscription() {
			final AtomicInteger sent = new AtomicInteger();

			@Override
			public void request(long n) {
				if (sent.getAndIncrement() == 0) {
					upstreamThread.schedule(() -> {
						try {
							s.onNext(null);
						}
						catch (NullPointerException expected) {
							// rule 2.13: the subscriber throws it back, after ending the stream
						}
					});
				}
			}

			@Override
			public void cancel() {
			}
		});
		AiGuard<ChatChunk> guard = AiGuard.of(policy().lanes(lanes)
				.stall(StallSpec.defaults().maxDuration(Duration.ofSeconds(30))).build());

		StepVerifier.create(Flux.from(broken).transform(guard))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(NullPointerException.class)
						.hasMessageContaining("2.13"))
				.verify(Duration.ofSeconds(5));

		assertThat(firstReport).succeedsWithin(Duration.ofSeconds(5)).extracting(GuardReport::outcome)
				.isEqualTo(Outcome.FAILURE);
		assertIdle(lanes);
		assertThat(timer.pending()).isZero();
	}

	@Test
	void anErrorSignalWithoutACauseEndsTheStreamAndStillReachesTheFallbackLadder() {
		Publisher<ChatChunk> broken = s -> {
			s.onSubscribe(reactor.core.publisher.Operators.emptySubscription());
			try {
				s.onError(null);
			}
			catch (NullPointerException expected) {
				// rule 2.13: the subscriber throws it back, after ending the stream
			}
		};
		AiGuard<ChatChunk> guard = AiGuard.of(policy().fallback(FallbackChain.<ChatChunk>builder()
				.step(Fallback.staticText("busy")).build()).build());

		StepVerifier.create(Flux.from(broken).transform(guard))
				.expectNextMatches(c -> c.text().equals("busy"))
				.thenConsumeWhile(c -> true)
				.verifyComplete();
		StepVerifier.create(Flux.from(broken).transform(AiGuard.of(policy().build())))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(NullPointerException.class).hasMessageContaining("2.13"))
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void stallDetectAloneFailsOnAThrowingInspectorAndStopsItsTimer() {
		IllegalStateException bug = new IllegalStateException("inspector bug");
		StepVerifier.create(answer("a", "b").publishOn(upstreamThread())
						.transform(Stall.detect(StallSpec.defaults().scheduler(timer).maxDuration(Duration.ofSeconds(30)),
								throwingAt("b", bug))))
				.expectNext(ChatChunk.token("a"))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(CallbackException.class).hasCause(bug))
				.verify(Duration.ofSeconds(5));
		assertThat(timer.pending()).isZero();
	}

	@Test
	void aSubscriberThatThrowsFromOnNextEndsTheAttemptAndDeadlinesStillStop() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));
		AiGuard<ChatChunk> guard = AiGuard.of(policy().lanes(lanes)
				.stall(StallSpec.defaults().idleTimeout(Duration.ofSeconds(1)).maxDuration(Duration.ofSeconds(30)))
				.build());
		IllegalStateException bug = new IllegalStateException("subscriber bug");
		CompletableFuture<Throwable> error = new CompletableFuture<>();
		TestPublisher<ChatChunk> upstream = TestPublisher.create();
		upstream.flux().transform(guard).subscribe(new CoreSubscriber<ChatChunk>() {
			@Override
			public void onSubscribe(Subscription s) {
				s.request(Long.MAX_VALUE);
			}

			@Override
			public void onNext(ChatChunk chunk) {
				throw bug;
			}

			@Override
			public void onError(Throwable t) {
				error.complete(t);
			}

			@Override
			public void onComplete() {
				error.complete(null);
			}
		});
		upstream.next(ChatChunk.token("a"));

		assertThat(error).isCompletedWithValueMatching(
				e -> e instanceof PartialStreamException && e.getCause() == bug, "a partial answer failed by the bug");
		upstream.assertCancelled();
		assertThat(reports).singleElement().extracting(GuardReport::outcome).isEqualTo(Outcome.FAILURE);
		assertIdle(lanes);
		assertThat(timer.pending()).isZero();
	}

	@Test
	void aBlockingInspectorNeverHoldsTheMaxDuration() throws InterruptedException {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));
		CountDownLatch entered = new CountDownLatch(1);
		CountDownLatch release = new CountDownLatch(1);
		ChunkInspector<ChatChunk> chat = ChatChunk.inspector();
		ChunkInspector<ChatChunk> blocking = ChunkInspector.of(c -> {
			if ("slow".equals(c.text())) {
				entered.countDown();
				try {
					release.await(10, TimeUnit.SECONDS);
				}
				catch (InterruptedException e) {
					Thread.currentThread().interrupt();
				}
			}
			return chat.isContent(c);
		}, chat::isHeartbeat, chat::isTerminal, chat::finishReason);
		AiGuard<ChatChunk> guard = AiGuard.of(policy().lanes(lanes)
				.stall(StallSpec.defaults().maxDuration(Duration.ofSeconds(10)).cancelOn(Schedulers.immediate()))
				.build(), blocking);
		TestSubscriber<ChatChunk> ts = TestSubscriber.create();

		answer("fast", "slow", "never seen").subscribeOn(upstreamThread()).transform(guard).subscribe(ts);
		assertThat(entered.await(5, TimeUnit.SECONDS)).as("the inspector is blocking").isTrue();
		timer.advance(Duration.ofSeconds(10).plus(CONFIRM));

		try {
			assertThat(ts.getReceivedOnNext()).extracting(ChatChunk::text).containsExactly("fast");
			assertThat(ts.expectTerminalError()).isInstanceOf(PartialStreamException.class).cause()
					.isInstanceOfSatisfying(StreamStalledException.class,
							e -> assertThat(e.phase()).isEqualTo(StallPhase.MAX_DURATION));
			assertThat(reports).singleElement().extracting(GuardReport::outcome).isEqualTo(Outcome.STALLED);
			assertIdle(lanes);
		}
		finally {
			release.countDown();
		}
	}

	// ---- an upstream whose cancel blocks ----

	@Test
	void aBlockingUpstreamCancelDelaysNeitherTheStallSignalNorAnotherStreamsDeadline() throws Exception {
		Scheduler sharedTimer = Schedulers.newSingle("guard-timer");
		schedulers.add(sharedTimer);
		CountDownLatch releaseCancel = new CountDownLatch(1);
		AtomicReference<String> cancelThread = new AtomicReference<>();
		Flux<ChatChunk> blockingCancel = Flux.<ChatChunk>never().doOnCancel(() -> {
			cancelThread.set(Thread.currentThread().getName());
			try {
				// what an SDK's close() does: wait for its read timeout
				releaseCancel.await(5, TimeUnit.SECONDS);
			}
			catch (InterruptedException e) {
				Thread.currentThread().interrupt();
			}
		});
		GuardPolicy first = GuardPolicy.builder("first").timer(sharedTimer)
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofMillis(200))).build();
		GuardPolicy second = GuardPolicy.builder("second").timer(sharedTimer)
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofMillis(400))).build();
		CompletableFuture<Long> firstStalledAfter = new CompletableFuture<>();
		CompletableFuture<Long> secondStalledAfter = new CompletableFuture<>();
		try {
			long start = System.nanoTime();
			blockingCancel.transform(AiGuard.of(first)).subscribe(c -> { },
					e -> firstStalledAfter.complete(e instanceof StreamStalledException ? System.nanoTime() - start : -1L));
			Flux.<ChatChunk>never().transform(AiGuard.of(second)).subscribe(c -> { },
					e -> secondStalledAfter.complete(e instanceof StreamStalledException ? System.nanoTime() - start : -1L));

			assertThat(TimeUnit.NANOSECONDS.toMillis(firstStalledAfter.get(3, TimeUnit.SECONDS)))
					.as("STALLED reaches the subscriber within the deadline + 100 ms").isBetween(200L, 300L);
			assertThat(TimeUnit.NANOSECONDS.toMillis(secondStalledAfter.get(3, TimeUnit.SECONDS)))
					.as("the other stream's deadline on the same timer fires on time").isBetween(400L, 500L);
			assertThat(cancelThread.get()).as("the cancel ran off the timer").startsWith("boundedElastic");
		}
		finally {
			releaseCancel.countDown();
		}
	}

	@Test
	void blockHoundReportsABlockingCancelPutBackOnANonBlockingThread() throws Exception {
		CompletableFuture<Throwable> reported = new CompletableFuture<>();
		// Reactor drops what a cancel hook throws; a scheduler reports what its task throws
		Hooks.onErrorDropped(error -> {
			if (error instanceof BlockingOperationError) {
				reported.complete(error);
			}
		});
		Schedulers.onHandleError("reliability-test", (thread, error) -> reported.complete(error));
		try {
			Flux<ChatChunk> blockingCancel = Flux.<ChatChunk>never().doOnCancel(() -> {
				try {
					new CountDownLatch(1).await(10, TimeUnit.MILLISECONDS);
				}
				catch (InterruptedException e) {
					Thread.currentThread().interrupt();
				}
			});
			StepVerifier.create(blockingCancel.transform(AiGuard.of(GuardPolicy.builder("misconfigured")
							.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofMillis(50))
									.cancelOn(Schedulers.parallel()))
							.build())))
					.expectError(StreamStalledException.class)
					.verify(Duration.ofSeconds(5));
			assertThat(reported.get(5, TimeUnit.SECONDS)).isInstanceOf(BlockingOperationError.class);
		}
		finally {
			Schedulers.resetOnHandleError("reliability-test");
			Hooks.resetOnErrorDropped();
		}
	}

	// ---- a lane permit taken back between attempts ----

	@Test
	void preemptionDuringARetryBackoffEndsTheRequestAndStartsNoAttempt() {
		PriorityLanes lanes = preempting();
		AtomicInteger batchCalls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().lanes(lanes).defaultPriority(P2)
				.retry(RetryRules.backoff(5, Duration.ofSeconds(1)).jitter(0).retryOn(e -> true)).build());
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();
		TestPublisher<ChatChunk> urgentUpstream = TestPublisher.create();
		TestSubscriber<ChatChunk> urgent = TestSubscriber.create();

		Flux.defer(() -> {
			batchCalls.incrementAndGet();
			return Flux.<ChatChunk>error(serverError());
		}).transform(guard).subscribe(batch);
		assertThat(batchCalls).as("first attempt failed, backing off").hasValue(1);
		assertThat(lanes.borrowedInFlight(P2)).isEqualTo(1);

		urgentUpstream.flux().transform(guard).contextWrite(P0.asContext()).subscribe(urgent);

		assertThat(batch.expectTerminalError()).isInstanceOf(PreemptedException.class);
		timer.advance(Duration.ofSeconds(30));
		assertThat(batchCalls).as("no attempt after the permit went").hasValue(1);
		GuardReport r = reports.get(0);
		assertThat(r.priority()).isEqualTo(P2);
		assertThat(r.outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(lanes.inFlight(P0)).isEqualTo(1);
		assertThat(lanes.borrowedInFlight(P2)).isZero();

		urgentUpstream.next(ChatChunk.token("u")).next(ChatChunk.done()).complete();
		assertThat(urgent.isTerminatedComplete()).isTrue();
		assertIdle(lanes);
	}

	@Test
	void preemptionWhileAFallbackAnswerStreamsEndsTheRequestAsAPartialAnswer() {
		PriorityLanes lanes = preempting();
		TestPublisher<ChatChunk> fallbackUpstream = TestPublisher.create();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().lanes(lanes).defaultPriority(P2)
				.stall(StallSpec.defaults().cancelOn(timer))
				.fallback(FallbackChain.<ChatChunk>builder()
						.step(Fallback.lightweight(request -> fallbackUpstream.flux(), false)).build())
				.build());
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();
		TestPublisher<ChatChunk> urgentUpstream = TestPublisher.create();

		Flux.<ChatChunk>error(serverError()).transform(guard).subscribe(batch);
		fallbackUpstream.next(ChatChunk.token("from"), ChatChunk.token(" the ladder"));
		urgentUpstream.flux().transform(guard).contextWrite(P0.asContext()).subscribe(TestSubscriber.create());
		timer.advance(CONFIRM);

		assertThat(batch.getReceivedOnNext()).hasSize(2);
		assertThat(batch.expectTerminalError()).isInstanceOfSatisfying(PartialStreamException.class, e -> {
			assertThat(e.tokensDelivered()).isEqualTo(2);
			assertThat(e).hasCauseInstanceOf(PreemptedException.class);
		});
		fallbackUpstream.assertWasCancelled();
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(lanes.borrowedInFlight(P2)).isZero();
		assertThat(lanes.inFlight(P0)).isEqualTo(1);
	}

	@Test
	void aPreemptedStreamUnderTheNoticePolicyFailsAsAPartialAnswerWithoutANotice() {
		PriorityLanes lanes = preempting();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().lanes(lanes).defaultPriority(P2)
				.stall(StallSpec.defaults().cancelOn(timer))
				.midStream(MidStreamPolicy.notice("[answer cut short]")).build());
		TestPublisher<ChatChunk> batchUpstream = TestPublisher.create();
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();

		batchUpstream.flux().transform(guard).subscribe(batch);
		batchUpstream.next(ChatChunk.token("a"), ChatChunk.token("b"));
		TestPublisher.<ChatChunk>create().flux().transform(guard).contextWrite(P0.asContext())
				.subscribe(TestSubscriber.create());
		timer.advance(CONFIRM);

		assertThat(batch.getReceivedOnNext()).extracting(ChatChunk::text).containsExactly("a", "b");
		assertThat(batch.expectTerminalError()).isInstanceOfSatisfying(PartialStreamException.class,
				e -> assertThat(e).hasCauseInstanceOf(PreemptedException.class));
		batchUpstream.assertWasCancelled();
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.REJECTED);
	}

	// races the backoff timer firing (on one thread) against an urgent arrival preempting the permit (on another)
	@RepeatedTest(50)
	void preemptionRacingTheEndOfABackoffNeverRunsAnAttemptWithoutThePermit() {
		PriorityLanes lanes = preempting();
		AtomicInteger batchCalls = new AtomicInteger();
		AtomicInteger retryCancels = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().lanes(lanes).defaultPriority(P2)
				.stall(StallSpec.defaults().cancelOn(Schedulers.immediate()))
				.retry(RetryRules.backoff(2, Duration.ofSeconds(1)).jitter(0).retryOn(e -> true)).build());
		TestSubscriber<ChatChunk> batch = TestSubscriber.create();
		TestSubscriber<ChatChunk> urgent = TestSubscriber.create();
		TestPublisher<ChatChunk> urgentUpstream = TestPublisher.create();

		Flux.defer(() -> batchCalls.incrementAndGet() == 1 ? Flux.<ChatChunk>error(serverError())
				: Flux.<ChatChunk>never().doOnCancel(retryCancels::incrementAndGet)).transform(guard).subscribe(batch);

		RaceTestUtils.race(() -> timer.advance(Duration.ofSeconds(1)),
				() -> urgentUpstream.flux().transform(guard).contextWrite(P0.asContext()).subscribe(urgent));
		timer.advance(CONFIRM);

		assertThat(batch.isTerminated()).as("the batch request ended").isTrue();
		assertThat(batch.expectTerminalError()).isInstanceOf(PreemptedException.class);
		// the retry either never started, or started before the preemption and was cancelled by it
		assertThat(retryCancels).as("no retry left running on a permit taken back").hasValue(batchCalls.get() - 1);
		assertThat(reports).filteredOn(r -> r.priority() == P2).singleElement()
				.extracting(GuardReport::outcome).isEqualTo(Outcome.REJECTED);
		assertThat(lanes.borrowedInFlight(P2)).isZero();
		assertThat(lanes.inFlight(P0)).isEqualTo(1);
		urgentUpstream.next(ChatChunk.done()).complete();
		assertIdle(lanes);
	}

	// ---- maxAttempts caps every call for the answer's start ----

	@Test
	void maxAttemptsCapsUpstreamCallsTruncatedOnesIncluded() {
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy()
				.retry(RetryRules.backoff(3, Duration.ofMillis(100)).jitter(0))
				.truncation(TruncationSpec.defaults().maxTruncations(10))
				.build());

		StepVerifier.create(guard.call(longConversation(), request -> {
					calls.incrementAndGet();
					return Flux.error(new ContextLengthExceededException("test", 400, "invalid_request_error",
							"context_length_exceeded", "too long", -1, -1));
				}))
				.expectError(ContextLengthExceededException.class)
				.verify(Duration.ofSeconds(5));

		assertThat(calls).as("maxAttempts 3: three upstream calls, two of them truncated").hasValue(3);
		assertThat(reports.get(0).attempts()).hasSize(3);
	}

	@Test
	void withoutARetrySpecTruncationsAreBoundedByMaxTruncationsAlone() {
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().defaultPriority(P1)
				.truncation(TruncationSpec.defaults().maxTruncations(2)).build());

		StepVerifier.create(guard.call(longConversation(), request -> {
					calls.incrementAndGet();
					return Flux.error(new ContextLengthExceededException("test", 400, "invalid_request_error",
							"context_length_exceeded", "too long", -1, -1));
				}))
				.expectError()
				.verify(Duration.ofSeconds(5));

		assertThat(calls).as("the first call and two truncated ones").hasValue(3);
	}
}
