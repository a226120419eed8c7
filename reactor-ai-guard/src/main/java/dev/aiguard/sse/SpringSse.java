package dev.aiguard.sse;

import org.reactivestreams.Publisher;
import org.springframework.core.io.buffer.DataBuffer;
import org.springframework.core.io.buffer.DataBufferUtils;
import reactor.core.publisher.Flux;

/** Spring {@link DataBuffer} input; only loaded when {@link SseDecoder#decodeDataBuffers} is called. */
final class SpringSse implements ChunkReader<DataBuffer> {

	private static final SpringSse INSTANCE = new SpringSse();

	private SpringSse() {
	}

	static Flux<SseEvent> decode(SseDecoder decoder, Publisher<? extends DataBuffer> chunks) {
		return new FluxSseDecode<DataBuffer>(Flux.from(chunks), INSTANCE, decoder.maxLineBytes(),
				decoder.maxEventBytes());
	}

	@Override
	public void read(DataBuffer chunk, SseParser parser) {
		// views, not copies: heap buffers are scanned in place
		try (DataBuffer.ByteBufferIterator views = chunk.readableByteBuffers()) {
			while (views.hasNext()) {
				parser.feed(views.next());
			}
		}
	}

	@Override
	public void release(DataBuffer chunk) {
		DataBufferUtils.release(chunk);
	}
}
