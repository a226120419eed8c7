package dev.aiguard.fallback;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Source;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.fallback.recording.AnswerRecorder;

class FallbackWalkRaceTest {

	static final int ROUNDS = 2_000;
	static final RuntimeException OUTAGE = new IllegalStateException("realtime model down");

	final AtomicLong droppedNexts = new AtomicLong();
	final AtomicLong droppedErrors = new AtomicLong();

	@BeforeEach
	void countDrops() {
		// losers of a race end up here; counted instead of logged
		Hooks.onNextDropped(t -> droppedNexts.incrementAndGet());
		Hooks.onErrorDropped(t -> droppedErrors.incrementAndGet());
	}

	@AfterEach
	void resetHooks() {
		Hooks.resetOnNextDropped();
		Hooks.resetOnErrorDropped();
	}

	static FallbackRequest request() {
		return new FallbackRequest(null, OUTAGE, FallbackTrigger.REJECTED, Priority.P1, null);
	}

	@Test
	void timeoutRacingTheFirstElementCommitsExactlyOneStep() {
		for (int round = 0; round < ROUNDS; round++) {
			VirtualTimeScheduler clock = VirtualTimeScheduler.create();
			Sinks.One<String> live = Sinks.one();
			FallbackChain<String> chain = FallbackChain.<String>builder()
					.step(Fallback.lightweight(r -> live.asMono(), false))
					.step(Fallback.staticAnswer(List.of("static")))
					.timeout(Duration.ofSeconds(1))
					.timer(clock)
					.build();
			RecordingMetrics metrics = new RecordingMetrics();
			List<Source> chosen = new CopyOnWriteArrayList<>();
			List<String> items = new CopyOnWriteArrayList<>();
			List<Throwable> errors = new CopyOnWriteArrayList<>();
			AtomicInteger completions = new AtomicInteger();
			chain.answer(request(), Schedulers.boundedElastic(), chosen::add, metrics, "race")
					.subscribe(items::add, errors::add, completions::incrementAndGet);

			RaceTestUtils.race(() -> clock.advanceTimeBy(Duration.ofSeconds(1)), () -> live.tryEmitValue("live"));

			assertThat(errors).isEmpty();
			assertThat(completions).hasValue(1);
			assertThat(chosen).hasSize(1);
			if (chosen.get(0) == Source.LIGHTWEIGHT) {
				assertThat(items).containsExactly("live");
			}
			else {
				assertThat(chosen).containsExactly(Source.STATIC);
				assertThat(items).containsExactly("static");
				assertThat(metrics.count("fallbackStepFailed race P1 LIGHTWEIGHT")).isEqualTo(1);
			}
			assertThat(metrics.events()).filteredOn(e -> e.startsWith("answered")).hasSize(1);
			clock.dispose();
		}
	}

	@Test
	void cancelRacingAStepFailureNeverLeavesALaterStepRunning() {
		for (int round = 0; round < ROUNDS; round++) {
			Sinks.One<String> first = Sinks.one();
			TestStep<String> second = TestStep.of(Source.LIGHTWEIGHT, Flux::never);
			FallbackChain<String> chain = FallbackChain.<String>builder()
					.step(Fallback.lightweight(r -> first.asMono(), false))
					.step(second)
					.build();
			List<Object> signals = new CopyOnWriteArrayList<>();
			Disposable subscriber = chain.answer(request(), Schedulers.boundedElastic(), s -> {
			}, new RecordingMetrics(), "race").subscribe(signals::add, signals::add, () -> signals.add("complete"));

			RaceTestUtils.race(subscriber::dispose, () -> first.tryEmitError(new RuntimeException("step failed")));

			assertThat(signals).isEmpty();
			// a step the failure started concurrently with the cancel was cancelled at once, or never called
			assertThat(second.cancellations.get()).isEqualTo(second.subscriptions.get());
			assertThat(second.subscriptions.get()).isLessThanOrEqualTo(1);
		}
	}

