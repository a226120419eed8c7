package dev.aiguard.sse;

import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCountUtil;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/** Netty {@link ByteBuf} input; only loaded when {@link SseDecoder#decodeByteBufs} is called. */
final class NettySse implements ChunkReader<ByteBuf> {

	private static final NettySse INSTANCE = new NettySse();

	private NettySse() {
	}

	static Flux<SseEvent> decode(SseDecoder decoder, Publisher<? extends ByteBuf> chunks) {
		return new FluxSseDecode<ByteBuf>(Flux.from(chunks), INSTANCE, decoder.maxLineBytes(), decoder.maxEventBytes());
	}

	@Override
	public void read(ByteBuf chunk, SseParser parser) {
		int n = chunk.readableBytes();
		if (chunk.hasArray()) {
			parser.feed(chunk.array(), chunk.arrayOffset() + chunk.readerIndex(), n);
		}
		else {
			byte[] copy = parser.scratch(n);
			chunk.getBytes(chunk.readerIndex(), copy, 0, n);
			parser.feed(copy, 0, n);
		}
	}

	@Override
	public void release(ByteBuf chunk) {
		ReferenceCountUtil.safeRelease(chunk);
	}
}
