package dev.aiguard.fallback;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.metrics.GuardMetrics;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.blockhound.BlockingOperationError;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;

import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Source;
import dev.aiguard.testing.RecordingMetrics;

class FallbackWalkTest {

	static final ChatRequest CHAT = ChatRequest.of("m", List.of(ChatMessage.user("What are your opening hours?")));
	static final RuntimeException CAUSE = new IllegalStateException("realtime model down");

	final RecordingMetrics metrics = new RecordingMetrics();
	final List<Source> chosen = new CopyOnWriteArrayList<>();

	@AfterEach
	void resetHooks() {
		Hooks.resetOnErrorDropped();
		Hooks.resetOnNextDropped();
	}

	static FallbackRequest request() {
		return new FallbackRequest(CHAT, CAUSE, FallbackTrigger.BREAKER_OPEN, Priority.P0, "key");
	}

	Flux<String> walk(FallbackChain<String> chain) {
		return chain.answer(request(), Schedulers.boundedElastic(), chosen::add, metrics, "chat");
	}

	static FallbackChain<String> chain(Fallback<String>... steps) {
		FallbackChain.Builder<String> b = FallbackChain.builder();
		for (Fallback<String> s : steps) {
			b.step(s);
		}
		return b.build();
	}

	static Fallback<String> fixed(String... chunks) {
		return Fallback.staticAnswer(List.of(chunks));
	}

	/** A subscriber that may scan as cancelled before it cancels (as a guard's attempt being aborted does). */
	static final class StoppingSubscriber implements CoreSubscriber<String>, Scannable {

		volatile boolean stopping;
		volatile Throwable error;

		@Override
		public void onSubscribe(Subscription s) {
			s.request(Long.MAX_VALUE);
		}

		@Override
		public void onNext(String chunk) {
		}

		@Override
		public void onError(Throwable t) {
			error = t;
		}

		@Override
		public void onComplete() {
		}

		@Override
		public Object scanUnsafe(Attr key) {
			return key == Attr.CANCELLED ? stopping : null;
		}
	}

	// ---- a subscriber that stops wanting the answer ----

	@Test
	void noFurtherStepStartsOnceTheSubscriberScansAsCancelled() {
		TestPublisher<String> first = TestPublisher.create();
		TestStep<String> second = TestStep.of(Source.STATIC, () -> Flux.just("second"));
		StoppingSubscriber subscriber = new StoppingSubscriber();
		walk(chain(TestStep.of(Source.CACHE, first::flux), second)).subscribe(subscriber);

		subscriber.stopping = true;
		first.error(new IllegalStateException("miss"));

		assertThat(second.calls).hasValue(0);
		assertThat(subscriber.error).as("the subscriber ends the walk itself").isNull();
	}

	@Test
	void aBlockingStepWhoseHopLandsAfterTheSubscriberStoppedNeverStarts() throws InterruptedException {
		// a plain thread, not one of Reactor's non-blocking ones: BlockHound would end the holding
		// task at once, and the hop would then race the subscriber's stop instead of landing after it
		Scheduler oneThread = Schedulers.fromExecutorService(
				Executors.newSingleThreadExecutor(r -> new Thread(r, "walk-hop")), "walk-hop");
		try {
			CountDownLatch held = new CountDownLatch(1);
			AtomicBoolean heldUntilStopped = new AtomicBoolean();
			oneThread.schedule(() -> {
				try {
					held.await();
					heldUntilStopped.set(true);
				}
				catch (InterruptedException e) {
					Thread.currentThread().interrupt();
				}
			});
			TestStep<String> blocking = TestStep.blocking(Source.LIGHTWEIGHT, () -> Flux.just("late"));
			StoppingSubscriber subscriber = new StoppingSubscriber();
			chain(blocking).answer(request(), oneThread, chosen::add, metrics, "chat")
					.subscribe(subscriber);

			subscriber.stopping = true;
			held.countDown();
			CountDownLatch drained = new CountDownLatch(1);
			oneThread.schedule(drained::countDown);
			assertThat(drained.await(10, TimeUnit.SECONDS)).isTrue();

			assertThat(heldUntilStopped).isTrue();
			assertThat(blocking.calls).hasValue(0);
		}
		finally {
			oneThread.dispose();
		}
	}

	// ---- falling through ----

