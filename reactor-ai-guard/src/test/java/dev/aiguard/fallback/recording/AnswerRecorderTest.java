package dev.aiguard.fallback.recording;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.aiguard.core.Outcome;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.fallback.ResponseCacheSpec;

class AnswerRecorderTest {

	@AfterEach
	void resetHooks() {
		Hooks.resetOnErrorDropped();
	}

	/** A cache that remembers what it was given. */
	static class MapCache<T> implements ResponseCache<T> {

		final List<Object> keys = new CopyOnWriteArrayList<>();
		final List<List<T>> stored = new CopyOnWriteArrayList<>();
		final int maxChunks;
		final boolean mayBlock;

		MapCache(int maxChunks, boolean mayBlock) {
			this.maxChunks = maxChunks;
			this.mayBlock = mayBlock;
		}

		@Override
		public Mono<List<T>> lookup(Object key) {
			return Mono.empty();
		}

		@Override
		public void store(Object key, List<T> chunks) {
			keys.add(key);
			stored.add(chunks);
		}

		@Override
		public int maxChunksPerEntry() {
			return maxChunks;
		}

		@Override
		public boolean mayBlock() {
			return mayBlock;
		}
	}

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
		MapCache<String> cache = new MapCache<>(100, false);
		assertThat(over.storeIfComplete(cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		assertThat(cache.stored).isEmpty();
	}

	@Test
	void onlyCompleteSuccessfulAnswersAreStored() {
		for (Outcome outcome : Outcome.values()) {
			MapCache<String> cache = new MapCache<>(100, false);
			AnswerRecorder<String> recorder = AnswerRecorder.forCache(cache);
			chunks(3).forEach(recorder::record);
			boolean stored = recorder.storeIfComplete(cache, "k", outcome, false, Schedulers.immediate());
			assertThat(stored).as(outcome.name()).isEqualTo(outcome == Outcome.SUCCESS);
			assertThat(cache.stored).hasSize(outcome == Outcome.SUCCESS ? 1 : 0);
		}
		MapCache<String> cache = new MapCache<>(100, false);
		AnswerRecorder<String> truncated = AnswerRecorder.forCache(cache);
		chunks(3).forEach(truncated::record);
		assertThat(truncated.storeIfComplete(cache, "k", Outcome.SUCCESS, true, Schedulers.immediate()))
				.as("cut by the output limit").isFalse();
		assertThat(cache.stored).isEmpty();
	}

	@Test
	void nothingIsStoredWithoutKeyChunksOrAfterDiscard() {
		MapCache<String> cache = new MapCache<>(100, false);
		AnswerRecorder<String> noKey = AnswerRecorder.forCache(cache);
		noKey.record("a");
		assertThat(noKey.storeIfComplete(cache, null, Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		AnswerRecorder<String> empty = AnswerRecorder.forCache(cache);
		assertThat(empty.storeIfComplete(cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		AnswerRecorder<String> discarded = AnswerRecorder.forCache(cache);
		discarded.record("a");
		discarded.discard();
		discarded.record("b");
		assertThat(discarded.isStorable()).isFalse();
		assertThat(discarded.storeIfComplete(cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		assertThat(cache.stored).isEmpty();
	}

	@Test
	void answerOverTheCachesOwnBoundIsNotStored() {
		MapCache<String> small = new MapCache<>(2, false);
		AnswerRecorder<String> recorder = new AnswerRecorder<>(10);
		chunks(3).forEach(recorder::record);
		assertThat(recorder.storeIfComplete(small, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		assertThat(small.stored).isEmpty();
	}

	@Test
	void storedAnswerIsTheRecordedChunksAndLaterRecordsDoNotChangeIt() {
		MapCache<String> cache = new MapCache<>(100, false);
		AnswerRecorder<String> recorder = AnswerRecorder.forCache(cache);
		chunks(20).forEach(recorder::record);
		assertThat(recorder.storeIfComplete(cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isTrue();
		recorder.record("after");
		assertThat(cache.keys).containsExactly("k");
		assertThat(cache.stored.get(0)).containsExactlyElementsOf(chunks(20));
		assertThatThrownBy(() -> cache.stored.get(0).add("x")).isInstanceOf(UnsupportedOperationException.class);
	}

	@Test
	void blockingCacheIsStoredOnTheBlockingScheduler() {
		List<Runnable> laneTasks = new CopyOnWriteArrayList<>();
		Scheduler lane = Schedulers.fromExecutor(laneTasks::add);
		MapCache<String> cache = new MapCache<>(100, true);
		AnswerRecorder<String> recorder = AnswerRecorder.forCache(cache);
		chunks(2).forEach(recorder::record);
		assertThat(recorder.storeIfComplete(cache, "k", Outcome.SUCCESS, false, lane)).isTrue();
		assertThat(cache.stored).as("not on the calling thread").isEmpty();
		assertThat(laneTasks).hasSize(1);
		laneTasks.get(0).run();
		assertThat(cache.stored).hasSize(1);
	}

	@Test
	void throwingCacheIsIsolated() {
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		RuntimeException broken = new RuntimeException("store failed");
		MapCache<String> cache = new MapCache<>(100, false) {
			@Override
			public void store(Object key, List<String> chunks) {
				throw broken;
			}
		};
		AnswerRecorder<String> recorder = AnswerRecorder.forCache(cache);
		recorder.record("a");
		assertThat(recorder.storeIfComplete(cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		assertThat(dropped).containsExactly(broken);
	}

	@Test
	void boundMustBePositive() {
		assertThatThrownBy(() -> new AnswerRecorder<String>(0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("maxChunks must be > 0, was 0");
	}

	@Test
	void recorderForCaffeineUsesItsPerEntryBound() {
		ResponseCache<String> cache = ResponseCache.caffeine(ResponseCacheSpec.defaults().maxChunksPerEntry(3));
		AnswerRecorder<String> recorder = AnswerRecorder.forCache(cache);
		chunks(4).forEach(recorder::record);
		assertThat(recorder.overflowed()).isTrue();
	}
}