	@Test
	void requestRacingAStepSwitchPassesTheExactDemand() {
		for (int round = 0; round < ROUNDS; round++) {
			Sinks.One<String> first = Sinks.one();
			AtomicLong requestedFromSecond = new AtomicLong();
			FallbackChain<String> chain = FallbackChain.<String>builder()
					.step(Fallback.lightweight(r -> first.asMono(), false))
					.step(Fallback.lightweight(r -> Flux.range(1, 100).map(String::valueOf)
							.doOnRequest(requestedFromSecond::addAndGet), false))
					.build();
			List<String> items = new CopyOnWriteArrayList<>();
			AtomicReference<Subscription> subscription = new AtomicReference<>();
			chain.answer(request()).subscribe(new BaseSubscriber<String>() {
				@Override
				protected void hookOnSubscribe(Subscription s) {
					subscription.set(s);
					s.request(1);
				}

				@Override
				protected void hookOnNext(String value) {
					items.add(value);
				}
			});

			RaceTestUtils.race(() -> subscription.get().request(2), () -> first.tryEmitError(new RuntimeException("x")));

			assertThat(items).containsExactly("1", "2", "3");
			assertThat(requestedFromSecond).hasValue(3);
		}
	}

	@Test
	void cancelRacingTheCommittedCompletionRecordsTheAnswerAtMostOnce() {
		for (int round = 0; round < ROUNDS; round++) {
			Sinks.One<String> only = Sinks.one();
			FallbackChain<String> chain = FallbackChain.<String>builder()
					.step(Fallback.lightweight(r -> only.asMono(), false))
					.build();
			RecordingMetrics metrics = new RecordingMetrics();
			AtomicInteger chosen = new AtomicInteger();
			Disposable subscriber = chain.answer(request(), Schedulers.boundedElastic(), s -> chosen.incrementAndGet(),
					metrics, "race").subscribe();

			RaceTestUtils.race(subscriber::dispose, () -> only.tryEmitValue("answer"));

			assertThat(chosen.get()).isLessThanOrEqualTo(1);
			assertThat(metrics.count("answered race P1 LIGHTWEIGHT")).isLessThanOrEqualTo(chosen.get());
			assertThat(metrics.events()).noneMatch(e -> e.startsWith("fallbackStepFailed"));
		}
	}

	// ---- an outage: every walk answers, the cache keeps its bounds ----

	static ChatRequest question(int n) {
		return ChatRequest.of("gpt", List.of(ChatMessage.system("Be brief."), ChatMessage.user("question " + n)));
	}

	static int number(ChatRequest request) {
		return Integer.parseInt(request.lastMessage().content().substring("question ".length()));
	}

	static List<ChatChunk> answer(String from, int n, int tokens) {
		List<ChatChunk> chunks = new ArrayList<>();
		for (int i = 0; i < tokens; i++) {
			chunks.add(ChatChunk.token(from + " " + n + "." + i + " "));
		}
		chunks.add(ChatChunk.finish("stop"));
		chunks.add(ChatChunk.done());
		return chunks;
	}

	static boolean storeRealtimeAnswer(ResponseCache<ChatChunk> cache, ChatRequest q, List<ChatChunk> chunks) {
		AnswerRecorder<ChatChunk> recorder = AnswerStore.recorderFor(cache);
		chunks.forEach(recorder::record);
		return AnswerStore.storeIfComplete(recorder, cache, CacheKeys.of(q), Outcome.SUCCESS, false, Schedulers.boundedElastic());
	}

	record Result(int question, Source source, List<ChatChunk> chunks) {
	}

