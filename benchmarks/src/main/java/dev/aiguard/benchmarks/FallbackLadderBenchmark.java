package dev.aiguard.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.recording.AnswerRecorder;
import dev.aiguard.fallback.CacheKeys;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackRequest;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.fallback.ResponseCacheSpec;
import dev.aiguard.metrics.GuardMetrics;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * What walking the degradation ladder costs per answer, against replaying the same chunks from
 * an array (the baseline); and what recording an answer for the cache costs, against an
 * {@code ArrayList} collecting the same chunks.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class FallbackLadderBenchmark {

	@Param("1000")
	public int tokens;

	ChatChunk[] chunks;
	List<ChatChunk> answer;
	FallbackChain<ChatChunk> staticOnly;
	FallbackChain<ChatChunk> afterTwoFailures;
	FallbackChain<ChatChunk> cacheHit;
	FallbackRequest request;
	GuardMetrics metrics = GuardMetrics.noop();

	@Setup
	public void setup() {
		chunks = new ChatChunk[tokens + 1];
		for (int i = 0; i < tokens; i++) {
			chunks[i] = ChatChunk.token("tok" + i);
		}
		chunks[tokens] = ChatChunk.done();
		answer = List.of(chunks);
		ChatRequest chat = ChatRequest.of("m", List.of(ChatMessage.user("What are your opening hours?")));
		Object key = CacheKeys.of(chat);
		request = new FallbackRequest(chat, new IllegalStateException("down"), FallbackTrigger.BREAKER_OPEN,
				Priority.P0, key);
		RuntimeException modelDown = new IllegalStateException("fallback model down");
		ResponseCache<ChatChunk> emptyCache = ResponseCache.caffeine();
		ResponseCache<ChatChunk> fullCache = ResponseCache.caffeine(ResponseCacheSpec.defaults().maxChunksPerEntry(tokens + 1));
		fullCache.store(key, answer);

		staticOnly = FallbackChain.<ChatChunk>builder().step(Fallback.staticAnswer(answer)).build();
		afterTwoFailures = FallbackChain.<ChatChunk>builder()
				.step(Fallback.model(r -> Flux.error(modelDown)))
				.step(Fallback.cache(emptyCache))
				.step(Fallback.staticAnswer(answer))
				.build();
		cacheHit = FallbackChain.<ChatChunk>builder()
				.step(Fallback.cache(fullCache))
				.step(Fallback.staticText("busy"))
				.build();
	}

	@Benchmark
	public void baselineReplay(Blackhole bh) {
		Flux.fromArray(chunks).map(Function.identity()).subscribe(new BlackholeSink<>(bh));
	}

	/** The same chunks from the same kind of list the static step holds: isolates the walk itself. */
	@Benchmark
	public void baselineReplayList(Blackhole bh) {
		Flux.fromIterable(answer).map(Function.identity()).subscribe(new BlackholeSink<>(bh));
	}

	@Benchmark
	public void staticStep(Blackhole bh) {
		walk(staticOnly, bh);
	}

	@Benchmark
	public void staticAfterTwoFailedSteps(Blackhole bh) {
		walk(afterTwoFailures, bh);
	}

	@Benchmark
	public void caffeineCacheHit(Blackhole bh) {
		walk(cacheHit, bh);
	}

	private void walk(FallbackChain<ChatChunk> chain, Blackhole bh) {
		chain.answer(request, Schedulers.immediate(), bh::consume, metrics, "bench").subscribe(new BlackholeSink<>(bh));
	}

	@Benchmark
	public Object baselineArrayList() {
		List<ChatChunk> list = new ArrayList<>();
		for (ChatChunk c : chunks) {
			list.add(c);
		}
		return list;
	}

	@Benchmark
	public Object answerRecorder() {
		AnswerRecorder<ChatChunk> recorder = new AnswerRecorder<>(4_096);
		for (ChatChunk c : chunks) {
			recorder.record(c);
		}
		return recorder.isStorable() ? recorder.chunks() : null;
	}

	@Benchmark
	public boolean recordAndStore(Blackhole bh) {
		AnswerRecorder<ChatChunk> recorder = new AnswerRecorder<>(4_096);
		for (ChatChunk c : chunks) {
			recorder.record(c);
		}
		// what the guard's fallback stage does with a complete answer: a storable one goes to the cache
		Object key = request.cacheKey();
		if (key == null || !recorder.isStorable()) {
			return false;
		}
		new DiscardingCache(bh).store(key, recorder.chunks());
		return true;
	}

	@Benchmark
	public Object standardCacheKey() {
		return CacheKeys.of(request.chatRequest());
	}

	/** Hands the stored list to the Blackhole. */
	static final class DiscardingCache implements ResponseCache<ChatChunk> {

		private final Blackhole bh;

		DiscardingCache(Blackhole bh) {
			this.bh = bh;
		}

		@Override
		public reactor.core.publisher.Mono<List<ChatChunk>> lookup(Object key) {
			return reactor.core.publisher.Mono.empty();
		}

		@Override
		public void store(Object key, List<ChatChunk> answer) {
			bh.consume(answer);
		}
	}

}
