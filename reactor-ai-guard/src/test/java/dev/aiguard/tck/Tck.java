package dev.aiguard.tck;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.stream.LongStream;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.stall.StallSpec;
import org.reactivestreams.tck.TestEnvironment;
import reactor.core.publisher.Flux;

/**
 * What the verifications of this package share: TCK timings sized for a small, busy machine, and
 * the streams whose length the TCK dictates ({@code createPublisher(n)} must give exactly
 * {@code n} elements, then complete).
 */
final class Tck {

	/** How long the TCK waits for a signal it expects. */
	static final long TIMEOUT_MILLIS = 1000L;
	/** How long it watches for a signal that must not come: only makes a check weaker when short. */
	static final long NO_SIGNAL_MILLIS = 50L;
	/** How often it polls while waiting for an error. */
	static final long POLL_MILLIS = 20L;
	/** How long spec 3.13 waits after a cancel before it looks for the dropped subscriber (generous: a loaded 2-core machine collects late). */
	static final long GC_MILLIS = 1000L;

	/** Deadlines a healthy test stream never reaches, so the watch's timer is armed but silent. */
	static final StallSpec GENEROUS_DEADLINES = StallSpec.defaults()
			.firstTokenTimeout(Duration.ofSeconds(30))
			.idleTimeout(Duration.ofSeconds(30))
			.maxDuration(Duration.ofMinutes(5));

	static final ChatRequest REQUEST = ChatRequest.of("tck-model", List.of(ChatMessage.user("Count for me.")));

	private Tck() {
	}

	/** A breaker that trips only when all of at least 100 calls fail: no verification here comes near. */
	static CircuitBreaker patientBreaker(String name) {
		return CircuitBreaker.builder(name)
				.config(BreakerConfig.custom().countWindow(100).minimumCalls(100).failureRateThreshold(1.0).build())
				.build();
	}

	static TestEnvironment environment() {
		return new TestEnvironment(TIMEOUT_MILLIS, NO_SIGNAL_MILLIS, POLL_MILLIS);
	}

	/**
	 * An answer of exactly {@code n} chunks, produced lazily: text tokens with a keep-alive now and
	 * then (so the watch sees more than plain content), the last chunk carrying finish reason
	 * {@code stop} so a guard that requires a terminal marker accepts the answer as complete.
	 */
	static Flux<ChatChunk> answer(long n) {
		if (n <= Integer.MAX_VALUE) {
			return Flux.range(0, (int) n).map(i -> chunk(i, n));
		}
		return Flux.fromStream(() -> LongStream.range(0, n).mapToObj(i -> chunk(i, n)));
	}

	static ChatChunk chunk(long index, long count) {
		if (index == count - 1) {
			return new ChatChunk("t" + index, null, "stop", null, null, false, false);
		}
		if (index % 5 == 3) {
			return ChatChunk.keepAlive();
		}
		return ChatChunk.token("t" + index + " ");
	}

	/** The SSE text of event {@code index}: line endings alternate between LF and CRLF. */
	static String sseEvent(long index) {
		String eol = index % 2 == 0 ? "\n" : "\r\n";
		return "id: " + index + eol + "data: {\"n\":" + index + "}" + eol + eol;
	}

	/**
	 * The bytes of exactly {@code n} SSE events, three events to a piece of text, each piece cut in
	 * two chunks at an arbitrary byte: chunk boundaries fall inside lines and line endings, and a
	 * chunk may hold several events or none complete.
	 */
	static Flux<ByteBuffer> sseBytes(long n) {
		Flux<Long> indexes = n <= Integer.MAX_VALUE ? Flux.range(0, (int) n).map(Integer::longValue)
				: Flux.fromStream(() -> LongStream.range(0, n).boxed());
		return indexes.buffer(3).concatMapIterable(group -> {
			StringBuilder text = new StringBuilder();
			group.forEach(i -> text.append(sseEvent(i)));
			byte[] bytes = text.toString().getBytes(StandardCharsets.UTF_8);
			int cut = (int) (group.get(0) % (bytes.length - 1)) + 1;
			return List.of(ByteBuffer.wrap(bytes, 0, cut).slice(), ByteBuffer.wrap(bytes, cut, bytes.length - cut).slice());
		});
	}
}
