package dev.aiguard.sse;

import java.nio.ByteBuffer;
import java.util.Objects;

import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * Decodes a stream of byte chunks into {@link SseEvent}s following the WHATWG server-sent-events
 * rules: {@code \r\n}, {@code \n} and {@code \r} line endings, {@code data} lines joined with
 * {@code \n}, one leading space after the colon removed, a field without colon taken as a field
 * with an empty value, unknown fields ignored, a leading UTF-8 BOM skipped, and an event cut off
 * by the end of the stream dropped. Comment lines are delivered too ({@link SseEvent#isComment()})
 * so keep-alives can be seen as heartbeats.
 *
 * <pre>{@code
 * Flux<SseEvent> events = SseDecoder.defaults().decode(byteBuffers);
 *
 * SseDecoder strict = SseDecoder.builder().maxLineBytes(256 * 1024).maxEventBytes(512 * 1024).build();
 * Flux<SseEvent> fromNetty = strict.decodeByteBufs(httpResponse.receive().retain());
 * Flux<SseEvent> fromSpring = strict.decodeDataBuffers(webClientResponse.bodyToFlux(DataBuffer.class));
 * }</pre>
 *
 * <p>Chunk boundaries may fall anywhere, including inside a {@code \r\n} pair or a multi-byte
 * character. Memory is bounded: a line longer than {@link Builder#maxLineBytes} or an event
 * whose data is larger than {@link Builder#maxEventBytes} (both 1 MiB by default) fails the stream
 * with {@link SseFormatException}, and so does invalid UTF-8. The returned {@code Flux} honours
 * backpressure (it asks upstream for one chunk at a time, only when it has demand and nothing
 * buffered) and propagates cancellation upstream.
 *
 * <p>Instances are immutable and can be shared.
 */
public final class SseDecoder {

	/** Default for both limits: 1 MiB. */
	public static final int DEFAULT_LIMIT_BYTES = 1024 * 1024;

	private static final SseDecoder DEFAULTS = new SseDecoder(DEFAULT_LIMIT_BYTES, DEFAULT_LIMIT_BYTES);

	private final int maxLineBytes;
	private final int maxEventBytes;

	private SseDecoder(int maxLineBytes, int maxEventBytes) {
		this.maxLineBytes = maxLineBytes;
		this.maxEventBytes = maxEventBytes;
	}

	/** @return a decoder with 1 MiB line and event limits. */
	public static SseDecoder defaults() {
		return DEFAULTS;
	}

	/** @return a builder starting from the defaults. */
	public static Builder builder() {
		return new Builder(DEFAULT_LIMIT_BYTES, DEFAULT_LIMIT_BYTES);
	}

	/**
	 * Decodes {@link ByteBuffer} chunks. The buffers' positions are left untouched and no
	 * reference to a buffer is kept after it was parsed.
	 */
	public Flux<SseEvent> decode(Publisher<ByteBuffer> chunks) {
		Objects.requireNonNull(chunks, "chunks");
		return new FluxSseDecode<ByteBuffer>(Flux.from(chunks), ChunkReader.BYTE_BUFFERS, maxLineBytes, maxEventBytes);
	}

	/**
	 * Decodes Netty {@code ByteBuf} chunks and releases each one, whatever happens (the decoder
	 * takes ownership). Reactor Netty releases received buffers itself after {@code onNext}, so pass
	 * {@code connection.inbound().receive().retain()}. Needs Netty on the class path; the rest of
	 * this class does not.
	 *
	 * @param chunks a {@code Publisher<? extends io.netty.buffer.ByteBuf>}
	 */
	public Flux<SseEvent> decodeByteBufs(Publisher<? extends io.netty.buffer.ByteBuf> chunks) {
		Objects.requireNonNull(chunks, "chunks");
		return NettySse.decode(this, chunks);
	}

	/**
	 * Decodes Spring {@code DataBuffer} chunks and releases each one, whatever happens (the decoder
	 * takes ownership, as Spring's codecs do). Needs spring-core on the class path; the rest of this
	 * class does not.
	 *
	 * @param chunks a {@code Publisher<? extends org.springframework.core.io.buffer.DataBuffer>}
	 */
	public Flux<SseEvent> decodeDataBuffers(
			Publisher<? extends org.springframework.core.io.buffer.DataBuffer> chunks) {
		Objects.requireNonNull(chunks, "chunks");
		return SpringSse.decode(this, chunks);
	}

	/** @return the longest line accepted, in bytes, line ending excluded */
	public int maxLineBytes() {
		return maxLineBytes;
	}

	/** @return the largest event data accepted, in bytes (the {@code data} lines joined) */
	public int maxEventBytes() {
		return maxEventBytes;
	}

	@Override
	public String toString() {
		return "SseDecoder{maxLineBytes=" + maxLineBytes + ", maxEventBytes=" + maxEventBytes + '}';
	}

	/**
	 * Configures an {@link SseDecoder}. Each setter validates its value.
	 *
	 * <pre>{@code
	 * SseDecoder decoder = SseDecoder.builder().maxLineBytes(64 * 1024).build();
	 * }</pre>
	 */
	public static final class Builder {

		private int maxLineBytes;
		private int maxEventBytes;

		private Builder(int maxLineBytes, int maxEventBytes) {
			this.maxLineBytes = maxLineBytes;
			this.maxEventBytes = maxEventBytes;
		}

		/**
		 * @param bytes the longest line accepted, line ending excluded (default 1 MiB)
		 * @throws IllegalArgumentException when not positive
		 */
		public Builder maxLineBytes(int bytes) {
			this.maxLineBytes = positive("maxLineBytes", bytes);
			return this;
		}

		/**
		 * @param bytes the largest data of one event, its {@code data} lines joined (default 1 MiB)
		 * @throws IllegalArgumentException when not positive
		 */
		public Builder maxEventBytes(int bytes) {
			this.maxEventBytes = positive("maxEventBytes", bytes);
			return this;
		}

		public SseDecoder build() {
			return new SseDecoder(maxLineBytes, maxEventBytes);
		}

		private static int positive(String field, int value) {
			if (value <= 0) {
				throw new IllegalArgumentException(field + " must be > 0, was " + value);
			}
			return value;
		}
	}
}
