package dev.aiguard.tck;

import java.nio.ByteBuffer;

import dev.aiguard.sse.SseDecoder;
import dev.aiguard.sse.SseEvent;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import reactor.core.publisher.Flux;

/**
 * Verifies {@link SseDecoder#decode} over a synchronous Flux of {@link ByteBuffer}s holding exactly
 * {@code n} events, cut so that chunk boundaries fall inside lines and line endings and one chunk
 * may complete several events ({@link Tck#sseBytes}). The failing publisher's upstream errors at
 * subscription; the malformed-input path (invalid UTF-8) fails too, but only once a chunk was
 * requested, which the TCK's failing-publisher checks never do.
 */
public class SseDecodeTckTest extends PublisherVerification<SseEvent> {

	public SseDecodeTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	@Override
	public Publisher<SseEvent> createPublisher(long elements) {
		return SseDecoder.defaults().decode(Tck.sseBytes(elements));
	}

	@Override
	public Publisher<SseEvent> createFailedPublisher() {
		return SseDecoder.defaults().decode(Flux.error(new IllegalStateException("connection reset")));
	}
}
