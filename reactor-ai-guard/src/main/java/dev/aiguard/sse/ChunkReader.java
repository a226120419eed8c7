package dev.aiguard.sse;

/**
 * How the decoder reads one kind of byte chunk and gives it back. Implementations for optional
 * libraries (Netty, Spring) live in their own classes so they load only when used.
 *
 * @param <T> the chunk type
 */
interface ChunkReader<T> {

	/** Feeds the chunk's readable bytes to the parser; must not keep a reference to the chunk. */
	void read(T chunk, SseParser parser);

	/** Called exactly once per chunk the decoder received, after {@link #read} or instead of it. */
	void release(T chunk);

	/** Plain {@link java.nio.ByteBuffer}s: nothing to release. */
	ChunkReader<java.nio.ByteBuffer> BYTE_BUFFERS = new ChunkReader<>() {
		@Override
		public void read(java.nio.ByteBuffer chunk, SseParser parser) {
			parser.feed(chunk);
		}

		@Override
		public void release(java.nio.ByteBuffer chunk) {
		}
	};
}
