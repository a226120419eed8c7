package dev.aiguard.benchmarks;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.provider.OpenAiChunkCodec;
import dev.aiguard.sse.SseDecoder;
import dev.aiguard.sse.SseEvent;
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
import org.springframework.ai.chat.model.ChatResponse;
import reactor.core.publisher.Flux;

/**
 * Turning the events of one OpenAI answer ({@code chunks} events: a role chunk, content chunks, a
 * finish chunk, a usage chunk and {@code [DONE]}, the stream of {@link SseDecodeBenchmark}) into
 * each library's chunk type. The bytes are split into {@link SseEvent}s once, in the setup, so
 * every variant starts from the same event data; each operation maps the whole answer through one
 * Reactor operator:
 *
 * <ul>
 * <li>{@code streaming}: {@link OpenAiChunkCodec#decode}, Jackson 3's streaming parser;</li>
 * <li>{@code tree}: the same rules on a Jackson 2 tree per event ({@link TreeChunkDecoder});</li>
 * <li>{@code openAiSdk}: the OpenAI Java SDK's mapper reading each event's data into its
 * {@code ChatCompletionChunk}, as its stream handler does ({@code [DONE]} ends its stream);</li>
 * <li>{@code springAi}: that, then Spring AI 2.0.1's chunk to {@code ChatResponse} steps
 * ({@link SpringAiChunkMapping}).</li>
 * </ul>
 *
 * {@link DecoderRatios} runs them in one JMH run with the GC profiler and prints the ratios.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ChunkDecodeBenchmark {

	@Param("1000")
	public int chunks;

	SseEvent[] events;
	SpringAiChunkMapping springAi;

	@Setup
	public void setup() {
		byte[] stream = SseDecodeBenchmark.openAiStream(chunks).getBytes(StandardCharsets.UTF_8);
		List<SseEvent> decoded = SseDecoder.defaults().decode(Flux.just(ByteBuffer.wrap(stream))).collectList().block();
		events = Objects.requireNonNull(decoded).toArray(SseEvent[]::new);
		springAi = new SpringAiChunkMapping();
		checkAllReadTheSameAnswer();
	}

	@Benchmark
	public void streaming(Blackhole bh) {
		Flux.fromArray(events).transform(OpenAiChunkCodec::decode).subscribe(new SseDecodeBenchmark.Sink(bh));
	}

	@Benchmark
	public void tree(Blackhole bh) {
		Flux.fromArray(events).handle(new TreeChunkDecoder()).subscribe(new SseDecodeBenchmark.Sink(bh));
	}

	@Benchmark
	public void openAiSdk(Blackhole bh) {
		Flux.fromArray(events).takeWhile(e -> !"[DONE]".equals(e.data()))
			.map(e -> SpringAiChunkMapping.sdkChunk(e.data()))
			.subscribe(new SseDecodeBenchmark.Sink(bh));
	}

	@Benchmark
	public void springAi(Blackhole bh) {
		Flux.fromArray(events).takeWhile(e -> !"[DONE]".equals(e.data()))
			.map(e -> springAi.response(e.data()))
			.subscribe(new SseDecodeBenchmark.Sink(bh));
	}

	private void checkAllReadTheSameAnswer() {
		List<ChatChunk> streamed = Flux.fromArray(events).transform(OpenAiChunkCodec::decode).collectList().block();
		List<ChatChunk> tree = Flux.fromArray(events).handle(new TreeChunkDecoder()).collectList().block();
		if (streamed == null || !streamed.equals(tree)) {
			throw new IllegalStateException("the streaming and the tree decoder disagree");
		}
		StringBuilder ours = new StringBuilder();
		StringBuilder sdk = new StringBuilder();
		StringBuilder spring = new StringBuilder();
		streamed.forEach(c -> ours.append(c.text()));
		for (SseEvent e : events) {
			if (!"[DONE]".equals(e.data())) {
				SpringAiChunkMapping.sdkChunk(e.data()).choices()
					.forEach(c -> c.delta().content().ifPresent(sdk::append));
				ChatResponse response = springAi.response(e.data());
				if (response.getResult() != null && response.getResult().getOutput().getText() != null) {
					spring.append(response.getResult().getOutput().getText());
				}
			}
		}
		if (!ours.toString().equals(sdk.toString()) || !ours.toString().equals(spring.toString())) {
			throw new IllegalStateException("answers differ: ours " + ours.length() + " chars, SDK " + sdk.length()
					+ ", Spring AI " + spring.length());
		}
	}
}
