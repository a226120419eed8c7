package dev.aiguard;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.CacheKeys;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackRequest;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.fallback.ResponseCacheSpec;
import dev.aiguard.core.Source;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.ContinuationStrategy;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Outcome;

/**
 * The degradation ladder as the composed guard drives it: what enters it, how it is walked, what
 * the report, the signals and the metrics say, the response cache in the call form, threads, and
 * many requests at once.
 */
@Timeout(60)
class GuardFallbackTest {

	static final ChatRequest REQUEST = ChatRequest.of("main",
			List.of(ChatMessage.system("You answer shop questions."), ChatMessage.user("When do you open?")));
	static final String BUSY = "The assistant is busy, please try again shortly.";

	final Reports reports = new Reports();
	final RecordingMetrics metrics = new RecordingMetrics();
	final Queue<String> order = new ConcurrentLinkedQueue<>();
	final AtomicInteger upstreamCalls = new AtomicInteger();
	final List<PriorityLanes> lanesToDispose = new CopyOnWriteArrayList<>();

	@AfterEach
	void disposeLanes() {
		lanesToDispose.forEach(PriorityLanes::dispose);
	}

	// ---------------------------------------------------------------- fixtures

	GuardPolicy.Builder policy(FallbackChain<ChatChunk> chain) {
		return Policies.recording("fb", reports, metrics).fallback(chain);
	}

	@SafeVarargs
	static FallbackChain<ChatChunk> ladder(Fallback<ChatChunk>... steps) {
		FallbackChain.Builder<ChatChunk> b = FallbackChain.builder();
		for (Fallback<ChatChunk> s : steps) {
			b.step(s);
		}
		return b.build();
	}

	static List<ChatChunk> chunks(String... tokens) {
		List<ChatChunk> list = new ArrayList<>();
		for (String t : tokens) {
			list.add(ChatChunk.token(t));
		}
		list.add(ChatChunk.finish("stop"));
		list.add(ChatChunk.done());
		return list;
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromIterable(chunks(tokens));
	}

	static String text(java.util.Collection<ChatChunk> answer) {
		return answer.stream().map(ChatChunk::text).collect(Collectors.joining());
	}

	static ChatRequest question(int n) {
		return ChatRequest.of("main", List.of(ChatMessage.user("question " + n)));
	}

	static ProviderServerException unavailable() {
		return new ProviderServerException("openai", 503, "server_error", null, "overloaded", null);
	}

	/** An upstream function that counts how often the guard calls it. */
	Function<ChatRequest, Flux<ChatChunk>> upstream(Supplier<Flux<ChatChunk>> stream) {
		return r -> {
			upstreamCalls.incrementAndGet();
			return stream.get();
		};
	}

	Step step(Source source, Function<FallbackRequest, Flux<ChatChunk>> body) {
		return new Step(source, body, false);
	}

	Step answering(Source source, String... tokens) {
		return step(source, r -> answer(tokens));
	}

	Step failing(Source source) {
		return step(source, r -> Flux.error(new IllegalStateException(source + " is down too")));
	}

	PriorityLanes lanes(LaneSpec spec) {
		PriorityLanes lanes = PriorityLanes.builder().name("it")
				.lane(Priority.P0, spec).lane(Priority.P1, spec).lane(Priority.P2, spec).build();
		lanesToDispose.add(lanes);
		return lanes;
	}

	static CircuitBreaker openBreaker() {
		CircuitBreaker breaker = CircuitBreaker.builder("main").build();
		breaker.transitionToForcedOpen();
		return breaker;
	}

