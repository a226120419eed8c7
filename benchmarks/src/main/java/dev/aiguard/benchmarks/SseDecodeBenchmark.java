package dev.aiguard.benchmarks;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

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
import org.reactivestreams.Subscription;
import org.springframework.core.ResolvableType;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.MediaType;
import org.springframework.http.ReactiveHttpInputMessage;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.http.codec.ServerSentEventHttpMessageReader;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;

/**
 * Decoding throughput of a realistic OpenAI chat-completions stream (a role chunk, content
 * chunks, a finish chunk, a usage chunk and {@code [DONE]}; {@code chunks} events in all), cut in
 * {@code sliceBytes} network chunks: our {@link SseDecoder} against Spring WebFlux's
 * {@link ServerSentEventHttpMessageReader} decoding {@code ServerSentEvent<String>}, on the same
 * bytes in the same run. Each operation decodes the whole stream; the chunk wrappers are made
 * fresh in every operation for both sides.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class SseDecodeBenchmark {

	private static final ResolvableType SSE_OF_STRING = ResolvableType.forClassWithGenerics(ServerSentEvent.class,
			String.class);

	@Param("1000")
	public int chunks;

	@Param("8192")
	public int sliceBytes;

	byte[] stream;
	int[] offsets;
	SseDecoder decoder;
	ServerSentEventHttpMessageReader springReader;
	HttpHeaders headers;

	@Setup
	public void setup() {
		stream = openAiStream(chunks).getBytes(StandardCharsets.UTF_8);
		int slices = (stream.length + sliceBytes - 1) / sliceBytes;
		offsets = new int[slices + 1];
		for (int i = 0; i < slices; i++) {
			offsets[i] = i * sliceBytes;
		}
		offsets[slices] = stream.length;
		decoder = SseDecoder.defaults();
		springReader = new ServerSentEventHttpMessageReader();
		headers = new HttpHeaders();
		headers.setContentType(MediaType.TEXT_EVENT_STREAM);
		checkBothDecodeTheSameEvents();
	}

	/** Builds the stream the way OpenAI sends it, with a sprinkling of non-ASCII tokens. */
	static String openAiStream(int chunks) {
		String[] words = { "The", " quick", " brown", " fox", " jumps", " over", " the", " lazy", " dog", ".", " Caf\u00e9",
				" na\u00efve", " \u2014", " \u4f60\u597d", " tokens", " stream", "ing", " is", " fun", "\\n" };
		String prefix = "data: {\"id\":\"chatcmpl-AbCdEf0123456789\",\"object\":\"chat.completion.chunk\",\"created\":1718000000,"
				+ "\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_0123456789\",\"choices\":[{\"index\":0,\"delta\":";
		StringBuilder out = new StringBuilder(chunks * 240);
		out.append(prefix).append("{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
		for (int i = 0; i < chunks - 4; i++) {
			out.append(prefix).append("{\"content\":\"").append(words[i % words.length])
				.append("\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n");
		}
		out.append(prefix).append("{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n");
		out.append("data: {\"id\":\"chatcmpl-AbCdEf0123456789\",\"object\":\"chat.completion.chunk\",\"created\":1718000000,"
				+ "\"model\":\"gpt-4o-mini-2024-07-18\",\"system_fingerprint\":\"fp_0123456789\",\"choices\":[],"
				+ "\"usage\":{\"prompt_tokens\":25,\"completion_tokens\":" + (chunks - 4) + ",\"total_tokens\":" + (chunks + 21) + "}}\n\n");
		out.append("data: [DONE]\n\n");
		return out.toString();
	}

	Flux<ByteBuffer> byteBuffers() {
		return Flux.range(0, offsets.length - 1)
			.map(i -> ByteBuffer.wrap(stream, offsets[i], offsets[i + 1] - offsets[i]));
	}

	Flux<DataBuffer> dataBuffers() {
		return Flux.range(0, offsets.length - 1)
			.map(i -> DefaultDataBufferFactory.sharedInstance
				.wrap(ByteBuffer.wrap(stream, offsets[i], offsets[i + 1] - offsets[i]).slice()));
	}

	Flux<Object> springEvents() {
		Flux<DataBuffer> body = dataBuffers();
		ReactiveHttpInputMessage message = new ReactiveHttpInputMessage() {
			@Override
			public Flux<DataBuffer> getBody() {
				return body;
			}

			@Override
			public HttpHeaders getHeaders() {
				return headers;
			}
		};
		return springReader.read(SSE_OF_STRING, message, Map.of());
	}

	@Benchmark
	public void aiguardByteBuffers(Blackhole bh) {
		decoder.decode(byteBuffers()).subscribe(new Sink(bh));
	}

	@Benchmark
	public void aiguardDataBuffers(Blackhole bh) {
		decoder.decodeDataBuffers(dataBuffers()).subscribe(new Sink(bh));
	}

	@Benchmark
	public void springReader(Blackhole bh) {
		springEvents().subscribe(new Sink(bh));
	}

	private void checkBothDecodeTheSameEvents() {
		List<String> ours = decoder.decode(byteBuffers()).map(SseEvent::data).collectList().block();
		List<String> oursFromDataBuffers = decoder.decodeDataBuffers(dataBuffers()).map(SseEvent::data).collectList()
			.block();
		List<String> spring = springEvents().map(e -> (String) ((ServerSentEvent<?>) e).data()).collectList().block();
		if (ours == null || ours.size() != chunks || !ours.equals(spring) || !ours.equals(oursFromDataBuffers)) {
			throw new IllegalStateException("decoders disagree: ours " + (ours == null ? 0 : ours.size())
					+ " events, Spring " + (spring == null ? 0 : spring.size()));
		}
	}

	/** Consumes each event's data, requesting everything. */
	static final class Sink implements CoreSubscriber<Object> {

		private final Blackhole bh;

		Sink(Blackhole bh) {
			this.bh = bh;
		}

		@Override
		public void onSubscribe(Subscription s) {
			s.request(Long.MAX_VALUE);
		}

		@Override
		public void onNext(Object event) {
			bh.consume(event);
		}

		@Override
		public void onError(Throwable t) {
			throw new IllegalStateException(t);
		}

		@Override
		public void onComplete() {
		}
	}
}
