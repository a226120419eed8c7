package dev.aiguard.tck;

import dev.aiguard.sse.SseDecoder;
import dev.aiguard.sse.SseEvent;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DefaultDataBufferFactory;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * Verifies {@link SseDecoder#decodeDataBuffers} (the Spring WebClient input) over an asynchronous
 * upstream: Spring {@link DataBuffer}s emitted on {@code Schedulers.parallel()}, cut as in
 * {@link SseDecodeTckTest}.
 */
public class SseDecodeDataBuffersAsyncTckTest extends PublisherVerification<SseEvent> {

	public SseDecodeDataBuffersAsyncTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	@Override
	public Publisher<SseEvent> createPublisher(long elements) {
		Flux<DataBuffer> buffers = Tck.sseBytes(elements).map(DefaultDataBufferFactory.sharedInstance::wrap);
		return SseDecoder.defaults().decodeDataBuffers(buffers.publishOn(Schedulers.parallel()));
	}

	@Override
	public Publisher<SseEvent> createFailedPublisher() {
		return SseDecoder.defaults().decodeDataBuffers(
				Flux.<DataBuffer>error(new IllegalStateException("connection reset")).publishOn(Schedulers.parallel()));
	}
}
