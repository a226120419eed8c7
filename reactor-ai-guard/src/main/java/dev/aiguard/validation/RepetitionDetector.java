package dev.aiguard.validation;

import org.jspecify.annotations.Nullable;

/**
 * Cuts an answer that loops: a model that repeats the same run of chunks until its token limit.
 * The answer is read as a sequence of chunks (a chunk is about a token for the usual providers);
 * the stream is cut when its last chunks repeat a unit of at most {@link #maxPeriod()} chunks at
 * least {@link #minRepeats()} times in a row and span at least {@link #minSpan()} chunks. Immutable;
 * each setter checks its value and returns a copy.
 *
 * <pre>{@code
 * GuardPolicy.builder("chat")
 *     .validateStreaming(RepetitionDetector.defaults().minRepeats(6))
 *     .midStream(MidStreamPolicy.notice("[the answer was cut: it repeated itself]"))
 *     .build();
 * }</pre>
 *
 * <h2>Cost per chunk</h2>
 * O(1) and allocation-free: the chunk's text hash (cached by {@code String}), a rolling hash of the
 * last {@link #ngram()} chunks, one lookup in a fixed table of where each n-gram was last seen, and
 * one comparison against the n-gram one period back in a fixed ring. A run is followed by its
 * period: when the n-gram one period back differs, the period becomes the distance to the
 * n-gram's last occurrence. The arrays are allocated once per request.
 */
public final class RepetitionDetector implements StreamingValidator {

	/** The base of the rolling hash: odd, so multiplying by it loses no bits modulo 2^32. */
	private static final int BASE = 0x01000193;

	private static final RepetitionDetector DEFAULTS = new RepetitionDetector("repetition", 4, 64, 5, 64);

	private final String name;
	private final int ngram;
	private final int maxPeriod;
	private final int minRepeats;
	private final int minSpan;

	private RepetitionDetector(String name, int ngram, int maxPeriod, int minRepeats, int minSpan) {
		this.name = name;
		this.ngram = ngram;
		this.maxPeriod = maxPeriod;
		this.minRepeats = minRepeats;
		this.minSpan = minSpan;
	}

	/**
	 * @return n-grams of 4 chunks, units of up to 64 chunks, cut after 5 repeats spanning at least
	 *         64 chunks (one chunk repeated 64 times, a unit of 8 repeated 8 times, of 20 repeated 5 times)
	 */
	public static RepetitionDetector defaults() {
		return DEFAULTS;
	}

	/** @param detectorName names the detector in errors and meters (default {@code repetition}) */
	public RepetitionDetector name(String detectorName) {
		if (detectorName == null || detectorName.isBlank()) {
			throw new IllegalArgumentException("name must not be blank, was '" + detectorName + "'");
		}
		return new RepetitionDetector(detectorName, ngram, maxPeriod, minRepeats, minSpan);
	}

	/** @param chunks how many chunks an n-gram has, 1 to 32 (default 4); longer ones are rarer in prose */
	public RepetitionDetector ngram(int chunks) {
		if (chunks < 1 || chunks > 32) {
			throw new IllegalArgumentException("ngram must be between 1 and 32, was " + chunks);
		}
		return new RepetitionDetector(name, chunks, maxPeriod, minRepeats, minSpan);
	}

	/** @param chunks the longest repeated unit looked for, 1 to 4096 (default 64) */
	public RepetitionDetector maxPeriod(int chunks) {
		if (chunks < 1 || chunks > 4096) {
			throw new IllegalArgumentException("maxPeriod must be between 1 and 4096, was " + chunks);
		}
		return new RepetitionDetector(name, ngram, chunks, minRepeats, minSpan);
	}

	/** @param repeats how many times in a row the unit must occur, at least 2 (default 5) */
	public RepetitionDetector minRepeats(int repeats) {
		if (repeats < 2) {
			throw new IllegalArgumentException("minRepeats must be >= 2, was " + repeats);
		}
		return new RepetitionDetector(name, ngram, maxPeriod, repeats, minSpan);
	}

	/** @param chunks how many chunks the repetition must span at least, at least 2 (default 64) */
	public RepetitionDetector minSpan(int chunks) {
		if (chunks < 2) {
			throw new IllegalArgumentException("minSpan must be >= 2, was " + chunks);
		}
		return new RepetitionDetector(name, ngram, maxPeriod, minRepeats, chunks);
	}

