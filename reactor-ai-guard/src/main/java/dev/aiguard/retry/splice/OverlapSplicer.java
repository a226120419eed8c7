package dev.aiguard.retry.splice;

import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * Joins a continuation's text onto the text the user already saw, so the two read as one
 * answer. A model asked to continue often starts by repeating the last words it wrote; this
 * removes that repeat: the longest suffix of the delivered text (its last {@code tailSize}
 * characters) that equals a prefix of the continuation, counted only from {@code minOverlap}
 * characters on, is dropped from the continuation.
 *
 * <p>Until it can decide, the splicer holds back at most {@code tailSize} characters of the
 * continuation; it decides as soon as no longer overlap is possible, which for a continuation
 * that does not repeat is usually its first delta. {@link #finish()} releases whatever is held
 * when the continuation ends. The result never depends on how the continuation is cut into
 * deltas.
 *
 * <p>When no overlap is found and the delivered text ends with whitespace, the continuation's
 * leading whitespace is dropped too (an assistant prefill has its trailing whitespace removed, so
 * the model writes it again); {@link #of(CharSequence, int, int, boolean)} turns that off.
 *
 * <pre>{@code
 * OverlapSplicer splicer = OverlapSplicer.of("The cat sat on");   // one per continuation
 * splicer.accept("sat");        // ""        held back: may still be a repeat
 * splicer.accept(" on the");    // " the"    "sat on" repeated the end and is dropped
 * splicer.accept(" mat.");      // " mat."   decided: deltas pass through unchanged
 * splicer.finish();             // ""        nothing left to release
 * }</pre>
 *
 * Not thread-safe: use it from one stream's signals, which Reactive Streams serialises.
 * After the decision each call is O(1) and returns the delta itself, without copying.
 */
public final class OverlapSplicer {

	/** Default number of delivered characters compared. */
	public static final int DEFAULT_TAIL_SIZE = 200;
	/** Default shortest repeat that counts as overlap. */
	public static final int DEFAULT_MIN_OVERLAP = 3;

	private final String tail;
	private final int minOverlap;
	private final boolean collapseSeamWhitespace;

	/** {@code alive[k]}: the tail's last {@code k} characters may still equal the continuation's first {@code k}. */
	private final boolean[] alive;
	private int aliveCount;
	private int longestComplete;

	private @Nullable StringBuilder held;
	private boolean decided;
	private boolean skippingWhitespace;
	private int overlapRemoved = -1;

	private OverlapSplicer(String tail, int minOverlap, boolean collapseSeamWhitespace) {
		this.tail = tail;
		this.minOverlap = minOverlap;
		this.collapseSeamWhitespace = collapseSeamWhitespace;
		int t = tail.length();
		this.alive = new boolean[t + 1];
		for (int k = minOverlap; k <= t; k++) {
			alive[k] = true;
			aliveCount++;
		}
		if (aliveCount == 0) {
			decideNoOverlap();
		}
	}

	/**
	 * @param delivered the text the subscriber already received (only its last
	 * {@value #DEFAULT_TAIL_SIZE} characters are kept)
	 * @return a splicer with the defaults: tail {@value #DEFAULT_TAIL_SIZE}, minimum overlap
	 * {@value #DEFAULT_MIN_OVERLAP}, seam whitespace collapsed
	 */
	public static OverlapSplicer of(CharSequence delivered) {
		return of(delivered, DEFAULT_TAIL_SIZE, DEFAULT_MIN_OVERLAP, true);
	}

	/**
	 * @param delivered the text the subscriber already received
	 * @param tailSize how many of its last characters are compared, 1 to 10 000
	 * @param minOverlap the shortest repeat removed, at least 1
	 * @param collapseSeamWhitespace drop the continuation's leading whitespace when no overlap is
	 * found and the delivered text ends with whitespace
	 * @throws IllegalArgumentException naming the bad argument
	 */
	public static OverlapSplicer of(CharSequence delivered, int tailSize, int minOverlap,
			boolean collapseSeamWhitespace) {
		Objects.requireNonNull(delivered, "delivered");
		if (tailSize < 1 || tailSize > 10_000) {
			throw new IllegalArgumentException("tailSize must be between 1 and 10000, was " + tailSize);
		}
		if (minOverlap < 1) {
			throw new IllegalArgumentException("minOverlap must be >= 1, was " + minOverlap);
		}
		int from = Math.max(0, delivered.length() - tailSize);
		return new OverlapSplicer(delivered.subSequence(from, delivered.length()).toString(), minOverlap,
				collapseSeamWhitespace);
	}

	/**
	 * Takes the next text delta of the continuation.
	 *
	 * @return the text to emit now: {@code ""} while holding back, then the delta itself
	 */
	public String accept(CharSequence delta) {
		if (delta == null || delta.length() == 0) {
			return "";
		}
		if (decided) {
			return skippingWhitespace ? skipLeadingWhitespace(delta.toString()) : delta.toString();
		}
		if (held == null) {
			held = new StringBuilder(Math.max(16, Math.min(tail.length(), 4 * delta.length())));
		}
		int start = held.length();
		held.append(delta);
		int t = tail.length();
		int end = held.length();
		for (int p = start; p < end && aliveCount > 0; p++) {
			char c = held.charAt(p);
			// candidate k covers continuation positions 0..k-1; position p is inside it when k > p
			for (int k = Math.max(minOverlap, p + 1); k <= t; k++) {
				if (alive[k] && tail.charAt(t - k + p) != c) {
					alive[k] = false;
					aliveCount--;
				}
			}
			int complete = p + 1;
			if (complete <= t && alive[complete]) {
				alive[complete] = false;
				aliveCount--;
				longestComplete = complete;
			}
		}
		if (aliveCount > 0) {
			return "";
		}
		if (start == 0 && longestComplete == 0) {
			// decided on the first delta without an overlap: hand the delta on as it is
			held = null;
			decideNoOverlap();
			String text = delta.toString();
			return skippingWhitespace ? skipLeadingWhitespace(text) : text;
		}
		return decide();
	}

	/**
	 * Ends the continuation: decides with what was seen and releases what was held back.
	 *
	 * @return the held-back text to emit (possibly {@code ""}); {@code ""} when called again
	 */
	public String finish() {
		return decided ? "" : decide();
	}

	/** @return whether the overlap is decided (nothing is held back any more) */
	public boolean decided() {
		return decided;
	}

	/** @return characters removed from the continuation's start, or -1 while undecided */
	public int overlapRemoved() {
		return overlapRemoved;
	}

	/** @return characters held back right now */
	public int heldBack() {
		return decided || held == null ? 0 : held.length();
	}

	private String decide() {
		int k = longestComplete;
		String out;
		if (held == null) {
			out = "";
		}
		else {
			out = held.substring(Math.min(k, held.length()));
			held = null;
		}
		if (k == 0) {
			decideNoOverlap();
		}
		else {
			decided = true;
			overlapRemoved = k;
		}
		return skippingWhitespace ? skipLeadingWhitespace(out) : out;
	}

	private void decideNoOverlap() {
		decided = true;
		overlapRemoved = 0;
		int t = tail.length();
		skippingWhitespace = collapseSeamWhitespace && t > 0 && Character.isWhitespace(tail.charAt(t - 1));
	}

	private String skipLeadingWhitespace(String text) {
		int i = 0;
		int n = text.length();
		while (i < n && Character.isWhitespace(text.charAt(i))) {
			i++;
		}
		if (i < n) {
			skippingWhitespace = false;
		}
		return i == 0 ? text : text.substring(i);
	}

	@Override
	public String toString() {
		return "OverlapSplicer{tail=" + tail.length() + " chars, minOverlap=" + minOverlap + ", decided=" + decided
				+ ", overlapRemoved=" + overlapRemoved + '}';
	}
}
