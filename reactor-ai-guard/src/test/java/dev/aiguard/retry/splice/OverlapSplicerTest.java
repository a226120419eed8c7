package dev.aiguard.retry.splice;

import java.util.ArrayList;
import java.util.List;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class OverlapSplicerTest {

	/** Feeds {@code deltas} and {@code finish()}; checks the hold-back bound on the way. */
	private static String splice(OverlapSplicer splicer, List<String> deltas, int tailSize) {
		StringBuilder out = new StringBuilder();
		for (String delta : deltas) {
			out.append(splicer.accept(delta));
			assertThat(splicer.heldBack()).isLessThanOrEqualTo(tailSize);
		}
		out.append(splicer.finish());
		assertThat(splicer.decided()).isTrue();
		assertThat(splicer.finish()).isEmpty();
		return out.toString();
	}

	/** Cuts {@code text} at the given positions (taken modulo its length, any order, duplicates allowed). */
	private static List<String> cut(String text, List<Integer> cuts) {
		List<Integer> points = new ArrayList<>();
		for (int c : cuts) {
			points.add(text.isEmpty() ? 0 : c % (text.length() + 1));
		}
		points.add(0);
		points.add(text.length());
		points.sort(null);
		List<String> deltas = new ArrayList<>();
		for (int i = 1; i < points.size(); i++) {
			deltas.add(text.substring(points.get(i - 1), points.get(i)));
		}
		return deltas;
	}

	/** The definition, written as plainly as possible. */
	static int longestOverlap(String delivered, String continuation, int tailSize, int minOverlap) {
		String tail = delivered.substring(Math.max(0, delivered.length() - tailSize));
		for (int k = Math.min(tail.length(), continuation.length()); k >= minOverlap; k--) {
			if (tail.endsWith(continuation.substring(0, k))) {
				return k;
			}
		}
		return 0;
	}

	static String expected(String delivered, String continuation, int tailSize, int minOverlap, boolean collapse) {
		int k = longestOverlap(delivered, continuation, tailSize, minOverlap);
		String out = continuation.substring(k);
		String tail = delivered.substring(Math.max(0, delivered.length() - tailSize));
		if (k == 0 && collapse && !tail.isEmpty() && Character.isWhitespace(tail.charAt(tail.length() - 1))) {
			int i = 0;
			while (i < out.length() && Character.isWhitespace(out.charAt(i))) {
				i++;
			}
			out = out.substring(i);
		}
		return out;
	}

	// ---- properties ----

	@Provide
	Arbitrary<String> repetitive() {
		// a tiny alphabet makes accidental and nested overlaps common
		return Arbitraries.strings().withChars("ab \n").ofMaxLength(60);
	}

	@Property(tries = 1000)
	void splicedTextFollowsTheDefinitionWhateverTheDeltas(@ForAll("repetitive") String delivered,
			@ForAll("repetitive") String continuation, @ForAll @Size(max = 10) List<@IntRange(max = 200) Integer> cuts,
			@ForAll @IntRange(min = 1, max = 30) int tailSize, @ForAll @IntRange(min = 1, max = 5) int minOverlap,
			@ForAll boolean collapse) {
		OverlapSplicer splicer = OverlapSplicer.of(delivered, tailSize, minOverlap, collapse);
		String spliced = splice(splicer, cut(continuation, cuts), tailSize);
		assertThat(spliced).isEqualTo(expected(delivered, continuation, tailSize, minOverlap, collapse));
		assertThat(splicer.overlapRemoved()).isEqualTo(longestOverlap(delivered, continuation, tailSize, minOverlap));
	}

	/** An intended answer, where it broke, and how much of its end the continuation repeats. */
	record Seam(String intended, int split, int overlap) {

		String delivered() {
			return intended.substring(0, split);
		}

		String continuation() {
			return intended.substring(split - overlap);
		}
	}

	@Provide
	Arbitrary<Seam> seams() {
		Arbitrary<String> text = Arbitraries.strings().withCharRange('A', 'Z').withCharRange('a', 'z')
				.withChars(".,;:!?-'()0123456789").ofMinLength(1).ofMaxLength(500);
		return text.flatMap(intended -> Combinators.combine(
				Arbitraries.integers().between(1, intended.length()),
				Arbitraries.integers().between(0, 200)).as((split, overlap) -> {
					// a repeat shorter than the minimum is not looked for: none or at least 3 chars
					int k = Math.min(overlap, split);
					return new Seam(intended, split, k < OverlapSplicer.DEFAULT_MIN_OVERLAP ? 0 : k);
				}));
	}

	@Property(tries = 1000)
	void deliveredPlusSplicedIsTheIntendedAnswer(@ForAll("seams") Seam seam,
			@ForAll @Size(max = 12) List<@IntRange(max = 600) Integer> cuts) {
		// the only repeat at the seam is the one the continuation made (no accidental longer one)
		Assume.that(longestOverlap(seam.delivered(), seam.continuation(), 200, 3) == seam.overlap());
		String spliced = splice(OverlapSplicer.of(seam.delivered()), cut(seam.continuation(), cuts), 200);
		assertThat(seam.delivered() + spliced).isEqualTo(seam.intended());
	}

	@Property(tries = 300)
	void nothingIsDuplicatedOrLostWithOneCharacterDeltas(@ForAll("seams") Seam seam) {
		Assume.that(longestOverlap(seam.delivered(), seam.continuation(), 200, 3) == seam.overlap());
		OverlapSplicer splicer = OverlapSplicer.of(seam.delivered());
		List<String> deltas = new ArrayList<>();
		for (char c : seam.continuation().toCharArray()) {
			deltas.add(String.valueOf(c));
		}
		String spliced = splice(splicer, deltas, 200);
		assertThat(spliced).hasSize(seam.intended().length() - seam.split());
		assertThat(seam.delivered() + spliced).isEqualTo(seam.intended());
		assertThat(splicer.overlapRemoved()).isEqualTo(seam.overlap());
	}

	// ---- examples ----

	@Test
	void theRepeatedEndOfTheDeliveredTextIsDropped() {
		OverlapSplicer splicer = OverlapSplicer.of("The cat sat on");
		assertThat(splicer.accept("sat")).isEmpty();
		assertThat(splicer.heldBack()).isEqualTo(3);
		assertThat(splicer.accept(" on the")).isEqualTo(" the");
		assertThat(splicer.overlapRemoved()).isEqualTo(6);
		assertThat(splicer.accept(" mat.")).isEqualTo(" mat.");
		assertThat(splicer.finish()).isEmpty();
	}

	@Test
	void aContinuationThatDoesNotRepeatPassesStraightThrough() {
		OverlapSplicer splicer = OverlapSplicer.of("The cat sat on");
		String delta = " the mat.";
		assertThat(splicer.accept(delta)).isSameAs(delta);
		assertThat(splicer.decided()).isTrue();
		assertThat(splicer.overlapRemoved()).isZero();
		String next = " It purred.";
		assertThat(splicer.accept(next)).isSameAs(next);
	}

	@Test
	void repeatsShorterThanTheMinimumAreKept() {
		OverlapSplicer splicer = OverlapSplicer.of("I said no");
		assertThat(splicer.accept("no matter what")).isEqualTo("no matter what");
		assertThat(OverlapSplicer.of("I said no", 200, 2, true).accept("no matter what")).isEqualTo(" matter what");
	}

	@Test
	void heldTextIsReleasedByFinish() {
		OverlapSplicer splicer = OverlapSplicer.of("The cat sat on");
		assertThat(splicer.accept("sat")).isEmpty();
		assertThat(splicer.finish()).isEqualTo("sat");
		assertThat(splicer.overlapRemoved()).isZero();
	}

	@Test
	void aWholeRepeatIsDroppedAtFinish() {
		OverlapSplicer splicer = OverlapSplicer.of("The cat sat on");
		assertThat(splicer.accept("sat on")).isEmpty();
		assertThat(splicer.finish()).isEmpty();
		assertThat(splicer.overlapRemoved()).isEqualTo(6);
	}

	@Test
	void theLongestRepeatWins() {
		OverlapSplicer splicer = OverlapSplicer.of("abcabcabc", 200, 3, false);
		assertThat(splicer.accept("abcabcabcX")).isEqualTo("X");
		assertThat(splicer.overlapRemoved()).isEqualTo(9);
	}

	@Test
	void holdsBackNoMoreThanTheTail() {
		String delivered = "a".repeat(500);
		OverlapSplicer splicer = OverlapSplicer.of(delivered, 50, 3, false);
		int maxHeld = 0;
		StringBuilder out = new StringBuilder();
		for (int i = 0; i < 80; i++) {
			out.append(splicer.accept("a"));
			maxHeld = Math.max(maxHeld, splicer.heldBack());
		}
		out.append(splicer.finish());
		assertThat(maxHeld).isLessThanOrEqualTo(50);
		assertThat(splicer.overlapRemoved()).isEqualTo(50);
		assertThat(out.toString()).isEqualTo("a".repeat(30));
	}

	@Test
	void aRepeatLongerThanTheTailIsNotRecognised() {
		String delivered = "0123456789".repeat(3) + "abcdefghij";
		String continuation = delivered.substring(5) + " and more";
		OverlapSplicer splicer = OverlapSplicer.of(delivered, 10, 3, false);
		// the continuation's start lies before the compared tail: it cannot be told from new text
		assertThat(splice(splicer, List.of(continuation), 10)).isEqualTo(continuation);
	}

	@Test
	void whitespaceAtTheSeamIsNotDoubled() {
		assertThat(OverlapSplicer.of("Hello ").accept(" world")).isEqualTo("world");
		assertThat(OverlapSplicer.of("Hello").accept(" world")).isEqualTo(" world");
		assertThat(OverlapSplicer.of("Hello ", 200, 3, false).accept(" world")).isEqualTo(" world");
		OverlapSplicer splicer = OverlapSplicer.of("Hi\n");
		assertThat(splicer.accept("\n")).isEmpty();
		assertThat(splicer.accept(" ")).isEmpty();
		assertThat(splicer.accept("there\n")).isEqualTo("there\n");
		assertThat(splicer.accept(" again")).isEqualTo(" again");
	}

	@Test
	void nothingDeliveredMeansNothingToRemove() {
		OverlapSplicer splicer = OverlapSplicer.of("");
		assertThat(splicer.decided()).isTrue();
		assertThat(splicer.accept("Hello")).isEqualTo("Hello");
		assertThat(splicer.accept("")).isEmpty();
		assertThat(splicer.accept(null)).isEmpty();
	}

	@Test
	void surrogatePairsAreComparedAsText() {
		OverlapSplicer splicer = OverlapSplicer.of("Fine \uD83D\uDE00 thanks");
		assertThat(splicer.accept("\uD83D\uDE00 thanks, and you?")).isEqualTo(", and you?");
	}

	@Test
	void badArgumentsNameTheFieldAndTheValue() {
		assertThatThrownBy(() -> OverlapSplicer.of("x", 0, 3, true))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tailSize").hasMessageContaining("0");
		assertThatThrownBy(() -> OverlapSplicer.of("x", 20_000, 3, true))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tailSize").hasMessageContaining("20000");
		assertThatThrownBy(() -> OverlapSplicer.of("x", 200, 0, true))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minOverlap").hasMessageContaining("0");
		assertThatThrownBy(() -> OverlapSplicer.of(null)).isInstanceOf(NullPointerException.class)
				.hasMessageContaining("delivered");
	}
}
