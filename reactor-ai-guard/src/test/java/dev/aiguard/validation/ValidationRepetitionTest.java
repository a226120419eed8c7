package dev.aiguard.validation;

import java.lang.management.ManagementFactory;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** The repetition detector on chunk sequences: loops of every period are cut, prose is not. */
class ValidationRepetitionTest {

	/** Feeds {@code chunks}; @return the index of the chunk that was cut, or -1. */
	static int feed(StreamingValidator.Watch watch, String[] chunks) {
		for (int i = 0; i < chunks.length; i++) {
			if (watch.onText(chunks[i]) != null) {
				return i;
			}
		}
		return -1;
	}

	static String[] prefixThenLoop(int prefix, String[] unit, int repeats) {
		String[] out = new String[prefix + unit.length * repeats];
		for (int i = 0; i < prefix; i++) {
			out[i] = "word" + i + ' ';
		}
		for (int r = 0; r < repeats; r++) {
			System.arraycopy(unit, 0, out, prefix + r * unit.length, unit.length);
		}
		return out;
	}

	static String[] unit(int period) {
		String[] u = new String[period];
		for (int i = 0; i < period; i++) {
			u[i] = "u" + i + ' ';
		}
		return u;
	}

	@Test
	void oneChunkRepeatedIsCutWhenTheSpanIsReached() {
		StreamingValidator.Watch w = RepetitionDetector.defaults().newWatch();
		int cut = feed(w, prefixThenLoop(10, new String[] {"ha"}, 200));
		// 64 identical chunks: the minimum span
		assertThat(cut).isEqualTo(10 + 64 - 1);
	}

	@Test
	void aSentenceLoopIsCutAfterItsRepeats() {
		for (int period : new int[] {2, 5, 8, 13, 20, 40, 64}) {
			StreamingValidator.Watch w = RepetitionDetector.defaults().newWatch();
			String[] chunks = prefixThenLoop(30, unit(period), 40);
			int cut = feed(w, chunks);
			int needed = Math.max(64, period * 5);
			assertThat(cut).as("period %d", period).isEqualTo(30 + needed - 1);
		}
	}

	@Test
	void theExceptionSaysThePeriodAndTheSpan() {
		StreamingValidator.Watch w = RepetitionDetector.defaults().newWatch();
		String[] chunks = prefixThenLoop(5, unit(16), 10);
		InvalidOutputException cut = null;
		for (String c : chunks) {
			cut = w.onText(c);
			if (cut != null) {
				break;
			}
		}
		assertThat(cut).isInstanceOf(DegenerateOutputException.class);
		DegenerateOutputException loop = (DegenerateOutputException) cut;
		assertThat(loop.period()).isEqualTo(16);
		assertThat(loop.span()).isEqualTo(80);
		assertThat(loop.validator()).isEqualTo("repetition");
	}

	@Test
	void unitsLongerThanMaxPeriodAndShortRepeatsPass() {
		assertThat(feed(RepetitionDetector.defaults().newWatch(), prefixThenLoop(3, unit(65), 10))).isEqualTo(-1);
		assertThat(feed(RepetitionDetector.defaults().newWatch(), prefixThenLoop(3, unit(30), 4))).isEqualTo(-1);
		assertThat(feed(RepetitionDetector.defaults().newWatch(), prefixThenLoop(3, new String[] {"-"}, 63))).isEqualTo(-1);
	}

	@Test
	void proseWithRecurringWordsPasses() {
		String text = ("The guard watches each answer as it streams. It counts the tokens, it checks the "
				+ "deadlines, and it records the outcome of the attempt. When the answer ends, the guard "
				+ "asks the validators whether the answer is good, and the breaker hears of it. ").repeat(1)
				+ "Then the next request comes, and the guard watches that answer too, token by token.";
		String[] words = text.split("(?<= )");
		assertThat(feed(RepetitionDetector.defaults().newWatch(), words)).isEqualTo(-1);
	}

	@Test
	void aResetForgetsThePreviousAttempt() {
		StreamingValidator.Watch w = RepetitionDetector.defaults().newWatch();
		assertThat(feed(w, prefixThenLoop(0, unit(4), 15))).isEqualTo(-1); // 60 chunks, under the span
		w.reset();
		// were the attempts one sequence, 4 more chunks would reach the span
		assertThat(feed(w, prefixThenLoop(0, unit(4), 15))).isEqualTo(-1);
		assertThat(w.onText("u0 ")).isNull();
	}

	@Test
	void settingsAreCheckedAndShapeTheCut() {
		RepetitionDetector strict = RepetitionDetector.defaults().minSpan(10).minRepeats(3).ngram(2).maxPeriod(8)
				.name("loop");
		assertThat(feed(strict.newWatch(), prefixThenLoop(4, unit(4), 5))).isEqualTo(4 + 12 - 1);
		assertThat(strict.name()).isEqualTo("loop");
		assertThatIllegalArgumentException().isThrownBy(() -> RepetitionDetector.defaults().ngram(0))
				.withMessageContaining("ngram").withMessageContaining("0");
		assertThatIllegalArgumentException().isThrownBy(() -> RepetitionDetector.defaults().maxPeriod(5000))
				.withMessageContaining("maxPeriod");
		assertThatIllegalArgumentException().isThrownBy(() -> RepetitionDetector.defaults().minRepeats(1))
				.withMessageContaining("minRepeats");
		assertThatIllegalArgumentException().isThrownBy(() -> RepetitionDetector.defaults().minSpan(1))
				.withMessageContaining("minSpan");
		assertThatIllegalArgumentException().isThrownBy(() -> RepetitionDetector.defaults().name(" "))
				.withMessageContaining("name");
	}

	/** The per-chunk path allocates nothing: 200 000 chunks of prose cost no heap beyond noise. */
	@Test
	void thePerChunkPathAllocatesNothing() {
		com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
		String[] words = new String[997];
		for (int i = 0; i < words.length; i++) {
			words[i] = "w" + i + ' ';
			words[i].hashCode();
		}
		StreamingValidator.Watch w = RepetitionDetector.defaults().newWatch();
		for (int i = 0; i < 20_000; i++) {
			w.onText(words[i % words.length]);
		}
		long tid = Thread.currentThread().getId();
		long before = threads.getThreadAllocatedBytes(tid);
		for (int i = 0; i < 200_000; i++) {
			w.onText(words[i % words.length]);
		}
		long allocated = threads.getThreadAllocatedBytes(tid) - before;
		// one object per chunk would be at least 16 bytes x 200 000 = 3.2 MB
		assertThat(allocated).isLessThan(64 * 1024L);
	}
}