	/** Parks the calling thread for a moment, as a JDBC or file lookup would: BlockHound sees it. */
	static void blockBriefly() {
		try {
			new CountDownLatch(1).await(1, TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
		}
	}

	/** A fallback step that records what it was asked, on which thread, and in which order. */
	final class Step implements Fallback<ChatChunk> {

		final Source source;
		final Function<FallbackRequest, Flux<ChatChunk>> body;
		final boolean mayBlock;
		final List<FallbackRequest> requests = new CopyOnWriteArrayList<>();
		final Queue<String> threads = new ConcurrentLinkedQueue<>();
		final AtomicInteger cancellations = new AtomicInteger();

		Step(Source source, Function<FallbackRequest, Flux<ChatChunk>> body, boolean mayBlock) {
			this.source = source;
			this.body = body;
			this.mayBlock = mayBlock;
		}

		@Override
		public Source source() {
			return source;
		}

		@Override
		public Flux<ChatChunk> answer(FallbackRequest request) {
			requests.add(request);
			threads.add(Thread.currentThread().getName());
			order.add(source.name());
			return body.apply(request).doOnCancel(cancellations::incrementAndGet);
		}

		@Override
		public boolean mayBlock() {
			return mayBlock;
		}
	}

	/** A response cache that delegates and remembers every store and lookup. */
	static final class SpyCache implements ResponseCache<ChatChunk> {

		final ResponseCache<ChatChunk> delegate;
		final Map<Object, List<ChatChunk>> stored = new ConcurrentHashMap<>();
		final AtomicInteger stores = new AtomicInteger();
		final AtomicInteger largestStored = new AtomicInteger();
		final Queue<String> threads = new ConcurrentLinkedQueue<>();
		final boolean blocking;
		final CountDownLatch firstStore = new CountDownLatch(1);

		SpyCache(ResponseCache<ChatChunk> delegate, boolean blocking) {
			this.delegate = delegate;
			this.blocking = blocking;
		}

		SpyCache(ResponseCache<ChatChunk> delegate) {
			this(delegate, false);
		}

		@Override
		public Mono<List<ChatChunk>> lookup(Object key) {
			return Mono.defer(() -> {
				threads.add("lookup " + Thread.currentThread().getName());
				if (blocking) {
					blockBriefly();
				}
				return delegate.lookup(key);
			});
		}

		@Override
		public void store(Object key, List<ChatChunk> chunks) {
			threads.add("store " + Thread.currentThread().getName());
			if (blocking) {
				blockBriefly();
			}
			stores.incrementAndGet();
			largestStored.accumulateAndGet(chunks.size(), Math::max);
			stored.put(key, List.copyOf(chunks));
			delegate.store(key, chunks);
			firstStore.countDown();
		}

		@Override
		public int maxChunksPerEntry() {
			return delegate.maxChunksPerEntry();
		}

		@Override
		public boolean mayBlock() {
			return blocking;
		}
	}

	// ---------------------------------------------------------------- what enters the ladder

	@Test
	void breakerOpenSendsTheRequestDownTheLadderWithoutCallingTheModel() {
		Step busy = answering(Source.STATIC, "busy");
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(busy)).breaker(openBreaker()).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live"))))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(upstreamCalls).hasValue(0);
		assertThat(busy.requests).singleElement().satisfies(r -> {
			assertThat(r.trigger()).isEqualTo(FallbackTrigger.BREAKER_OPEN);
			assertThat(r.cause()).isInstanceOf(BreakerOpenException.class);
			assertThat(r.chatRequest()).isEqualTo(REQUEST);
			assertThat(r.priority()).isEqualTo(Priority.P1);
			assertThat(r.cacheKey()).isEqualTo(CacheKeys.of(REQUEST));
		});
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.source()).isEqualTo(Source.STATIC);
			assertThat(r.outcome()).isEqualTo(Outcome.SUCCESS);
			assertThat(r.attempts()).isEmpty();
			assertThat(r.tokens()).isEqualTo(1);
			assertThat(r.finishReason()).isEqualTo("stop");
			assertThat(r.error()).isNull();
		});
	}

	@Test
	void breakerTrippedByFailedRequestsSendsLaterOnesStraightToTheLadder() {
		CircuitBreaker breaker = CircuitBreaker.builder("main")
				.config(BreakerConfig.custom().countWindow(2).minimumCalls(2).failureRateThreshold(0.5).build())
				.build();
		Step busy = answering(Source.STATIC, "busy");
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(busy)).breaker(breaker).build());

		for (int i = 0; i < 3; i++) {
			StepVerifier.create(guard.call(REQUEST, upstream(() -> Flux.error(unavailable()))))
					.expectNextSequence(chunks("busy"))
					.verifyComplete();
		}

		assertThat(upstreamCalls).hasValue(2);
		assertThat(busy.requests).extracting(FallbackRequest::trigger).containsExactly(
				FallbackTrigger.RETRIES_EXHAUSTED, FallbackTrigger.RETRIES_EXHAUSTED, FallbackTrigger.BREAKER_OPEN);
		assertThat(reports).extracting(r -> r.attempts().size()).containsExactly(1, 1, 0);
		assertThat(reports).allMatch(r -> r.source() == Source.STATIC);
	}

	@Test
	void breakerOpeningBetweenRetriesEntersTheLadderWithTheLastAttemptsError() {
		CircuitBreaker breaker = CircuitBreaker.builder("main")
				.config(BreakerConfig.custom().countWindow(2).minimumCalls(2).failureRateThreshold(0.5).build())
				.build();
		Step busy = answering(Source.STATIC, "busy");
		List<Throwable> errors = new CopyOnWriteArrayList<>();

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(ladder(busy)).breaker(breaker)
								.retry(RetryRules.backoff(5, Duration.ofMillis(100)).jitter(0)).build())
						.call(REQUEST, upstream(() -> Flux.defer(() -> {
							ProviderServerException e = unavailable();
							errors.add(e);
							return Flux.error(e);
						}))))
				.thenAwait(Duration.ofSeconds(10))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(upstreamCalls).hasValue(2);
		assertThat(busy.requests).singleElement().satisfies(r -> {
			assertThat(r.trigger()).isEqualTo(FallbackTrigger.BREAKER_OPEN);
			assertThat(r.cause()).isSameAs(errors.get(1));
		});
		assertThat(reports.get(0).attempts()).extracting(GuardReport.Attempt::outcome)
				.containsExactly(Outcome.FAILURE, Outcome.FAILURE);
	}

	@Test
	void admissionRejectedBecauseTheQueueIsFullEntersTheLadder() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueSize(0).borrowFromLower(false));
		Step busy = answering(Source.STATIC, "busy");
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(busy)).lanes(lanes).build());
		TestPublisher<ChatChunk> holding = TestPublisher.create();
		reactor.core.Disposable first = guard.call(REQUEST, r -> holding.flux()).subscribe();

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live"))))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(upstreamCalls).hasValue(0);
		assertThat(busy.requests).singleElement().satisfies(r -> {
			assertThat(r.trigger()).isEqualTo(FallbackTrigger.REJECTED);
			assertThat(r.cause()).isInstanceOfSatisfying(AdmissionRejectedException.class,
					e -> assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.QUEUE_FULL));
		});
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.source()).isEqualTo(Source.STATIC);
			assertThat(r.attempts()).isEmpty();
		});
		first.dispose();
		holding.assertWasCancelled();
		assertThat(lanes.inFlight(Priority.P1)).isZero();
	}

	@Test
	void admissionWaitTimingOutEntersTheLadder() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		PriorityLanes lanes = PriorityLanes.builder().name("it").timer(vts)
				.lane(Priority.P0, LaneSpec.of(1).borrowFromLower(false))
				.lane(Priority.P1, LaneSpec.of(1).borrowFromLower(false).maxQueueWait(Duration.ofSeconds(2)))
				.lane(Priority.P2, LaneSpec.of(1))
				.build();
		lanesToDispose.add(lanes);
		Step busy = answering(Source.STATIC, "busy");
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(busy)).lanes(lanes).timer(vts).build());
		TestPublisher<ChatChunk> holding = TestPublisher.create();
		reactor.core.Disposable first = guard.call(REQUEST, r -> holding.flux()).subscribe();

		StepVerifier.withVirtualTime(() -> guard.call(REQUEST, upstream(() -> answer("live"))), () -> vts,
						Long.MAX_VALUE)
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(1999))
				.thenAwait(Duration.ofMillis(1))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(busy.requests).singleElement().extracting(r -> ((AdmissionRejectedException) r.cause()).reason())
				.isEqualTo(AdmissionRejectedException.Reason.WAIT_TIMEOUT);
		assertThat(upstreamCalls).hasValue(0);
		first.dispose();
	}

	@Test
	void exhaustedRetriesEnterTheLadderWithTheLastError() {
		Step busy = step(Source.STATIC, r -> {
			assertThat(upstreamCalls).as("every retry ran before the ladder").hasValue(3);
			return answer("busy");
		});
		List<Throwable> errors = new CopyOnWriteArrayList<>();

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(ladder(busy))
								.retry(RetryRules.backoff(3, Duration.ofMillis(100)).jitter(0)).build())
						.call(REQUEST, upstream(() -> Flux.defer(() -> {
							ProviderServerException e = unavailable();
							errors.add(e);
							return Flux.error(e);
						}))))
				.thenAwait(Duration.ofSeconds(5))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(busy.requests).singleElement().satisfies(r -> {
			assertThat(r.trigger()).isEqualTo(FallbackTrigger.RETRIES_EXHAUSTED);
			assertThat(r.cause()).isSameAs(errors.get(2));
		});
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.attempts()).extracting(GuardReport.Attempt::outcome)
					.containsExactly(Outcome.FAILURE, Outcome.FAILURE, Outcome.FAILURE);
			assertThat(r.source()).isEqualTo(Source.STATIC);
		});
		assertThat(metrics.ended(Outcome.FAILURE)).isEqualTo(3);
	}

	@Test
	void aSpentRetryBudgetEntersTheLadderAsRetriesExhausted() {
		Step busy = answering(Source.STATIC, "busy");

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(ladder(busy))
								.retry(RetryRules.backoff(3, Duration.ofMillis(100)))
								.retryBudget(RetryBudget.of(0.0, 0, Duration.ofSeconds(10), Schedulers.parallel()))
								.build())
						.call(REQUEST, upstream(() -> Flux.error(unavailable()))))
				.thenAwait(Duration.ofSeconds(5))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(upstreamCalls).hasValue(1);
		assertThat(metrics.retryBudgetExhausted()).isEqualTo(1);
		assertThat(busy.requests).singleElement().extracting(FallbackRequest::trigger)
				.isEqualTo(FallbackTrigger.RETRIES_EXHAUSTED);
	}

	@Test
	void aStallBeforeTheFirstTokenEntersTheLadderOneMillisecondAfterTheDeadline() {
		Step busy = answering(Source.STATIC, "busy");
		AtomicBoolean upstreamCancelled = new AtomicBoolean();

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(ladder(busy))
								.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(2))
										.cancelOn(VirtualTimeScheduler.get())).build())
						.call(REQUEST, upstream(() -> Flux.just(ChatChunk.keepAlive()).concatWith(Flux.never())
								.doOnCancel(() -> upstreamCancelled.set(true)))))
				.expectNext(ChatChunk.keepAlive())
				.expectNoEvent(Duration.ofSeconds(2))
				.thenAwait(Duration.ofNanos(dev.aiguard.stall.watch.StallWatch.CONFIRM_DELAY_NANOS))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(upstreamCancelled).isTrue();
		assertThat(busy.requests).singleElement().satisfies(r -> {
			assertThat(r.trigger()).isEqualTo(FallbackTrigger.STALLED_BEFORE_FIRST_TOKEN);
			assertThat(r.cause()).isInstanceOfSatisfying(StreamStalledException.class,
					e -> assertThat(e.phase()).isEqualTo(StallPhase.FIRST_TOKEN));
		});
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.attempts()).singleElement().extracting(GuardReport.Attempt::outcome)
					.isEqualTo(Outcome.STALLED);
			assertThat(r.source()).isEqualTo(Source.STATIC);
			assertThat(r.tokens()).isEqualTo(1);
			assertThat(r.timeToFirstToken()).isEqualTo(Duration.ofMillis(2001));
		});
		assertThat(metrics.stalled()).containsOnlyOnce(StallPhase.FIRST_TOKEN);
	}

	@Test
	void stallsRetriedUntilExhaustedStillEnterAsStalledBeforeTheFirstToken() {
		Step busy = answering(Source.STATIC, "busy");

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(ladder(busy))
								.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1)))
								.retry(RetryRules.backoff(2, Duration.ofMillis(100)).jitter(0)).build())
						.call(REQUEST, upstream(Flux::never)))
				.thenAwait(Duration.ofSeconds(5))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(upstreamCalls).hasValue(2);
		assertThat(busy.requests).singleElement().extracting(FallbackRequest::trigger)
				.isEqualTo(FallbackTrigger.STALLED_BEFORE_FIRST_TOKEN);
		assertThat(reports.get(0).attempts()).extracting(GuardReport.Attempt::outcome)
				.containsExactly(Outcome.STALLED, Outcome.STALLED);
	}

	@Test
	void aClientErrorFailsTheRequestByDefault() {
		Step busy = answering(Source.STATIC, "busy");
		ProviderClientException badRequest =
				new ProviderClientException("openai", 400, "invalid_request_error", null, "bad tool schema");

		StepVerifier.create(AiGuard.of(policy(ladder(busy)).build())
						.call(REQUEST, upstream(() -> Flux.error(badRequest))))
				.verifyErrorSatisfies(e -> assertThat(e).isSameAs(badRequest));

		assertThat(busy.requests).isEmpty();
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.CLIENT_ERROR);
			assertThat(r.error()).isSameAs(badRequest);
		});
	}

	@Test
	void aClientErrorEntersTheLadderWhenTheChainSaysSo() {
		Step busy = answering(Source.STATIC, "busy");
		FallbackChain<ChatChunk> chain = FallbackChain.<ChatChunk>builder().step(busy)
				.triggers(EnumSet.of(FallbackTrigger.CLIENT_ERROR)).build();

		StepVerifier.create(AiGuard.of(policy(chain).build()).call(REQUEST, upstream(() -> Flux.error(
						new ProviderClientException("openai", 404, "not_found", "model_not_found", "no such model")))))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(busy.requests).singleElement().extracting(FallbackRequest::trigger)
				.isEqualTo(FallbackTrigger.CLIENT_ERROR);
		assertThat(reports.get(0).attempts()).singleElement().extracting(GuardReport.Attempt::outcome)
				.isEqualTo(Outcome.CLIENT_ERROR);
	}

	@Test
	void aFailureWhoseTriggerTheChainDoesNotListFailsWithTheOriginalError() {
		Step busy = answering(Source.STATIC, "busy");
		FallbackChain<ChatChunk> chain = FallbackChain.<ChatChunk>builder().step(busy)
				.triggers(EnumSet.of(FallbackTrigger.BREAKER_OPEN)).build();
		ProviderServerException down = unavailable();

		StepVerifier.create(AiGuard.of(policy(chain).build()).call(REQUEST, upstream(() -> Flux.error(down))))
				.verifyErrorSatisfies(e -> assertThat(e).isSameAs(down));

		assertThat(busy.requests).isEmpty();
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.FAILURE);
		assertThat(metrics.answered()).isEmpty();
	}

	// ---------------------------------------------------------------- walking the ladder

	@Test
	void failingStepsFallThroughInOrderAndStaticAnswers() {
		Step model = failing(Source.FALLBACK_MODEL);
		Step cache = step(Source.CACHE, r -> Flux.empty());
		Step faq = step(Source.LIGHTWEIGHT, r -> {
			throw new IllegalStateException("faq index not loaded");
		});
		Step busy = answering(Source.STATIC, "busy");
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(model, cache, faq, busy)).breaker(openBreaker()).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live"))))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(order).containsExactly("FALLBACK_MODEL", "CACHE", "LIGHTWEIGHT", "STATIC");
		assertThat(metrics.failedSteps()).contains(Source.FALLBACK_MODEL, Source.CACHE, Source.LIGHTWEIGHT);
		assertThat(metrics.cacheMisses()).isPositive();
		assertThat(metrics.answered()).containsExactly(Source.STATIC);
		assertThat(reports.get(0).source()).isEqualTo(Source.STATIC);
	}

	@Test
	void demandCarriesOverFromTheFailedAttemptToTheFallbackAnswerExactly() {
		ChatChunk role = new ChatChunk("", "assistant", null, null, null, false, false);
		Step busy = answering(Source.STATIC, "busy", "now");

		StepVerifier.create(AiGuard.of(policy(ladder(busy)).build())
						.call(REQUEST, upstream(() -> Flux.just(role).concatWith(Flux.error(unavailable())))), 0)
				.expectSubscription()
				.thenRequest(2)
				.expectNext(role, ChatChunk.token("busy"))
				.thenRequest(1)
				.expectNext(ChatChunk.token("now"))
				.thenRequest(2)
				.expectNext(ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();

		assertThat(reports.get(0).source()).isEqualTo(Source.STATIC);
	}

	@Test
	void aFallbackAnswerWaitsForDemand() {
		StepVerifier.create(AiGuard.of(policy(ladder(answering(Source.STATIC, "busy"))).breaker(openBreaker()).build())
						.call(REQUEST, upstream(() -> answer("live"))), 0)
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(50))
				.thenRequest(1)
				.expectNext(ChatChunk.token("busy"))
				.expectNoEvent(Duration.ofMillis(50))
				.thenRequest(Long.MAX_VALUE)
				.expectNext(ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();
	}

	@Test
	void theLadderStopsAtTheFirstStepThatAnswersAndTheModelStepGetsTheRequest() {
		List<ChatRequest> askedTheSmallModel = new CopyOnWriteArrayList<>();
		Fallback<ChatChunk> smallModel = Fallback.model(req -> {
			askedTheSmallModel.add(req);
			return answer("small ", "model");
		});
		Step cache = answering(Source.CACHE, "cached");
		Step busy = answering(Source.STATIC, "busy");
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(smallModel, cache, busy)).breaker(openBreaker()).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live"))))
				.expectNextSequence(chunks("small ", "model"))
				.verifyComplete();

		assertThat(askedTheSmallModel).containsExactly(REQUEST);
		assertThat(cache.requests).isEmpty();
		assertThat(busy.requests).isEmpty();
		assertThat(reports.get(0).source()).isEqualTo(Source.FALLBACK_MODEL);
		assertThat(reports.get(0).tokens()).isEqualTo(2);
		assertThat(metrics.answered()).containsExactly(Source.FALLBACK_MODEL);
	}

	@Test
	void inTheTransformFormModelAndCacheStepsHaveNoRequestAndPass() {
		Step faq = answering(Source.LIGHTWEIGHT, "see ", "our ", "FAQ");
		ResponseCache<ChatChunk> cache = ResponseCache.caffeine();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.model(req -> answer("never")),
				Fallback.cache(cache), faq, Fallback.staticText(BUSY))).build());

		StepVerifier.create(Flux.<ChatChunk>error(unavailable()).transform(guard))
				.expectNextSequence(chunks("see ", "our ", "FAQ"))
				.verifyComplete();

		assertThat(faq.requests).singleElement().satisfies(r -> {
			assertThat(r.chatRequest()).isNull();
			assertThat(r.cacheKey()).isNull();
			assertThat(r.trigger()).isEqualTo(FallbackTrigger.RETRIES_EXHAUSTED);
		});
		assertThat(metrics.failedSteps()).contains(Source.FALLBACK_MODEL, Source.CACHE);
		assertThat(metrics.cacheMisses()).isZero();
		assertThat(reports.get(0).source()).isEqualTo(Source.LIGHTWEIGHT);
	}

	@Test
	void staticAnswersEvenWhenEveryOtherStepTimesOut() {
		Step model = step(Source.FALLBACK_MODEL, r -> Flux.never());
		Step faq = step(Source.LIGHTWEIGHT, r -> Flux.never());

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(FallbackChain.<ChatChunk>builder()
								.step(model).step(faq).step(Fallback.staticText(BUSY))
								.timeout(Duration.ofSeconds(1)).build())
						.breaker(openBreaker()).build()).call(REQUEST, upstream(() -> answer("live"))))
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(1999))
				.thenAwait(Duration.ofMillis(1))
				.recordWith(ArrayList::new)
				.thenConsumeWhile(c -> true)
				.consumeRecordedWith(answer -> assertThat(text(answer)).isEqualTo(BUSY))
				.verifyComplete();

		assertThat(model.cancellations).hasValue(1);
		assertThat(faq.cancellations).hasValue(1);
		assertThat(order).containsExactly("FALLBACK_MODEL", "LIGHTWEIGHT");
		assertThat(reports.get(0).source()).isEqualTo(Source.STATIC);
	}

	@Test
	void whenEveryStepFailsTheSubscriberGetsTheLastErrorCarryingTheCause() {
		IllegalStateException modelDown = new IllegalStateException("small model down");
		Step model = step(Source.FALLBACK_MODEL, r -> Flux.error(modelDown));
		Step cache = step(Source.CACHE, r -> Flux.empty());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(model, cache)).breaker(openBreaker()).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live"))))
				.verifyErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(java.util.NoSuchElementException.class);
					assertThat(e.getSuppressed()).hasSize(2);
					assertThat(e.getSuppressed()[0]).isInstanceOf(BreakerOpenException.class);
					assertThat(e.getSuppressed()[1]).isSameAs(modelDown);
				});

		assertThat(metrics.answered()).isEmpty();
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).as("no attempt was made: the breaker refused it").isEqualTo(Outcome.REJECTED);
			assertThat(r.attempts()).isEmpty();
			assertThat(r.tokens()).isZero();
		});
	}

	@Test
	void aFallbackAnswerFailingMidwayIsNotFollowedByAnotherStep() {
		IllegalStateException cut = new IllegalStateException("small model dropped the connection");
		Step model = step(Source.FALLBACK_MODEL, r -> Flux.just(ChatChunk.token("We ")).concatWith(Flux.error(cut)));
		Step busy = answering(Source.STATIC, "busy");
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(model, busy)).breaker(openBreaker()).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live"))))
				.expectNext(ChatChunk.token("We "))
				.verifyErrorSatisfies(e -> assertThat(e).isSameAs(cut));

		assertThat(busy.requests).isEmpty();
		assertThat(metrics.failedSteps()).contains(Source.FALLBACK_MODEL);
		assertThat(metrics.answered()).isEmpty();
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.source()).isEqualTo(Source.FALLBACK_MODEL);
			assertThat(r.tokens()).isEqualTo(1);
			assertThat(r.error()).isSameAs(cut);
		});
	}

	// ---------------------------------------------------------------- after the first token

	@Test
	void afterTheFirstTokenAFailureIsNotHandedToTheLadder() {
		Step busy = answering(Source.STATIC, "busy");
		ProviderServerException down = unavailable();

		StepVerifier.create(AiGuard.of(policy(ladder(busy)).retry(RetryRules.backoff(3, Duration.ZERO)).build())
						.call(REQUEST, upstream(() -> Flux.just(ChatChunk.token("We open")).concatWith(Flux.error(down)))))
				.expectNext(ChatChunk.token("We open"))
				.verifyErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(PartialStreamException.class, p -> {
					assertThat(p).hasCause(down);
					assertThat(p.tokensDelivered()).isEqualTo(1);
				}));

		assertThat(upstreamCalls).as("no plain retry after a token either").hasValue(1);
		assertThat(busy.requests).isEmpty();
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.source()).isEqualTo(Source.REALTIME);
			assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
			assertThat(r.tokens()).isEqualTo(1);
		});
		assertThat(metrics.answered()).isEmpty();
	}

	@Test
	void anIdleStallAfterTheFirstTokenIsNotHandedToTheLadder() {
		Step busy = answering(Source.STATIC, "busy");

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(ladder(busy))
								.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1))
										.idleTimeout(Duration.ofSeconds(2)))
								.build())
						.call(REQUEST, upstream(() -> Flux.just(ChatChunk.token("We")).concatWith(Flux.never()))))
				.expectNext(ChatChunk.token("We"))
				.thenAwait(Duration.ofSeconds(5))
				.verifyErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
						.hasCauseInstanceOf(StreamStalledException.class));

		assertThat(busy.requests).isEmpty();
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.STALLED);
		assertThat(reports.get(0).source()).isEqualTo(Source.REALTIME);
	}

	@Test
	void afterTheFirstTokenTheNoticePolicyEndsTheAnswerInsteadOfTheLadder() {
		Step busy = answering(Source.STATIC, "busy");

		StepVerifier.create(AiGuard.of(policy(ladder(busy)).midStream(MidStreamPolicy.notice(" [interrupted]")).build())
						.call(REQUEST, upstream(() -> Flux.just(ChatChunk.token("We open")).concatWith(Flux.error(unavailable())))))
				.expectNext(ChatChunk.token("We open"), ChatChunk.token(" [interrupted]"))
				.verifyComplete();

		assertThat(busy.requests).isEmpty();
		assertThat(reports.get(0).source()).isEqualTo(Source.REALTIME);
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.FAILURE);
		assertThat(metrics.answered()).isEmpty();
	}

	@Test
	void anAnswerMissingItsTerminalMarkerAfterTokensIsNotHandedToTheLadder() {
		Step busy = answering(Source.STATIC, "busy");

		StepVerifier.create(AiGuard.of(policy(ladder(busy)).build())
						.call(REQUEST, upstream(() -> Flux.just(ChatChunk.token("We open")))))
				.expectNext(ChatChunk.token("We open"))
				.verifyError(PartialStreamException.class);

		assertThat(busy.requests).isEmpty();
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.INCOMPLETE);
	}

	// ---------------------------------------------------------------- the response cache (call form)

	@Test
	void aCompleteAnswerIsStoredAndReplayedFromTheCacheDuringAnOutage() {
		ResponseCache<ChatChunk> cache = ResponseCache.caffeine();
		CircuitBreaker breaker = CircuitBreaker.builder("main").build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.breaker(breaker).responseCache(cache).build());

		List<ChatChunk> live = guard.call(REQUEST, upstream(() -> answer("We ", "open ", "at ", "nine."))).collectList()
				.block(Duration.ofSeconds(5));
		breaker.transitionToForcedOpen();
		ChatRequest sameQuestion = ChatRequest.of("main", List.of(ChatMessage.system("You answer shop questions."),
				ChatMessage.user("  When do   you open? ")));

		StepVerifier.create(guard.call(sameQuestion, upstream(() -> answer("never"))))
				.expectNextSequence(live)
				.verifyComplete();
		StepVerifier.create(guard.call(question(1), upstream(() -> answer("never"))))
				.recordWith(ArrayList::new)
				.thenConsumeWhile(c -> true)
				.consumeRecordedWith(other -> assertThat(text(other)).isEqualTo(BUSY))
				.verifyComplete();

		assertThat(live).containsExactlyElementsOf(chunks("We ", "open ", "at ", "nine."));
		assertThat(upstreamCalls).hasValue(1);
		assertThat(reports).extracting(GuardReport::source).containsExactly(Source.REALTIME, Source.CACHE, Source.STATIC);
		assertThat(reports.get(1).tokens()).isEqualTo(4);
		assertThat(reports.get(1).finishReason()).isEqualTo("stop");
		assertThat(metrics.answered()).containsExactly(Source.REALTIME, Source.CACHE, Source.STATIC);
		assertThat(metrics.cacheHits()).isEqualTo(1);
		assertThat(metrics.cacheMisses()).isEqualTo(1);
	}

	@Test
	void theCacheKeyFunctionOfThePolicyKeysStoresAndLookups() {
		ResponseCache<ChatChunk> cache = ResponseCache.caffeine();
		CircuitBreaker breaker = CircuitBreaker.builder("main").build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.breaker(breaker).responseCache(cache).cacheKey(CacheKeys.lastUserMessage()).build());

		guard.call(REQUEST, upstream(() -> answer("nine"))).blockLast(Duration.ofSeconds(5));
		breaker.transitionToForcedOpen();
		ChatRequest otherHistory = ChatRequest.of("main", List.of(ChatMessage.user("hello"),
				ChatMessage.assistant("hi"), ChatMessage.user("When do you open?")));

		StepVerifier.create(guard.call(otherHistory, upstream(() -> answer("never"))))
				.expectNextSequence(chunks("nine"))
				.verifyComplete();
		assertThat(reports.get(1).source()).isEqualTo(Source.CACHE);
	}

	/** An outage guard sharing the cache: what it replays is what was stored. */
	void assertNothingIsReplayed(ResponseCache<ChatChunk> cache, ChatRequest request) {
		AiGuard<ChatChunk> outage = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.breaker(openBreaker()).responseCache(cache).build());
		StepVerifier.create(outage.call(request, r -> Flux.error(new AssertionError("breaker is open"))))
				.recordWith(ArrayList::new)
				.thenConsumeWhile(c -> true)
				.consumeRecordedWith(replayed -> assertThat(text(replayed)).isEqualTo(BUSY))
				.verifyComplete();
	}

	@Test
	void anIncompleteAnswerIsNotStored() {
		SpyCache cache = new SpyCache(ResponseCache.caffeine());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.responseCache(cache).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> Flux.just(ChatChunk.token("We "), ChatChunk.token("open")))))
				.expectNextCount(2)
				.verifyError(PartialStreamException.class);

		assertThat(cache.stores).hasValue(0);
		assertNothingIsReplayed(cache, REQUEST);
	}

	@Test
	void aStalledAnswerIsNotStored() {
		SpyCache cache = new SpyCache(ResponseCache.caffeine());

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
								.stall(StallSpec.defaults().idleTimeout(Duration.ofSeconds(1)))
								.responseCache(cache).build())
						.call(REQUEST, upstream(() -> Flux.just(ChatChunk.token("We ")).concatWith(Flux.never()))))
				.expectNextCount(1)
				.thenAwait(Duration.ofSeconds(3))
				.verifyError(PartialStreamException.class);

		assertThat(cache.stores).hasValue(0);
		assertNothingIsReplayed(cache, REQUEST);
	}

	@Test
	void anAnswerCutByTheOutputLimitIsNotStored() {
		SpyCache cache = new SpyCache(ResponseCache.caffeine());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.responseCache(cache).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> Flux.just(ChatChunk.token("We open at"),
						ChatChunk.finish("length"), ChatChunk.done()))))
				.expectNextCount(3)
				.verifyComplete();

		assertThat(reports.get(0).outputTruncated()).isTrue();
		assertThat(cache.stores).hasValue(0);
		assertNothingIsReplayed(cache, REQUEST);
	}

	@Test
	void aContinuedAnswerIsNotStored() {
		SpyCache cache = new SpyCache(ResponseCache.caffeine());
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.USER_CONTINUE, 1))
				.responseCache(cache)
				.cacheKey(r -> "one key for every request")
				.build());

		StepVerifier.create(guard.call(REQUEST, r -> calls.getAndIncrement() == 0
						? Flux.just(ChatChunk.token("We open ")).concatWith(Flux.error(unavailable()))
						: answer("at nine.")))
				.expectNext(ChatChunk.token("We open "))
				.recordWith(ArrayList::new)
				.thenConsumeWhile(c -> true)
				.consumeRecordedWith(rest -> {
					assertThat(text(rest)).isEqualTo("at nine.");
					assertThat(rest).last().isEqualTo(ChatChunk.done());
				})
				.verifyComplete();

		assertThat(calls).hasValue(2);
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(cache.stores).hasValue(0);
		AiGuard<ChatChunk> outage = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.breaker(openBreaker()).responseCache(cache).cacheKey(r -> "one key for every request").build());
		StepVerifier.create(outage.call(REQUEST, upstream(() -> answer("never"))))
				.recordWith(ArrayList::new)
				.thenConsumeWhile(c -> true)
				.consumeRecordedWith(replayed -> assertThat(text(replayed)).isEqualTo(BUSY))
				.verifyComplete();
	}

	@Test
	void aCancelledAnswerIsNotStored() {
		SpyCache cache = new SpyCache(ResponseCache.caffeine());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.responseCache(cache).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("We ", "open ", "at ", "nine."))).take(2))
				.expectNextCount(2)
				.verifyComplete();

		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.CANCELLED);
		assertThat(cache.stores).hasValue(0);
	}

	@Test
	void fallbackAnswersAreNeverStoredAsIfTheModelHadGivenThem() {
		SpyCache cache = new SpyCache(ResponseCache.caffeine());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(answering(Source.LIGHTWEIGHT, "faq"),
				Fallback.staticText(BUSY))).responseCache(cache).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> Flux.error(unavailable()))))
				.expectNextSequence(chunks("faq"))
				.verifyComplete();

		assertThat(cache.stores).hasValue(0);
	}

	@Test
	void aRetriedAnswerIsStoredWithoutTheFailedAttemptsChunks() {
		SpyCache cache = new SpyCache(ResponseCache.caffeine());
		ChatChunk role = new ChatChunk("", "assistant", null, null, null, false, false);
		AtomicInteger calls = new AtomicInteger();

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
								.retry(RetryRules.backoff(2, Duration.ofMillis(100)).jitter(0))
								.responseCache(cache).build())
						.call(REQUEST, r -> calls.getAndIncrement() == 0
								// the first attempt announces its role, then fails before any content
								? Flux.just(role).concatWith(Flux.error(unavailable()))
								: Flux.just(role).concatWith(answer("nine"))))
				.expectNext(role)
				.thenAwait(Duration.ofSeconds(1))
				.expectNext(role)
				.expectNextSequence(chunks("nine"))
				.verifyComplete();

		assertThat(cache.stores).hasValue(1);
		List<ChatChunk> expected = new ArrayList<>();
		expected.add(role);
		expected.addAll(chunks("nine"));
		assertThat(cache.stored.get(CacheKeys.of(REQUEST))).containsExactlyElementsOf(expected);
	}

	@Test
	void anAnswerLongerThanTheCachesEntryBoundIsNotStored() {
		SpyCache cache = new SpyCache(ResponseCache.caffeine(ResponseCacheSpec.defaults().maxChunksPerEntry(4)));
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.responseCache(cache).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("a", "b", "c"))))
				.expectNextCount(5)
				.verifyComplete();
		StepVerifier.create(guard.call(question(2), upstream(() -> answer("a", "b"))))
				.expectNextCount(4)
				.verifyComplete();

		assertThat(cache.stored).containsOnlyKeys(CacheKeys.of(question(2)));
		assertNothingIsReplayed(cache, REQUEST);
	}

	@Test
	void theTransformFormNeverStoresForItHasNoRequestToKeyBy() {
		SpyCache cache = new SpyCache(ResponseCache.caffeine());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.responseCache(cache).build());

		StepVerifier.create(answer("nine").transform(guard)).expectNextCount(3).verifyComplete();

		assertThat(cache.stores).hasValue(0);
	}

	@Test
	void aThrowingCacheNeverBreaksTheLiveAnswer() {
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		try {
			ResponseCache<ChatChunk> broken = new ResponseCache<>() {
				@Override
				public Mono<List<ChatChunk>> lookup(Object key) {
					return Mono.error(new IllegalStateException("cache down"));
				}

				@Override
				public void store(Object key, List<ChatChunk> chunks) {
					throw new IllegalStateException("cache down");
				}
			};
			AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(broken), Fallback.staticText(BUSY)))
					.responseCache(broken).build());

			StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("nine"))))
					.expectNextSequence(chunks("nine"))
					.verifyComplete();
		}
		finally {
			Hooks.resetOnErrorDropped();
		}
		assertThat(dropped).singleElement().satisfies(e -> assertThat(e).hasMessage("cache down"));
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.SUCCESS);
	}

	// ---------------------------------------------------------------- threads

	static Flux<ChatChunk> blockingFaq(Queue<String> threads) {
		threads.add(Thread.currentThread().getName());
		blockBriefly();
		return answer("faq");
	}

	@Test
	void aBlockingStepRunsOnTheRequestsLaneSchedulerNeverOnTheEventLoop() {
		Queue<String> threads = new ConcurrentLinkedQueue<>();
		PriorityLanes lanes = lanes(LaneSpec.of(4));
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.lightweight(r -> blockingFaq(threads)),
				Fallback.staticText(BUSY))).breaker(openBreaker()).lanes(lanes).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live"))).subscribeOn(Schedulers.parallel()))
				.expectNextSequence(chunks("faq"))
				.verifyComplete();
		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live")))
						.contextWrite(Priority.P0.asContext())
						.subscribeOn(Schedulers.parallel()))
				.expectNextSequence(chunks("faq"))
				.verifyComplete();

		assertThat(threads).hasSize(2);
		assertThat(new ArrayList<>(threads).get(0)).startsWith("aiguard-p1");
		assertThat(new ArrayList<>(threads).get(1)).startsWith("aiguard-p0");
		assertThat(reports).extracting(GuardReport::source).containsOnly(Source.LIGHTWEIGHT);
		assertThat(lanes.inFlight(Priority.P1)).isZero();
		assertThat(lanes.inFlight(Priority.P0)).isZero();
	}

	@Test
	void withoutLanesABlockingStepRunsOnBoundedElastic() {
		Queue<String> threads = new ConcurrentLinkedQueue<>();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.lightweight(r -> blockingFaq(threads)),
				Fallback.staticText(BUSY))).breaker(openBreaker()).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live"))).subscribeOn(Schedulers.parallel()))
				.expectNextSequence(chunks("faq"))
				.verifyComplete();

		assertThat(threads).singleElement().asString().startsWith("boundedElastic");
	}

	@Test
	void aStepThatBlocksWithoutSayingSoIsCaughtByBlockHoundAndTheLadderMovesOn() {
		Queue<String> threads = new ConcurrentLinkedQueue<>();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.lightweight(r -> blockingFaq(threads), false),
				Fallback.staticText(BUSY))).breaker(openBreaker()).build());

		StepVerifier.create(guard.call(REQUEST, upstream(() -> answer("live"))).subscribeOn(Schedulers.parallel()))
				.recordWith(ArrayList::new)
				.thenConsumeWhile(c -> true)
				.consumeRecordedWith(a -> assertThat(text(a)).isEqualTo(BUSY))
				.verifyComplete();

		assertThat(threads).singleElement().asString().startsWith("parallel");
		assertThat(metrics.failedSteps()).contains(Source.LIGHTWEIGHT);
	}

	@Test
	void aBlockingUpstreamAndABlockingCacheRunOnTheLaneScheduler() throws InterruptedException {
		PriorityLanes lanes = lanes(LaneSpec.of(4));
		SpyCache cache = new SpyCache(ResponseCache.caffeine(), true);
		Queue<String> upstreamThreads = new ConcurrentLinkedQueue<>();
		CircuitBreaker breaker = CircuitBreaker.builder("main").build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.cache(cache), Fallback.staticText(BUSY)))
				.breaker(breaker).lanes(lanes).blockingUpstream(true).responseCache(cache).build());
		Function<ChatRequest, Flux<ChatChunk>> blockingSdk = r -> Flux.defer(() -> {
			upstreamThreads.add(Thread.currentThread().getName());
			blockBriefly();
			return answer("nine");
		});

		StepVerifier.create(guard.call(REQUEST, blockingSdk).subscribeOn(Schedulers.parallel()))
				.expectNextSequence(chunks("nine"))
				.verifyComplete();
		assertThat(cache.firstStore.await(5, TimeUnit.SECONDS)).isTrue();
		breaker.transitionToForcedOpen();
		StepVerifier.create(guard.call(REQUEST, blockingSdk).subscribeOn(Schedulers.parallel()))
				.expectNextSequence(chunks("nine"))
				.verifyComplete();

		assertThat(upstreamThreads).singleElement().asString().startsWith("aiguard-p1");
		assertThat(cache.threads).hasSize(2).allMatch(t -> t.contains("aiguard-p1"));
		assertThat(reports).extracting(GuardReport::source).containsExactly(Source.REALTIME, Source.CACHE);
	}

	// ---------------------------------------------------------------- many requests at once

	static List<ChatChunk> answerTo(int question) {
		// every third answer is longer than the cache's per-entry bound of 8 chunks
		return question % 3 == 0 ? chunks("a", "long", "answer", "to", "question", "" + question, "that", "goes", "on")
				: chunks("answer ", "" + question);
	}

	record Result(int question, boolean healthy, List<ChatChunk> chunks, GuardReport report) {
	}

	@Test
	void aThousandParallelRequestsDuringAnOutageAllGetAnAnswerAndTheCacheStaysBounded() throws Exception {
		ResponseCache<ChatChunk> caffeine = ResponseCache.caffeine(ResponseCacheSpec.defaults()
				.maximumEntries(50).maxChunksPerEntry(8));
		SpyCache cache = new SpyCache(caffeine);
		FallbackChain<ChatChunk> chain = ladder(Fallback.cache(cache), Fallback.staticText(BUSY));
		AiGuard<ChatChunk> healthy = AiGuard.of(policy(chain).breaker(CircuitBreaker.builder("healthy").build())
				.responseCache(cache).build());
		AiGuard<ChatChunk> outage = AiGuard.of(policy(chain).breaker(openBreaker()).responseCache(cache).build());
		int questions = 199;
		// warm the cache a little before the outage starts
		for (int q = 0; q < questions; q += 7) {
			int question = q;
			healthy.call(question(q), r -> Flux.fromIterable(answerTo(question))).blockLast(Duration.ofSeconds(5));
		}

		List<Result> results = Flux.range(0, 2_000)
				.flatMap(n -> {
					int q = n % questions;
					boolean isHealthy = (n & 1) == 0;
					GuardSignals signals = GuardSignals.create();
					Flux<ChatChunk> answer = (isHealthy ? healthy : outage)
							.call(question(q), r -> Flux.fromIterable(answerTo(q)));
					return answer.collectList()
							.zipWith(signals.report(), (chunks, report) -> new Result(q, isHealthy, chunks, report))
							.contextWrite(signals::into)
							.subscribeOn(Schedulers.parallel());
				}, 2_000)
				.collectList()
				.block(Duration.ofSeconds(30));

		assertThat(results).hasSize(2_000);
		long cached = 0;
		for (Result r : results) {
			assertThat(r.chunks()).as("a complete answer").last().isEqualTo(ChatChunk.done());
			if (r.healthy()) {
				assertThat(r.report().source()).isEqualTo(Source.REALTIME);
				assertThat(r.chunks()).containsExactlyElementsOf(answerTo(r.question()));
			}
			else if (r.report().source() == Source.CACHE) {
				cached++;
				assertThat(r.question() % 3).as("only answers within the entry bound are stored").isNotZero();
				assertThat(r.chunks()).containsExactlyElementsOf(answerTo(r.question()));
			}
			else {
				assertThat(r.report().source()).isEqualTo(Source.STATIC);
				assertThat(text(r.chunks())).isEqualTo(BUSY);
			}
		}
		assertThat(cached).as("the outage was partly served from the cache").isPositive();
		assertThat(metrics.answered(Source.REALTIME)).isEqualTo(1_000 + (questions + 6) / 7);
		assertThat(metrics.answered(Source.CACHE) + metrics.answered(Source.STATIC)).isEqualTo(1_000);
		assertThat(metrics.answered(Source.CACHE)).isEqualTo(cached);
		assertThat(cache.largestStored).hasValueLessThanOrEqualTo(8);
		assertThat(cache.stored.keySet()).noneMatch(k -> {
			for (int q = 0; q < questions; q += 3) {
				if (k.equals(CacheKeys.of(question(q)))) {
					return true;
				}
			}
			return false;
		});
		// Caffeine evicts on its own executor: settle it, then look at the size
		Method cleanUp = caffeine.getClass().getDeclaredMethod("cleanUp");
		Method estimatedSize = caffeine.getClass().getDeclaredMethod("estimatedSize");
		cleanUp.setAccessible(true);
		estimatedSize.setAccessible(true);
		cleanUp.invoke(caffeine);
		assertThat((long) estimatedSize.invoke(caffeine)).isLessThanOrEqualTo(50L);
	}

	@Test
	void aLookupRacingTheStoreOfTheSameAnswerReplaysAllOfItOrNothing() {
		ResponseCache<ChatChunk> cache = ResponseCache.caffeine();
		FallbackChain<ChatChunk> chain = ladder(Fallback.cache(cache), Fallback.staticText(BUSY));
		AiGuard<ChatChunk> healthy = AiGuard.of(policy(chain).responseCache(cache).build());
		AiGuard<ChatChunk> outage = AiGuard.of(policy(chain).breaker(openBreaker()).responseCache(cache).build());

		for (int i = 0; i < 300; i++) {
			int q = i;
			List<ChatChunk> live = new CopyOnWriteArrayList<>();
			List<ChatChunk> replayed = new CopyOnWriteArrayList<>();
			RaceTestUtils.race(
					() -> healthy.call(question(q), r -> answer("answer ", "" + q)).subscribe(live::add),
					() -> outage.call(question(q), r -> Flux.error(new AssertionError("open"))).subscribe(replayed::add));
			assertThat(live).containsExactlyElementsOf(chunks("answer ", "" + q));
			if (!text(replayed).equals(BUSY)) {
				assertThat(replayed).containsExactlyElementsOf(live);
			}
		}
		assertThat(reports).hasSize(600);
	}

	@Test
	void cancelRacingTheEntryIntoTheLadderEndsTheRequestOnceAndCleanly() {
		Step busy = answering(Source.STATIC, "busy");
		PriorityLanes lanes = lanes(LaneSpec.of(8));
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(busy)).lanes(lanes).build());
		int rounds = 500;
		// an error that loses to the cancel is dropped, as it should be: keep the log quiet
		Hooks.onErrorDropped(e -> {
		});
		try {
			raceCancelAgainstTheLadder(guard, rounds);
		}
		finally {
			Hooks.resetOnErrorDropped();
		}
		assertThat(lanes.inFlight(Priority.P1)).isZero();
		assertThat(metrics.answered(Source.STATIC)).isBetween(
				reports.stream().filter(r -> r.outcome() == Outcome.SUCCESS).count(), (long) rounds);
	}

	void raceCancelAgainstTheLadder(AiGuard<ChatChunk> guard, int rounds) {
		for (int i = 0; i < rounds; i++) {
			TestPublisher<ChatChunk> upstream = TestPublisher.create();
			AtomicInteger terminals = new AtomicInteger();
			AtomicBoolean completed = new AtomicBoolean();
			BaseSubscriber<ChatChunk> subscriber = new BaseSubscriber<>() {
				@Override
				protected void hookOnSubscribe(Subscription subscription) {
					subscription.request(Long.MAX_VALUE);
				}

				@Override
				protected void hookOnComplete() {
					completed.set(true);
					terminals.incrementAndGet();
				}

				@Override
				protected void hookOnError(Throwable throwable) {
					terminals.incrementAndGet();
				}
			};
			guard.call(REQUEST, r -> upstream.flux()).subscribe(subscriber);
			RaceTestUtils.race(() -> upstream.error(unavailable()), subscriber::dispose);

			assertThat(terminals).hasValueLessThanOrEqualTo(1);
			assertThat(reports).hasSize(i + 1);
			GuardReport report = reports.get(i);
			assertThat(report.outcome()).isIn(Outcome.CANCELLED, Outcome.SUCCESS);
			if (completed.get()) {
				// the whole static answer reached the subscriber
				assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
				assertThat(report.source()).isEqualTo(Source.STATIC);
			}
		}
	}

	// ---------------------------------------------------------------- metrics

	@Test
	void answeredIsRecordedOncePerAnsweredRequestByItsSource() {
		CircuitBreaker breaker = CircuitBreaker.builder("main").build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy(ladder(Fallback.staticText(BUSY))).breaker(breaker).build());

		guard.call(REQUEST, upstream(() -> answer("nine"))).blockLast(Duration.ofSeconds(5));
		assertThat(metrics.answered()).containsExactly(Source.REALTIME);

		StepVerifier.create(guard.call(REQUEST, upstream(() -> Flux.just(ChatChunk.token("x"))
						.concatWith(Flux.error(unavailable())))))
				.expectNextCount(1)
				.verifyError(PartialStreamException.class);
		assertThat(metrics.answered()).as("a broken answer is not an answer").containsExactly(Source.REALTIME);

		breaker.transitionToForcedOpen();
		guard.call(REQUEST, upstream(() -> answer("never"))).blockLast(Duration.ofSeconds(5));
		assertThat(metrics.answered()).containsExactly(Source.REALTIME, Source.STATIC);
		assertThat(reports).extracting(GuardReport::source).containsExactly(Source.REALTIME, Source.REALTIME,
				Source.STATIC);
	}

	@Test
	void reportTimesOfAFallbackAnswerComeFromTheTimer() {
		Step busy = step(Source.STATIC, r -> answer("busy").delaySubscription(Duration.ofMillis(300)));

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(ladder(busy))
								.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1))).build())
						.call(REQUEST, upstream(Flux::never)))
				.thenAwait(Duration.ofSeconds(2))
				.expectNextSequence(chunks("busy"))
				.verifyComplete();

		assertThat(reports.get(0).timeToFirstToken()).isEqualTo(Duration.ofMillis(1301));
		assertThat(reports.get(0).duration()).isEqualTo(Duration.ofMillis(1301));
	}
}
