package dev.aiguard.fallback;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.IntStream;

import dev.aiguard.core.Outcome;
import dev.aiguard.fallback.recording.AnswerRecorder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What of a recorded answer goes into the response cache, and how. */
class AnswerStoreTest {

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
		return IntStream.range(0, n).mapToObj(i -> "c" + i).toList();
	}

	@Test
	void overflowedAnswerIsNotStored() {
		AnswerRecorder<String> over = new AnswerRecorder<>(16);
		chunks(17).forEach(over::record);
		over.record("more");
		MapCache<String> cache = new MapCache<>(100, false);
		assertThat(AnswerStore.storeIfComplete(over, cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		assertThat(cache.stored).isEmpty();
	}

	@Test
	void onlyCompleteSuccessfulAnswersAreStored() {
		for (Outcome outcome : Outcome.values()) {
			MapCache<String> cache = new MapCache<>(100, false);
			AnswerRecorder<String> recorder = AnswerStore.recorderFor(cache);
			chunks(3).forEach(recorder::record);
			boolean stored = AnswerStore.storeIfComplete(recorder, cache, "k", outcome, false, Schedulers.immediate());
			assertThat(stored).as(outcome.name()).isEqualTo(outcome == Outcome.SUCCESS);
			assertThat(cache.stored).hasSize(outcome == Outcome.SUCCESS ? 1 : 0);
		}
		MapCache<String> cache = new MapCache<>(100, false);
		AnswerRecorder<String> truncated = AnswerStore.recorderFor(cache);
		chunks(3).forEach(truncated::record);
		assertThat(AnswerStore.storeIfComplete(truncated, cache, "k", Outcome.SUCCESS, true, Schedulers.immediate()))
				.as("cut by the output limit").isFalse();
		assertThat(cache.stored).isEmpty();
	}
	@Test
	void nothingIsStoredWithoutKeyChunksOrAfterDiscard() {
		MapCache<String> cache = new MapCache<>(100, false);
		AnswerRecorder<String> noKey = AnswerStore.recorderFor(cache);
		noKey.record("a");
		assertThat(AnswerStore.storeIfComplete(noKey, cache, null, Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		AnswerRecorder<String> empty = AnswerStore.recorderFor(cache);
		assertThat(AnswerStore.storeIfComplete(empty, cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		AnswerRecorder<String> discarded = AnswerStore.recorderFor(cache);
		discarded.record("a");
		discarded.discard();
		discarded.record("b");
		assertThat(discarded.isStorable()).isFalse();
		assertThat(AnswerStore.storeIfComplete(discarded, cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		assertThat(cache.stored).isEmpty();
	}
	@Test
	void answerOverTheCachesOwnBoundIsNotStored() {
		MapCache<String> small = new MapCache<>(2, false);
		AnswerRecorder<String> recorder = new AnswerRecorder<>(10);
		chunks(3).forEach(recorder::record);
		assertThat(AnswerStore.storeIfComplete(recorder, small, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		assertThat(small.stored).isEmpty();
	}
	@Test
	void storedAnswerIsTheRecordedChunksAndLaterRecordsDoNotChangeIt() {
		MapCache<String> cache = new MapCache<>(100, false);
		AnswerRecorder<String> recorder = AnswerStore.recorderFor(cache);
		chunks(20).forEach(recorder::record);
		assertThat(AnswerStore.storeIfComplete(recorder, cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isTrue();
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
		AnswerRecorder<String> recorder = AnswerStore.recorderFor(cache);
		chunks(2).forEach(recorder::record);
		assertThat(AnswerStore.storeIfComplete(recorder, cache, "k", Outcome.SUCCESS, false, lane)).isTrue();
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
		AnswerRecorder<String> recorder = AnswerStore.recorderFor(cache);
		recorder.record("a");
		assertThat(AnswerStore.storeIfComplete(recorder, cache, "k", Outcome.SUCCESS, false, Schedulers.immediate())).isFalse();
		assertThat(dropped).containsExactly(broken);
	}
	@Test
	void recorderForCaffeineUsesItsPerEntryBound() {
		ResponseCache<String> cache = ResponseCache.caffeine(ResponseCacheSpec.defaults().maxChunksPerEntry(3));
		AnswerRecorder<String> recorder = AnswerStore.recorderFor(cache);
		chunks(4).forEach(recorder::record);
		assertThat(recorder.overflowed()).isTrue();
	}
}
