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
 * last {@link #ngram()} chunks, one lookup and one store in a fixed table of where each n-gram was
 * last seen, and one store in a fixed ring of chunk hashes. A run is followed by its period: while
 * each chunk equals the one a period back (one more ring read), the run grows; when it does not,
 * the period becomes the distance to the n-gram's last occurrence. The arrays are allocated once
 * per request.
 */
public final class RepetitionDetector implements StreamingValidator {

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

	/**
	 * The state of one request: two fixed arrays and a few counters. Per chunk it writes one ring
	 * slot, one table slot and two fields (the position and the rolling hash); the run's fields are
	 * written only while a repetition is followed. The rolling hash rotates and XORs rather than
	 * multiplies, so the one value carried from chunk to chunk takes two cycles to update.
	 */
	static final class LoopWatch implements Watch {

		private final RepetitionDetector spec;
		private final int ngram;
		private final int maxPeriod;
		/**
		 * The chunk hash at each of the last positions (a power of two, more than maxPeriod and at
		 * least ngram): the oldest chunk of the n-gram leaves the rolling hash from here, and a run
		 * compares each chunk with the one a period back here.
		 */
		private final int[] chunks;
		private final int chunkMask;
		/** Open table, one entry per slot: an n-gram hash (high half) and the position it was last seen at (low half). */
		private final long[] seen;
		private final int slotMask;

		/** Chunks seen by this watch, across attempts: positions never repeat, so the table needs no clearing. */
		private int position;
		/** The position of the current attempt's first chunk. */
		private int start;
		/** The rolling hash of the last ngram chunks: chunk k back rotated left by k. */
		private int gram;
		/** The unit of the run followed, in chunks; 0 when none. */
		private int period;
		/** Consecutive positions whose n-gram equals the one a period back. */
		private int run;
		/** The run at which the repetition is long enough to cut. */
		private int cutRun;

		LoopWatch(RepetitionDetector spec) {
			this.spec = spec;
			this.ngram = spec.ngram;
			this.maxPeriod = spec.maxPeriod;
			int ring = Integer.highestOneBit(Math.max(spec.maxPeriod, spec.ngram - 1)) << 1;
			this.chunks = new int[ring];
			this.chunkMask = ring - 1;
			int slots = Math.max(64, ring << 1);
			this.seen = new long[slots];
			this.slotMask = slots - 1;
			// key 0 seen at the lowest position: never within maxPeriod of a real one
			java.util.Arrays.fill(seen, Integer.MIN_VALUE & 0xFFFF_FFFFL);
		}

		@Override
		public void reset() {
			// entries of the previous attempt lie more than maxPeriod back and can never match again
			position += maxPeriod + 1;
			start = position;
			// a zero leaves the rolling hash unchanged: the first chunks of the attempt have nothing to drop
			java.util.Arrays.fill(chunks, 0);
			gram = 0;
			period = 0;
			run = 0;
		}

		@Override
		@Nullable
		public InvalidOutputException onText(String text) {
			// kept small enough for the JIT to inline into the delivery loop: what happens only while a
			// repetition is followed or found is in follow()
			int h = text.hashCode() * 0x9E3779B1;
			int pos = position;
			position = pos + 1;
			int[] ring = chunks;
			int m = chunkMask;
			int n = ngram;
			// read before the write: with a ring of exactly ngram slots they are the same slot
			int dropped = ring[(pos - n) & m];
			ring[pos & m] = h;
			int g = Integer.rotateLeft(gram, 1) ^ h ^ Integer.rotateLeft(dropped, n);
			gram = g;
			if (pos - start < n - 1) {
				return null; // the attempt's first n-gram is not complete yet
			}
			long[] table = seen;
			int slot = (g ^ (g >>> 16)) & slotMask;
			long entry = table[slot];
			table[slot] = ((long) g << 32) | (pos & 0xFFFF_FFFFL);
			if (period != 0 || (int) (entry >>> 32) == g) {
				return follow(h, g, pos, entry);
			}
			return null;
		}

		/** A run is followed, or this n-gram was seen before: the run grows, starts, or ends. */
		@Nullable
		private InvalidOutputException follow(int h, int g, int pos, long entry) {
			int p = period;
			// within a run the n-gram a period back matched up to the previous chunk: the new chunk decides
			if (p > 0 && chunks[(pos - p) & chunkMask] == h) {
				int r = run + 1;
				run = r;
				return r >= cutRun ? cut(p, r) : null;
			}
			int d = (int) (entry >>> 32) == g ? pos - (int) entry : 0;
			if (d > 0 && d <= maxPeriod && pos - start + 1 - d >= ngram) {
				period = d;
				run = 1;
				// the last run + ngram - 1 + period chunks repeat a unit of `period` chunks
				cutRun = Math.max(spec.minSpan, d * spec.minRepeats) - (ngram - 1 + d);
				return 1 >= cutRun ? cut(d, 1) : null;
			}
			period = 0;
			run = 0;
			return null;
		}

		private InvalidOutputException cut(int p, int r) {
			return new DegenerateOutputException(spec.name, p, r + ngram - 1 + p);
		}
	}
}
