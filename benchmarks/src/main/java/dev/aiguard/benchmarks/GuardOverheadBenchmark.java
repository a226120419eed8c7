package dev.aiguard.benchmarks;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import dev.aiguard.AiGuard;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import dev.aiguard.provider.OpenAiChunkCodec;
import dev.aiguard.sse.SseDecoder;
import dev.aiguard.validation.InvalidOutputException;
import dev.aiguard.validation.RepetitionDetector;
import dev.aiguard.validation.StreamingValidator;
import dev.aiguard.validation.Validators;
import io.github.resilience4j.bulkhead.Bulkhead;
import io.github.resilience4j.bulkhead.BulkheadConfig;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;
import io.github.resilience4j.reactor.bulkhead.operator.BulkheadOperator;
import io.github.resilience4j.reactor.circuitbreaker.operator.CircuitBreakerOperator;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.jspecify.annotations.Nullable;
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

/**
 * What the guard costs per streamed answer, against a plain pass-through, Reactor's per-element
 * {@code timeout}, and a resilience4j stack, on the same pre-built chunks; and, in the same run,
 * what decoding that answer from its OpenAI bytes costs ({@link #decode}), the yardstick for the
 * guard's added cost. {@link GuardOverheadRatios} runs it and prints the ratios.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class GuardOverheadBenchmark {

	@Param("1000")
	public int tokens;

	ChatChunk[] chunks;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> guard;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> stallOnly;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> validated;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> emptyOnly;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> repetitionOnly;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> noopStreaming;
	Function<Flux<ChatChunk>, Flux<ChatChunk>> hashStreaming;
	MicrometerGuardMetrics floorMetrics;
	/** The same answer as {@link #chunks}, as the bytes OpenAI sends, cut in 8 KiB network reads. */
	byte[] openAiBytes;
	int[] offsets;
	SseDecoder decoder;
	String[] texts;
	CircuitBreaker r4jBreaker;
	Bulkhead r4jBulkhead;

	@Setup
	public void setup() {
		chunks = new ChatChunk[tokens + 1];
		for (int i = 0; i < tokens; i++) {
			chunks[i] = ChatChunk.token("tok" + i);
		}
		chunks[tokens] = ChatChunk.done();
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		guard = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)));
		stallOnly = AiGuard.of(BenchmarkPolicies.stallOnlyPolicy(new MicrometerGuardMetrics(registry)));
		// the full policy plus the empty-answer validator and the repetition detector
		validated = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)).toBuilder()
				.validate(Validators.emptyAnswer())
				.validateStreaming(RepetitionDetector.defaults())
				.build());
		emptyOnly = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)).toBuilder()
				.validate(Validators.emptyAnswer()).build());
		repetitionOnly = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)).toBuilder()
				.validateStreaming(RepetitionDetector.defaults()).build());
		noopStreaming = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)).toBuilder()
				.validateStreaming(new FloorValidator(false)).build());
		hashStreaming = AiGuard.of(BenchmarkPolicies.fullPolicy(new MicrometerGuardMetrics(registry)).toBuilder()
				.validateStreaming(new FloorValidator(true)).build());
		floorMetrics = new MicrometerGuardMetrics(registry);
		texts = new String[tokens];
		for (int i = 0; i < tokens; i++) {
			texts[i] = chunks[i].text();
		}
		openAiBytes = openAiAnswer(texts).getBytes(StandardCharsets.UTF_8);
		int slices = (openAiBytes.length + SLICE_BYTES - 1) / SLICE_BYTES;
		offsets = new int[slices + 1];
		for (int i = 0; i < slices; i++) {
			offsets[i] = i * SLICE_BYTES;
		}
		offsets[slices] = openAiBytes.length;
		decoder = SseDecoder.defaults();
		checkTheDecodedAnswerIsTheGuardedOne();
		r4jBreaker = CircuitBreaker.of("bench", CircuitBreakerConfig.ofDefaults());
		r4jBulkhead = Bulkhead.of("bench", BulkheadConfig.custom().maxConcurrentCalls(1000).build());
	}

	@Benchmark
	public void passThrough(Blackhole bh) {
		Flux.fromArray(chunks).map(Function.identity()).subscribe(new BlackholeSink<>(bh));
	}

	@Benchmark
	public void guarded(Blackhole bh) {
		Flux.fromArray(chunks).transform(guard).subscribe(new BlackholeSink<>(bh));
	}

	/** {@link #guarded} with output validation on: the end-of-attempt check and the per-chunk repetition watch. */
	@Benchmark
	public void guardedValidated(Blackhole bh) {
		Flux.fromArray(chunks).transform(validated).subscribe(new BlackholeSink<>(bh));
	}

	/** {@link #guarded} with the empty-answer validator alone: the tap and the end-of-attempt verdict. */
	@Benchmark
	public void guardedEmptyAnswer(Blackhole bh) {
		Flux.fromArray(chunks).transform(emptyOnly).subscribe(new BlackholeSink<>(bh));
	}

	/** {@link #guarded} with the repetition detector alone. */
	@Benchmark
	public void guardedRepetition(Blackhole bh) {
		Flux.fromArray(chunks).transform(repetitionOnly).subscribe(new BlackholeSink<>(bh));
	}

	/** Deadlines and metrics only, to separate the per-token watch from per-stream admission costs. */
	@Benchmark
	public void guardedStallOnly(Blackhole bh) {
		Flux.fromArray(chunks).transform(stallOnly).subscribe(new BlackholeSink<>(bh));
	}

	/** The floor: what any watcher keeping the per-token rules must do at least (see {@link MinimalWatch}). */
	@Benchmark
	public void minimalWatch(Blackhole bh) {
		Flux.fromArray(chunks).subscribe(new MinimalWatch<>(new BlackholeSink<>(bh), ChatChunk.INSPECTOR, floorMetrics));
	}

	/** The floor's per-chunk part alone: no meters, no clock reads beyond the watch's three. */
	@Benchmark
	public void minimalWatchNoMetrics(Blackhole bh) {
		Flux.fromArray(chunks).subscribe(new MinimalWatch<>(new BlackholeSink<>(bh), ChatChunk.INSPECTOR, GuardMetrics.noop()));
	}

	/**
	 * A floor for streaming validation: {@link #guarded} with a streaming validator whose watch does
	 * nothing, so what remains is the guard's dispatch of each content chunk to validation.
	 */
	@Benchmark
	public void guardedNoopStreaming(Blackhole bh) {
		Flux.fromArray(chunks).transform(noopStreaming).subscribe(new BlackholeSink<>(bh));
	}

	/**
	 * The floor of a streaming validator that reads the text: {@link #guardedNoopStreaming} whose
	 * watch stores each chunk's (cached) text hash in a ring, the least any detector that compares
	 * chunk contents must do per chunk.
	 */
	@Benchmark
	public void guardedHashStreaming(Blackhole bh) {
		Flux.fromArray(chunks).transform(hashStreaming).subscribe(new BlackholeSink<>(bh));
	}

	/** The repetition detector alone on the answer's texts: a plain loop, no stream, no guard. */
	@Benchmark
	public void detectorAlone(Blackhole bh) {
		StreamingValidator.Watch w = RepetitionDetector.defaults().newWatch();
		String[] t = texts;
		for (int i = 0; i < t.length; i++) {
			bh.consume(w.onText(t[i]));
		}
	}

	/**
	 * Decoding the same answer from the bytes OpenAI sends ({@link SseDecoder} + {@link OpenAiChunkCodec})
	 * into a Blackhole: what any client of a streaming model spends per answer before a guard sees a chunk.
	 */
	@Benchmark
	public void decode(Blackhole bh) {
		OpenAiChunkCodec.decode(decoder.decode(byteBuffers())).subscribe(new BlackholeSink<>(bh));
	}

	@Benchmark
	public void fluxTimeout(Blackhole bh) {
		Flux.fromArray(chunks).timeout(Duration.ofSeconds(30)).subscribe(new BlackholeSink<>(bh));
	}

	@Benchmark
	public void resilience4jStack(Blackhole bh) {
		Flux.fromArray(chunks)
				.timeout(Duration.ofSeconds(30))
				.transformDeferred(CircuitBreakerOperator.of(r4jBreaker))
				.transformDeferred(BulkheadOperator.of(r4jBulkhead))
				.subscribe(new BlackholeSink<>(bh));
	}

	/** Network reads of a realistic size, as in {@link SseDecodeBenchmark}. */
	static final int SLICE_BYTES = 8192;

	Flux<ByteBuffer> byteBuffers() {
		return Flux.range(0, offsets.length - 1)
			.map(i -> ByteBuffer.wrap(openAiBytes, offsets[i], offsets[i + 1] - offsets[i]));
	}

	/** @return the answer as OpenAI streams it: a role chunk, one chunk per text, a finish chunk, usage, {@code [DONE]} */
	static String openAiAnswer(String[] texts) {
		String prefix = "data: {\"id\":\"chatcmpl-AbCdEf0123456789\",\"object\":\"chat.completion.chunk\",\"created\":1718000000,"
				+ "\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_0123456789\",\"choices\":[{\"index\":0,\"delta\":";
		StringBuilder out = new StringBuilder(texts.length * 240);
		out.append(prefix).append("{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
		for (String t : texts) {
			out.append(prefix).append("{\"content\":\"").append(t).append("\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
		}
		out.append(prefix).append("{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n");
		out.append("data: {\"id\":\"chatcmpl-AbCdEf0123456789\",\"object\":\"chat.completion.chunk\",\"created\":1718000000,"
				+ "\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_0123456789\",\"choices\":[],"
				+ "\"usage\":{\"prompt_tokens\":25,\"completion_tokens\":" + texts.length + ",\"total_tokens\":"
				+ (texts.length + 25) + "}}\n\n");
		out.append("data: [DONE]\n\n");
		return out.toString();
	}

	/** The decode benchmark must produce the very texts the guard benchmarks stream, or the ratio means nothing. */
	private void checkTheDecodedAnswerIsTheGuardedOne() {
		List<String> decoded = OpenAiChunkCodec.decode(decoder.decode(byteBuffers()))
			.filter(ChatChunk::hasContent)
			.map(ChatChunk::text)
			.collectList()
			.block();
		if (decoded == null || !decoded.equals(List.of(texts))) {
			throw new IllegalStateException("the decoded answer differs from the guarded one: "
					+ (decoded == null ? 0 : decoded.size()) + " content chunks for " + texts.length + " tokens");
		}
	}

	/**
	 * A streaming validator for the floors: it never cuts; with {@code hashing}, its watch stores
	 * each text's hash in a ring (so the JIT cannot drop the read), else it does nothing.
	 */
	static final class FloorValidator implements StreamingValidator {

		private final boolean hashing;

		FloorValidator(boolean hashing) {
			this.hashing = hashing;
		}

		@Override
		public String name() {
			return hashing ? "floor-hash" : "floor-noop";
		}

		@Override
		public Watch newWatch() {
			return hashing ? new HashWatch() : new NoopWatch();
		}
	}

	static final class NoopWatch implements StreamingValidator.Watch {

		@Override
		public void reset() {
		}

		@Override
		@Nullable
		public InvalidOutputException onText(String text) {
			return null;
		}
	}

	static final class HashWatch implements StreamingValidator.Watch {

		private final int[] ring = new int[64];
		private int position;

		@Override
		public void reset() {
			position = 0;
		}

		@Override
		@Nullable
		public InvalidOutputException onText(String text) {
			int p = position;
			position = p + 1;
			ring[p & 63] = text.hashCode();
			return null;
		}
	}
}