	@Test
	void stepThatErrorsFallsToTheNext() {
		TestStep<String> failing = TestStep.of(Source.FALLBACK_MODEL, () -> Flux.error(new RuntimeException("503")));
		StepVerifier.create(walk(chain(failing, fixed("sorry"))))
				.expectNext("sorry")
				.verifyComplete();
		assertThat(chosen).containsExactly(Source.STATIC);
		assertThat(metrics.count("fallbackStepFailed chat P0 FALLBACK_MODEL")).isEqualTo(1);
		assertThat(metrics.count("answered chat P0 STATIC")).isEqualTo(1);
	}

	@Test
	void stepThatCompletesEmptyFallsToTheNext() {
		TestStep<String> empty = TestStep.of(Source.LIGHTWEIGHT, Flux::empty);
		StepVerifier.create(walk(chain(empty, fixed("sorry"))))
				.expectNext("sorry")
				.verifyComplete();
		assertThat(chosen).containsExactly(Source.STATIC);
		assertThat(metrics.count("fallbackStepFailed chat P0 LIGHTWEIGHT")).isEqualTo(1);
	}

	@Test
	void stepWhoseAnswerMethodThrowsOrReturnsNullFallsToTheNext() {
		Fallback<String> throwing = new TestStep<>(Source.FALLBACK_MODEL, r -> {
			throw new IllegalStateException("factory broke");
		}, false, new ConcurrentLinkedQueue<>());
		Fallback<String> nulls = new Fallback<>() {
			@Override
			public Source source() {
				return Source.LIGHTWEIGHT;
			}

			@Override
			public Flux<String> answer(FallbackRequest request) {
				return null;
			}
		};
		StepVerifier.create(walk(chain(throwing, nulls, fixed("sorry"))))
				.expectNext("sorry")
				.verifyComplete();
		assertThat(metrics.count("fallbackStepFailed chat P0 FALLBACK_MODEL")).isEqualTo(1);
		assertThat(metrics.count("fallbackStepFailed chat P0 LIGHTWEIGHT")).isEqualTo(1);
	}

	@Test
	void stepsAreTriedInOrderAndStopAtTheFirstAnswer() {
		Queue<String> order = new ConcurrentLinkedQueue<>();
		TestStep<String> model = TestStep.of(Source.FALLBACK_MODEL, () -> Flux.error(new RuntimeException("down")), order);
		TestStep<String> cache = TestStep.of(Source.CACHE, Flux::empty, order);
		TestStep<String> light = TestStep.of(Source.LIGHTWEIGHT, () -> Flux.just("faq answer"), order);
		TestStep<String> last = TestStep.of(Source.STATIC, () -> Flux.just("static"), order);
		StepVerifier.create(walk(chain(model, cache, light, last)))
				.expectNext("faq answer")
				.verifyComplete();
		assertThat(order).containsExactly("FALLBACK_MODEL", "CACHE", "LIGHTWEIGHT");
		assertThat(last.calls).hasValue(0);
		assertThat(chosen).containsExactly(Source.LIGHTWEIGHT);
		assertThat(metrics.events()).containsExactly(
				"fallbackStepTime chat P0 FALLBACK_MODEL", "fallbackStepFailed chat P0 FALLBACK_MODEL",
				"fallbackStepTime chat P0 CACHE", "fallbackStepFailed chat P0 CACHE", "cacheLookup chat miss",
				"fallbackStepTime chat P0 LIGHTWEIGHT", "answered chat P0 LIGHTWEIGHT");
	}

