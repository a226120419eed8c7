package dev.aiguard.retry;

import dev.aiguard.chat.ChatChunk;
import org.reactivestreams.Publisher;
import dev.aiguard.retry.splice.OverlapSplicer;

/**
 * What continuing a cut-short answer needs from a chunk type: a transcript of what the user has
 * seen, and a way to remove from a continuation the text it repeats. {@link MidStreamPolicy#continueWith}
 * carries the support for the library's {@link ChatChunk}; implement this interface to continue
 * answers of another chunk type.
 *
 * <pre>{@code
 * MidStreamPolicy<MyChunk> mid = MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 2,
 *     new MyChunkContinuation());
 * }</pre>
 *
 * @param <T> the chunk type
 */
public interface ContinuationSupport<T> {

	/** @return the chunk type this support reads; chunks of another type make an answer not continuable */
	Class<T> chunkType();

	/** @return a new, empty transcript for one request */
	Transcript<T> transcript();

	/**
	 * @param continuation the answer to the continuation request
	 * @param delivered what the user saw before it
	 * @return the continuation without the text it repeats from the end of {@code delivered}
	 */
	Publisher<T> splice(Publisher<? extends T> continuation, Transcript<T> delivered);

	/** @return the support for {@link ChatChunk}: text deltas, spliced with {@link OverlapSplicer} */
	static ContinuationSupport<ChatChunk> chatChunks() {
		return ChatContinuation.INSTANCE;
	}

	/**
	 * What one request delivered, kept for its continuation. Written from the delivering thread
	 * only, read once the attempt has ended.
	 *
	 * @param <T> the chunk type
	 */
	interface Transcript<T> {

		/** Notes a chunk that reached the subscriber. */
		void record(T chunk);

		/** @return the text delivered so far */
		String text();

		/**
		 * @return whether the answer can be continued from this transcript: false once it holds
		 *         something a text continuation cannot rebuild (a tool call, a chunk of another type)
		 */
		boolean continuable();
	}
}