	@Test
	void thousandParallelWalksDuringAnOutageAllGetAnAnswerAndTheCacheStaysBounded() {
		int maxEntries = 50;
		int maxChunks = 8;
		CaffeineResponseCache<ChatChunk> cache = (CaffeineResponseCache<ChatChunk>) ResponseCache.<ChatChunk>caffeine(
				ResponseCacheSpec.defaults().maximumEntries(maxEntries).maxChunksPerEntry(maxChunks));
		// answers stored before the outage: 200 questions for a cache of 50
		for (int q = 0; q < 200; q++) {
			assertThat(storeRealtimeAnswer(cache, question(q), answer("cached", q, 4))).isTrue();
		}
		RecordingMetrics metrics = new RecordingMetrics();
		FallbackChain<ChatChunk> chain = FallbackChain.<ChatChunk>builder()
				.step(Fallback.model(r -> Flux.error(new IllegalStateException("fallback model down too"))))
				.step(Fallback.cache(cache))
				.step(Fallback.lightweight(r -> {
					int q = number(r.chatRequest());
					return q % 7 == 0 ? Flux.fromIterable(answer("faq", q, 3)) : Flux.empty();
				}))
				.step(Fallback.staticText("The assistant is busy, please try again shortly."))
				.timeout(Duration.ofSeconds(10))
				.build();

		Flux<Result> walks = Flux.range(0, 1_000).flatMap(i -> {
			ChatRequest q = question(i % 300);
			AtomicReference<Source> source = new AtomicReference<>();
			FallbackRequest req = new FallbackRequest(q, OUTAGE, FallbackTrigger.BREAKER_OPEN,
					Priority.values()[i % 3], CacheKeys.of(q));
			return chain.answer(req, Schedulers.boundedElastic(), s -> assertThat(source.getAndSet(s)).isNull(),
							metrics, "chat")
					.subscribeOn(Schedulers.parallel())
					.collectList()
					.map(chunks -> new Result(number(q), source.get(), chunks));
		}, 1_000);
		// meanwhile, answers of other replicas keep arriving: half of them too long to be stored
		Flux<Result> stores = Flux.range(0, 1_000).flatMap(i -> Mono.fromRunnable(() -> storeRealtimeAnswer(cache,
				question(1_000 + i), answer("late", i, i % 2 == 0 ? 4 : 20))).subscribeOn(Schedulers.parallel())
				.then(Mono.<Result>empty()), 1_000);

		List<Result> results = Flux.merge(walks, stores).collectList().block(Duration.ofSeconds(60));

		assertThat(results).hasSize(1_000);
		for (Result r : results) {
			assertThat(r.source()).isNotNull();
			assertThat(r.chunks()).last().isEqualTo(ChatChunk.done());
			switch (r.source()) {
				case CACHE:
					assertThat(r.chunks()).isEqualTo(answer("cached", r.question(), 4));
					break;
				case LIGHTWEIGHT:
					assertThat(r.question() % 7).isZero();
					assertThat(r.chunks()).isEqualTo(answer("faq", r.question(), 3));
					break;
				default:
					assertThat(r.source()).isEqualTo(Source.STATIC);
			}
		}
		long hits = results.stream().filter(r -> r.source() == Source.CACHE).count();
		assertThat(results).extracting(Result::source).contains(Source.LIGHTWEIGHT, Source.STATIC);
		assertThat(metrics.count("cacheLookup chat hit")).isEqualTo(hits);
		assertThat(metrics.count("cacheLookup chat miss")).isEqualTo(1_000 - hits);
		long answered = metrics.count("answered chat");
		assertThat(answered).isEqualTo(1_000);
		assertThat(metrics.events()).filteredOn(e -> e.startsWith("fallbackStepFailed chat") && e.endsWith("FALLBACK_MODEL"))
				.hasSize(1_000);

		cache.cleanUp();
		assertThat(cache.estimatedSize()).isLessThanOrEqualTo(maxEntries);
		for (int i = 0; i < 1_000; i++) {
			List<ChatChunk> stored = cache.lookup(CacheKeys.of(question(1_000 + i))).block(Duration.ofSeconds(1));
			if (i % 2 == 1) {
				assertThat(stored).as("an answer over the per-entry bound is never stored").isNull();
			}
			else if (stored != null) {
				assertThat(stored).hasSizeLessThanOrEqualTo(maxChunks);
			}
		}
	}
}