	@Test
	void staticAnswersWhateverTheStepsBeforeItDo() {
		FallbackChain<ChatChunk> chain = FallbackChain.<ChatChunk>builder()
				.step(Fallback.model(r -> Flux.error(new RuntimeException("503"))))
				.step(Fallback.cache(failingCache()))
				.step(Fallback.lightweight(r -> Flux.empty(), false))
				.step(Fallback.lightweight(r -> Mono.never(), false))
				.step(Fallback.staticText("Busy, try again soon."))
				.timeout(Duration.ofSeconds(1))
				.build();
		StepVerifier.withVirtualTime(() -> chain.answer(request(), Schedulers.boundedElastic(), chosen::add, metrics, "chat"))
				.expectSubscription()
				.thenAwait(Duration.ofSeconds(1))
				.expectNext(ChatChunk.token("Busy, "), ChatChunk.token("try "), ChatChunk.token("again "),
						ChatChunk.token("soon."), ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();
		assertThat(chosen).containsExactly(Source.STATIC);
		assertThat(metrics.count("answered chat P0 STATIC")).isEqualTo(1);
	}

	@Test
	void staticIsNeverTimedOut() {
		// a static answer cannot fail, even when it is slow to be consumed
		FallbackChain<String> chain = FallbackChain.<String>builder()
				.step(fixed("a", "b"))
				.timeout(Duration.ofMillis(10))
				.build();
		StepVerifier.withVirtualTime(() -> walk(chain), 0)
				.expectSubscription()
				.thenAwait(Duration.ofSeconds(5))
				.thenRequest(2)
				.expectNext("a", "b")
				.verifyComplete();
	}

	// ---- the chosen source ----

	@Test
	void sourceIsChosenExactlyOnceAndBeforeTheFirstElement() {
		TestStep<String> failing = TestStep.of(Source.FALLBACK_MODEL, () -> Flux.error(new RuntimeException("down")));
		TestStep<String> cache = TestStep.of(Source.CACHE, () -> Flux.just("c1", "c2", "c3"));
		StepVerifier.create(walk(chain(failing, cache, fixed("s"))))
				.consumeNextWith(first -> {
					assertThat(first).isEqualTo("c1");
					assertThat(chosen).containsExactly(Source.CACHE);
				})
				.expectNext("c2", "c3")
				.verifyComplete();
		assertThat(chosen).containsExactly(Source.CACHE);
		assertThat(metrics.count("cacheLookup chat hit")).isEqualTo(1);
		assertThat(metrics.count("answered chat P0 CACHE")).isEqualTo(1);
	}

	@Test
	void noSourceIsChosenWhenEveryStepFails() {
		TestStep<String> a = TestStep.of(Source.FALLBACK_MODEL, () -> Flux.error(new RuntimeException("a")));
		TestStep<String> b = TestStep.of(Source.LIGHTWEIGHT, Flux::empty);
		StepVerifier.create(walk(chain(a, b)))
				.expectError(NoSuchElementException.class)
				.verify(Duration.ofSeconds(5));
		assertThat(chosen).isEmpty();
		assertThat(metrics.events()).noneMatch(e -> e.startsWith("answered"));
	}

	@Test
	void throwingListenerAndMetricsAreIsolated() {
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		GuardMetrics throwingMetrics = new GuardMetrics() {
			@Override
			public void answered(String policy, Priority priority, Source source) {
				throw new IllegalStateException("metrics broke");
			}

			@Override
			public void fallbackStepFailed(String policy, Priority priority, Source source) {
				throw new IllegalStateException("metrics broke");
			}
		};
		Consumer<Source> throwingListener = s -> {
			throw new IllegalStateException("listener broke");
		};
		FallbackChain<String> chain = chain(TestStep.of(Source.CACHE, Flux::empty), fixed("s1", "s2"));
		StepVerifier.create(chain.answer(request(), Schedulers.boundedElastic(), throwingListener, throwingMetrics, "chat"))
				.expectNext("s1", "s2")
				.verifyComplete();
		assertThat(dropped).extracting(Throwable::getMessage)
				.containsExactly("metrics broke", "listener broke", "metrics broke");
	}

	// ---- committed after the first element ----

	@Test
	void errorAfterTheFirstElementPropagatesInsteadOfMixingAnswers() {
		RuntimeException midStream = new RuntimeException("connection reset");
		TestStep<String> model = TestStep.of(Source.FALLBACK_MODEL,
				() -> Flux.just("Our hours are").concatWith(Flux.error(midStream)));
		TestStep<String> cache = TestStep.of(Source.CACHE, () -> Flux.just("cached"));
		StepVerifier.create(walk(chain(model, cache, fixed("s"))))
				.expectNext("Our hours are")
				.expectErrorSatisfies(e -> assertThat(e).isSameAs(midStream))
				.verify(Duration.ofSeconds(5));
		assertThat(cache.calls).hasValue(0);
		assertThat(chosen).containsExactly(Source.FALLBACK_MODEL);
		assertThat(metrics.events()).containsExactly("fallbackStepTime chat P0 FALLBACK_MODEL", "fallbackStepFailed chat P0 FALLBACK_MODEL");
	}

	@Test
	void stepTimeoutNeverCutsACommittedStep() {
		FallbackChain<String> chain = FallbackChain.<String>builder()
				.step(Fallback.model(r -> Flux.interval(Duration.ofMillis(500), Duration.ofSeconds(5)).take(3)
						.map(i -> "t" + i)))
				.step(fixed("s"))
				.timeout(Duration.ofSeconds(1))
				.build();
		StepVerifier.withVirtualTime(() -> walk(chain))
				.expectSubscription()
				.thenAwait(Duration.ofSeconds(11))
				.expectNext("t0", "t1", "t2")
				.verifyComplete();
		assertThat(chosen).containsExactly(Source.FALLBACK_MODEL);
	}

	// ---- when everything fails ----

	@Test
	void everyStepFailingSignalsTheLastErrorWithCauseAndEarlierErrorsSuppressed() {
		RuntimeException e1 = new RuntimeException("model down");
		RuntimeException e2 = new RuntimeException("cache down");
		RuntimeException e3 = new RuntimeException("faq down");
		FallbackChain<String> chain = chain(TestStep.of(Source.FALLBACK_MODEL, () -> Flux.error(e1)),
				TestStep.of(Source.CACHE, () -> Flux.error(e2)), TestStep.of(Source.LIGHTWEIGHT, () -> Flux.error(e3)));
		StepVerifier.create(walk(chain))
				.expectErrorSatisfies(e -> {
					assertThat(e).isSameAs(e3);
					assertThat(e.getSuppressed()).containsExactly(CAUSE, e1, e2);
				})
				.verify(Duration.ofSeconds(5));
		assertThat(metrics.events()).filteredOn(e -> e.startsWith("fallbackStepFailed")).hasSize(3);
	}

	@Test
	void lastStepEmptyEndsWithNoSuchElement() {
		RuntimeException e1 = new RuntimeException("model down");
		FallbackChain<String> chain = chain(TestStep.of(Source.FALLBACK_MODEL, () -> Flux.error(e1)),
				TestStep.of(Source.CACHE, Flux::empty));
		StepVerifier.create(walk(chain))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(NoSuchElementException.class)
							.hasMessage("fallback step 1 (CACHE) completed without an answer");
					assertThat(e.getSuppressed()).containsExactly(CAUSE, e1);
				})
				.verify(Duration.ofSeconds(5));
	}

	// ---- demand and cancellation ----

	@Test
	void demandMadeBeforeAStepFailsPassesToTheNextExactly() {
		List<Long> requests = new CopyOnWriteArrayList<>();
		TestPublisher<String> first = TestPublisher.create();
		TestStep<String> a = TestStep.of(Source.FALLBACK_MODEL, first::flux);
		TestStep<String> b = TestStep.of(Source.LIGHTWEIGHT, () -> Flux.range(1, 5).map(i -> "b" + i)
				.doOnRequest(requests::add));
		StepVerifier.create(walk(chain(a, b)), 0)
				.expectSubscription()
				.then(() -> first.assertNoRequestOverflow().assertWasNotRequested())
				.thenRequest(2)
				.then(() -> first.assertMinRequested(2).complete())
				.expectNext("b1", "b2")
				.expectNoEvent(Duration.ofMillis(10))
				.thenRequest(3)
				.expectNext("b3", "b4", "b5")
				.verifyComplete();
		assertThat(requests).containsExactly(2L, 3L);
	}

	@Test
	void cancelStopsTheRunningStepAndNoLaterStepIsSubscribed() {
		TestStep<String> silent = TestStep.of(Source.FALLBACK_MODEL, Flux::never);
		TestStep<String> next = TestStep.of(Source.LIGHTWEIGHT, () -> Flux.just("x"));
		Disposable subscriber = walk(chain(silent, next)).subscribe();
		assertThat(silent.subscriptions).hasValue(1);
		subscriber.dispose();
		assertThat(silent.cancellations).hasValue(1);
		assertThat(next.calls).hasValue(0);
		assertThat(chosen).isEmpty();
		assertThat(metrics.events()).isEmpty();
	}

	@Test
	void cancelledBeforeTheFirstStepSubscribesNoStep() {
		TestStep<String> first = TestStep.of(Source.FALLBACK_MODEL, () -> Flux.just("x"));
		// StepVerifier cancels from within onSubscribe, before the walk starts its first step
		StepVerifier.create(walk(chain(first)))
				.thenCancel()
				.verify(Duration.ofSeconds(5));
		assertThat(first.calls).hasValue(0);
		assertThat(chosen).isEmpty();
	}

	@Test
	void lateSignalsOfACancelledStepAreDroppedAndDoNotAdvance() {
		List<Throwable> droppedErrors = new CopyOnWriteArrayList<>();
		List<Object> droppedNexts = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(droppedErrors::add);
		Hooks.onNextDropped(droppedNexts::add);
		AtomicReference<Subscriber<? super String>> upstream = new AtomicReference<>();
		// ignores cancellation on purpose, like a misbehaving client
		Flux<String> rude = Flux.from(s -> {
			upstream.set(s);
			s.onSubscribe(new org.reactivestreams.Subscription() {
				@Override
				public void request(long n) {
				}

				@Override
				public void cancel() {
				}
			});
		});
		TestStep<String> next = TestStep.of(Source.LIGHTWEIGHT, () -> Flux.just("x"));
		Disposable subscriber = walk(chain(TestStep.of(Source.FALLBACK_MODEL, () -> rude), next)).subscribe();
		subscriber.dispose();
		upstream.get().onNext("late");
		RuntimeException late = new RuntimeException("late");
		upstream.get().onError(late);
		assertThat(droppedNexts).containsExactly("late");
		assertThat(droppedErrors).containsExactly(late);
		assertThat(next.calls).hasValue(0);
	}

	// ---- timeouts and time ----

	@Test
	void cacheThatNeverAnswersIsAFailingStepAfterTheTimeout() {
		ResponseCache<String> silent = new ResponseCache<>() {
			@Override
			public Mono<List<String>> lookup(Object key) {
				return Mono.never();
			}

			@Override
			public void store(Object key, List<String> chunks) {
			}
		};
		FallbackChain<String> chain = FallbackChain.<String>builder()
				.step(Fallback.cache(silent))
				.step(fixed("static"))
				.timeout(Duration.ofSeconds(2))
				.build();
		StepVerifier.withVirtualTime(() -> walk(chain))
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(1_999))
				.thenAwait(Duration.ofMillis(1))
				.expectNext("static")
				.verifyComplete();
		assertThat(metrics.events()).containsExactly("fallbackStepTime chat P0 CACHE", "fallbackStepFailed chat P0 CACHE", "cacheLookup chat miss",
				"fallbackStepTime chat P0 STATIC", "answered chat P0 STATIC");
		assertThat(metrics.stepNanos()).containsExactly(Duration.ofSeconds(2).toNanos(), 0L);
	}

	@Test
	void timedOutStepErrorIsATimeoutExceptionWhenNothingElseAnswers() {
		FallbackChain<String> chain = FallbackChain.<String>builder()
				.step(TestStep.of(Source.LIGHTWEIGHT, Flux::never))
				.timeout(Duration.ofSeconds(3))
				.build();
		TestStep<String> only = (TestStep<String>) chain.steps().get(0);
		StepVerifier.withVirtualTime(() -> walk(chain))
				.expectSubscription()
				.thenAwait(Duration.ofSeconds(3))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(TimeoutException.class)
						.hasMessage("fallback step 0 (LIGHTWEIGHT) gave no answer within PT3S"))
				.verify(Duration.ofSeconds(5));
		assertThat(only.cancellations).hasValue(1);
	}

	@Test
	void failingCacheLookupIsAFailingStep() {
		ResponseCache<String> broken = failingCache();
		StepVerifier.create(walk(chain(Fallback.cache(broken), fixed("static"))))
				.expectNext("static")
				.verifyComplete();
		assertThat(metrics.events()).contains("fallbackStepFailed chat P0 CACHE", "cacheLookup chat miss");
	}

	@Test
	void stepTimesAreReadFromTheTimer() {
		FallbackChain<String> chain = chain(
				TestStep.of(Source.FALLBACK_MODEL, () -> Mono.delay(Duration.ofSeconds(3))
						.then(Mono.<String>error(new RuntimeException("503"))).flux()),
				TestStep.of(Source.LIGHTWEIGHT, () -> Mono.delay(Duration.ofMillis(700)).map(i -> "faq").flux()));
		StepVerifier.withVirtualTime(() -> walk(chain))
				.expectSubscription()
				.thenAwait(Duration.ofSeconds(4))
				.expectNext("faq")
				.verifyComplete();
		assertThat(metrics.stepNanos()).containsExactly(Duration.ofSeconds(3).toNanos(), Duration.ofMillis(700).toNanos());
	}

	// ---- threads ----

	@Test
	void nonBlockingStepsAreCalledOnTheSubscribingThread() {
		TestStep<String> step = TestStep.of(Source.FALLBACK_MODEL, () -> Flux.just("x"));
		StepVerifier.create(walk(chain(step))).expectNext("x").verifyComplete();
		assertThat(step.callThreads).containsExactly(Thread.currentThread().getName());
	}

	@Test
	void blockingStepsAreCalledOnTheBlockingScheduler() {
		Scheduler lane = Schedulers.newBoundedElastic(2, 100, "lane-p0");
		try {
			TestStep<String> failingBlocking = TestStep.blocking(Source.LIGHTWEIGHT, () -> Flux.error(new RuntimeException()));
			TestStep<String> nonBlocking = TestStep.of(Source.LIGHTWEIGHT, () -> Flux.just("x"));
			StepVerifier.create(chain(failingBlocking, nonBlocking)
							.answer(request(), lane, chosen::add, metrics, "chat"))
					.expectNext("x")
					.verifyComplete();
			assertThat(failingBlocking.callThreads).singleElement().asString().startsWith("lane-p0");
			// the walk goes on where the previous step ended: still off any event loop
			assertThat(nonBlocking.callThreads).singleElement().asString().startsWith("lane-p0");
		}
		finally {
			lane.dispose();
		}
	}

	static Flux<String> blockingFaq() {
		try {
			// parks the thread: what a JDBC or file lookup would do
			new CountDownLatch(1).await(1, TimeUnit.MILLISECONDS);
		}
		catch (InterruptedException e) {
			Thread.currentThread().interrupt();
		}
		return Flux.just("faq");
	}

	@Test
	void blockingStepOnTheBoundedElasticSchedulerPassesBlockHound() {
		FallbackChain<String> chain = chain(Fallback.lightweight(r -> blockingFaq()));
		StepVerifier.create(chain.answer(request(), Schedulers.boundedElastic(), chosen::add, metrics, "chat")
						.subscribeOn(Schedulers.parallel()))
				.expectNext("faq")
				.verifyComplete();
	}

	@Test
	void blockingStepOnANonBlockingSchedulerIsCaughtByBlockHound() {
		FallbackChain<String> chain = chain(Fallback.lightweight(r -> blockingFaq()));
		StepVerifier.create(chain.answer(request(), Schedulers.parallel(), chosen::add, metrics, "chat")
						.subscribeOn(Schedulers.parallel()))
				.expectError(BlockingOperationError.class)
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void blockingStepCaughtByBlockHoundIsJustAFailingStep() {
		FallbackChain<String> chain = chain(Fallback.lightweight(r -> blockingFaq()), fixed("static"));
		StepVerifier.create(chain.answer(request(), Schedulers.parallel(), chosen::add, metrics, "chat")
						.subscribeOn(Schedulers.parallel()))
				.expectNext("static")
				.verifyComplete();
		assertThat(metrics.count("fallbackStepFailed chat P0 LIGHTWEIGHT")).isEqualTo(1);
	}

	@Test
	void eachSubscriptionIsANewWalk() {
		List<Integer> attempts = new ArrayList<>();
		TestStep<String> flaky = TestStep.of(Source.FALLBACK_MODEL, () -> {
			attempts.add(attempts.size());
			return attempts.size() == 1 ? Flux.error(new RuntimeException("first")) : Flux.just("model");
		});
		Flux<String> answer = walk(chain(flaky, fixed("static")));
		StepVerifier.create(answer).expectNext("static").verifyComplete();
		StepVerifier.create(answer).expectNext("model").verifyComplete();
		assertThat(chosen).containsExactly(Source.STATIC, Source.FALLBACK_MODEL);
	}

	static <T> ResponseCache<T> failingCache() {
		return new ResponseCache<>() {
			@Override
			public Mono<List<T>> lookup(Object key) {
				throw new IllegalStateException("cache unreachable");
			}

			@Override
			public void store(Object key, List<T> chunks) {
			}
		};
	}
}
