package dev.aiguard.fallback.recording;

import java.util.AbstractList;
import java.util.List;
import java.util.Objects;
import java.util.RandomAccess;

import org.jspecify.annotations.Nullable;

/**
 * Collects the chunks of a realtime answer while it streams, so that a complete answer can be
 * stored in the response cache when it ends (the fallback stage stores it). One recorder per
 * request; not thread-safe (it is fed from the stream's serialised signals).
 *
 * <pre>{@code
 * AnswerRecorder<ChatChunk> recorder = new AnswerRecorder<>(cache.maxChunksPerEntry());
 * // per delivered chunk (the guard skips heartbeats):
 * recorder.record(chunk);
 * // at the end of the request, when it is storable:
 * cache.store(key, recorder.chunks());
 * }</pre>
 *
 * <h2>Cost per chunk</h2>
 * {@link #record} is O(1) in the worst case and never copies: chunks go into blocks of 16, 16,
 * 32, 64... slots, so a growing answer allocates a new block now and then but never moves the
 * chunks it already holds. Past the bound, the recorder drops what it holds and ignores the rest
 * of the answer: it would not be stored anyway.
 *
 * @param <T> the chunk type
 */
public final class AnswerRecorder<T> {

	private static final int FIRST_BLOCK = 16;
	private static final int FIRST_BLOCK_SHIFT = 4;
	private static final Object[][] NO_BLOCKS = new Object[0][];

	private final int maxChunks;
	private Object @Nullable [][] blocks;
	private int size;
	private boolean overflowed;
	private boolean discarded;

	/**
	 * @param maxChunks the most chunks an answer may have to be storable
	 * @throws IllegalArgumentException when not positive
	 */
	public AnswerRecorder(int maxChunks) {
		if (maxChunks <= 0) {
			throw new IllegalArgumentException("maxChunks must be > 0, was " + maxChunks);
		}
		this.maxChunks = maxChunks;
	}

	/**
	 * Adds the next chunk of the answer; ignored once the answer overflowed or was discarded.
	 *
	 * @param chunk a chunk worth replaying (content, finish reason, terminal marker)
	 */
	public void record(T chunk) {
		if (overflowed || discarded) {
			return;
		}
		int i = size;
		if (i == maxChunks) {
			overflowed = true;
			blocks = null;
			size = 0;
			return;
		}
		Object[][] b = blocks;
		if (b == null) {
			b = new Object[blockCount(maxChunks)][];
			blocks = b;
		}
		int block = blockOf(i);
		Object[] slots = b[block];
		if (slots == null) {
			slots = new Object[block == 0 ? FIRST_BLOCK : FIRST_BLOCK << (block - 1)];
			b[block] = slots;
		}
		slots[offsetOf(i)] = chunk;
		size = i + 1;
	}

	/** Marks the answer as not storable (for example: spliced from two attempts) and frees it. */
	public void discard() {
		discarded = true;
		blocks = null;
		size = 0;
	}

	/** @return the chunks recorded, 0 once overflowed or discarded */
	public int size() {
		return size;
	}

	/** @return whether the answer grew past the bound */
	public boolean overflowed() {
		return overflowed;
	}

	/** @return whether there is an answer within bound to store */
	public boolean isStorable() {
		return !overflowed && !discarded && size > 0;
	}

	/**
	 * @return a read-only view of the chunks recorded so far, in order (empty once overflowed or
	 *         discarded); chunks are not copied, and chunks recorded later do not appear in it
	 */
	public List<T> chunks() {
		return new View();
	}

	// ---- block arithmetic: block 0 holds [0,16), block k >= 1 holds [16 * 2^(k-1), 16 * 2^k) ----

	static int blockOf(int index) {
		if (index < FIRST_BLOCK) {
			return 0;
		}
		return (31 - Integer.numberOfLeadingZeros(index)) - (FIRST_BLOCK_SHIFT - 1);
	}

	static int offsetOf(int index) {
		return index < FIRST_BLOCK ? index : index - Integer.highestOneBit(index);
	}

	static int blockCount(int maxChunks) {
		return blockOf(maxChunks - 1) + 1;
	}

	/** Read-only, random-access view of the blocks. */
	private final class View extends AbstractList<T> implements RandomAccess {

		// no blocks only while the view is empty: get() refuses every index before reading them
		private final Object[][] viewBlocks = blocks != null ? blocks : NO_BLOCKS;
		private final int viewSize = size;

		@Override
		@SuppressWarnings("unchecked")
		public T get(int index) {
			Objects.checkIndex(index, viewSize);
			return (T) viewBlocks[blockOf(index)][offsetOf(index)];
		}

		@Override
		public int size() {
			return viewSize;
		}
	}
}
