package dev.aiguard.fallback.recording;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AnswerRecorderTest {

	static List<String> chunks(int n) {
		List<String> list = new ArrayList<>(n);
		for (int i = 0; i < n; i++) {
			list.add("c" + i);
		}
		return list;
	}

	@Test
	void recordsInOrderAcrossBlocks() {
		AnswerRecorder<String> recorder = new AnswerRecorder<>(5_000);
		List<String> expected = chunks(5_000);
		expected.forEach(recorder::record);
		assertThat(recorder.size()).isEqualTo(5_000);
		assertThat(recorder.overflowed()).isFalse();
		assertThat(recorder.chunks()).containsExactlyElementsOf(expected);
		assertThat(recorder.chunks().get(4_999)).isSameAs(expected.get(4_999));
	}

	@Test
	void blockArithmeticMapsEveryIndexToItsOwnSlot() {
		int previousBlock = 0;
		int previousOffset = -1;
		for (int i = 0; i < 1 << 20; i++) {
			int block = AnswerRecorder.blockOf(i);
			int offset = AnswerRecorder.offsetOf(i);
			if (block == previousBlock) {
				assertThat(offset).as("index %d", i).isEqualTo(previousOffset + 1);
			}
			else {
				assertThat(block).as("index %d", i).isEqualTo(previousBlock + 1);
				assertThat(offset).as("index %d", i).isZero();
				int previousBlockSize = previousBlock == 0 ? 16 : 16 << (previousBlock - 1);
				assertThat(previousOffset + 1).as("block %d full", previousBlock).isEqualTo(previousBlockSize);
			}
			previousBlock = block;
			previousOffset = offset;
		}
		assertThat(AnswerRecorder.blockCount(1)).isEqualTo(1);
		assertThat(AnswerRecorder.blockCount(16)).isEqualTo(1);
		assertThat(AnswerRecorder.blockCount(17)).isEqualTo(2);
		assertThat(AnswerRecorder.blockCount(Integer.MAX_VALUE)).isEqualTo(28);
	}

	@Test
	void answerAtTheBoundIsStorableOneMoreOverflows() {
		AnswerRecorder<String> atBound = new AnswerRecorder<>(16);
		chunks(16).forEach(atBound::record);
		assertThat(atBound.isStorable()).isTrue();

		AnswerRecorder<String> over = new AnswerRecorder<>(16);
		chunks(17).forEach(over::record);
		assertThat(over.overflowed()).isTrue();
		assertThat(over.isStorable()).isFalse();
		assertThat(over.size()).isZero();
		assertThat(over.chunks()).isEmpty();
		over.record("more");
		assertThat(over.size()).isZero();
	}







	@Test
	void discardedAnswerIsNotStorableAndIgnoresTheRest() {
		AnswerRecorder<String> discarded = new AnswerRecorder<>(100);
		discarded.record("a");
		discarded.discard();
		discarded.record("b");
		assertThat(discarded.isStorable()).isFalse();
		assertThat(discarded.size()).isZero();
	}

	@Test
	void boundMustBePositive() {
		assertThatThrownBy(() -> new AnswerRecorder<String>(0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("maxChunks must be > 0, was 0");
	}

}