	@Override
	public String name() {
		return name;
	}

	public int ngram() {
		return ngram;
	}

	public int maxPeriod() {
		return maxPeriod;
	}

	public int minRepeats() {
		return minRepeats;
	}

	public int minSpan() {
		return minSpan;
	}

	@Override
	public Watch newWatch() {
		return new LoopWatch(this);
	}

	@Override
	public String toString() {
		return "RepetitionDetector{name=" + name + ", ngram=" + ngram + ", maxPeriod=" + maxPeriod + ", minRepeats="
				+ minRepeats + ", minSpan=" + minSpan + '}';
	}

	/** The state of one request: three fixed arrays and a few counters. */
	static final class LoopWatch implements Watch {

		private final RepetitionDetector spec;
		/** The last {@code ngram} chunk hashes, to take the oldest out of the rolling hash. */
		private final int[] chunks;
		/** The n-gram hash at each of the last positions (a power of two above maxPeriod). */
		private final int[] grams;
		private final int gramMask;
		/** Open table, one entry per slot: an n-gram hash and the position it was last seen at. */
		private final int[] keys;
		private final int[] seenAt;
		private final int slotMask;
		/** BASE to the power ngram: the weight the oldest chunk would have after this chunk's shift. */
		private final int oldestWeight;

		/** Chunks seen by this watch, across attempts: positions never repeat, so a reset needs no clearing. */
		private int position;
		/** Chunks of the current attempt. */
		private int count;
		/** Where the oldest chunk hash of the n-gram sits in {@link #chunks}. */
		private int oldest;
		private int hash;
		private int period;
		/** Consecutive positions whose n-gram equals the one a period back. */
		private int run;

		LoopWatch(RepetitionDetector spec) {
			this.spec = spec;
			this.chunks = new int[spec.ngram];
			int ring = Integer.highestOneBit(spec.maxPeriod) << 1;
			this.grams = new int[ring];
			this.gramMask = ring - 1;
			int slots = Math.max(64, ring << 1);
			this.keys = new int[slots];
			this.seenAt = new int[slots];
			this.slotMask = slots - 1;
			int w = 1;
			for (int i = 0; i < spec.ngram; i++) {
				w *= BASE;
			}
			this.oldestWeight = w;
			java.util.Arrays.fill(seenAt, Integer.MIN_VALUE);
		}

		@Override
		public void reset() {
			// entries of the previous attempt lie more than maxPeriod back and can never match again
			position += spec.maxPeriod + 1;
			count = 0;
			oldest = 0;
			hash = 0;
			period = 0;
			run = 0;
		}

		@Override
		@Nullable
		public InvalidOutputException onText(String text) {
			int h = text.hashCode() * 0x9E3779B1;
			int n = spec.ngram;
			int at = oldest;
			// the ring of chunk hashes is walked by an index, not a modulo: a division costs more than the rest
			oldest = at + 1 == n ? 0 : at + 1;
			int gram = hash * BASE + h;
			if (count >= n) {
				gram -= chunks[at] * oldestWeight;
			}
			chunks[at] = h;
			hash = gram;
			int pos = position++;
			if (++count < n) {
				return null;
			}
			grams[pos & gramMask] = gram;
			int slot = (gram ^ (gram >>> 16)) & slotMask;
			int p = period;
			if (p > 0 && grams[(pos - p) & gramMask] == gram && count - p >= n) {
				run++;
			}
			else {
				int d = keys[slot] == gram ? pos - seenAt[slot] : 0;
				if (d > 0 && d <= spec.maxPeriod && count - d >= n) {
					period = d;
					run = 1;
				}
				else {
					period = 0;
					run = 0;
				}
			}
			keys[slot] = gram;
			seenAt[slot] = pos;
			if (run > 0) {
				// the last run + ngram - 1 + period chunks repeat a unit of `period` chunks
				int span = run + n - 1 + period;
				if (span >= spec.minSpan && span >= period * spec.minRepeats) {
					return new DegenerateOutputException(spec.name, period, span);
				}
			}
			return null;
		}
	}
}
