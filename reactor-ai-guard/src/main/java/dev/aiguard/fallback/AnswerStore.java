package dev.aiguard.fallback;

import java.util.List;
import java.util.Objects;

import dev.aiguard.core.Outcome;
import dev.aiguard.fallback.recording.AnswerRecorder;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/** A recorded realtime answer and the {@link ResponseCache} it goes into: the recorder's bound, and the store of a complete answer. */
final class AnswerStore {

	private AnswerStore() {
	}

	/** @return a recorder bounded by the cache's {@link ResponseCache#maxChunksPerEntry()} */
	static <T> AnswerRecorder<T> recorderFor(ResponseCache<T> cache) {
		Objects.requireNonNull(cache, "cache");
		return new AnswerRecorder<>(cache.maxChunksPerEntry());
	}

	/**
	 * Stores the answer when, and only when, it is complete: outcome {@link Outcome#SUCCESS}, not
	 * cut by the output limit, not overflowed or discarded, not empty, and a key is known. Incomplete,
	 * stalled, failed, cancelled and truncated answers are never stored. A throwing cache is
	 * isolated (its error goes to {@code Hooks.onErrorDropped}).
	 *
	 * @param recorder what was recorded
	 * @param cache where to store
	 * @param key the request's cache key, or {@code null} (nothing is stored)
	 * @param outcome how the request ended
	 * @param outputTruncated whether the finish reason said the output limit cut the answer
	 * @param blockingScheduler where the store runs when the cache {@linkplain ResponseCache#mayBlock()
	 *        may block}; otherwise it runs on the calling thread
	 * @return whether the answer was handed to the cache
	 */
	static <T> boolean storeIfComplete(AnswerRecorder<T> recorder, ResponseCache<T> cache, @Nullable Object key,
			Outcome outcome, boolean outputTruncated, Scheduler blockingScheduler) {
		Objects.requireNonNull(cache, "cache");
		Objects.requireNonNull(outcome, "outcome");
		Objects.requireNonNull(blockingScheduler, "blockingScheduler");
		if (key == null || outcome != Outcome.SUCCESS || outputTruncated || !recorder.isStorable()
				|| recorder.size() > cache.maxChunksPerEntry()) {
			return false;
		}
		List<T> answer = recorder.chunks();
		if (cache.mayBlock()) {
			try {
				blockingScheduler.schedule(() -> store(cache, key, answer));
				return true;
			}
			catch (Throwable rejected) {
				Operators.onErrorDropped(rejected, Context.empty());
				return false;
			}
		}
		return store(cache, key, answer);
	}

	private static <T> boolean store(ResponseCache<T> cache, Object key, List<T> answer) {
		try {
			cache.store(key, answer);
			return true;
		}
		catch (Throwable cacheFailure) {
			Operators.onErrorDropped(cacheFailure, Context.empty());
			return false;
		}
	}
}
