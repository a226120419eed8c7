package dev.aiguard.fallback;

import java.util.function.Function;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.OutputLimits;
import dev.aiguard.core.Outcome;
import dev.aiguard.fallback.recording.AnswerRecorder;
import dev.aiguard.stage.AnswerRecording;
import dev.aiguard.stage.AnswerSource;
import dev.aiguard.stage.StageRun;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;

/**
 * The fallback stage's run for one call-form request of a policy with a response cache: it records
 * the realtime answer as it is delivered and stores it when it completes whole; the ladder, if the
 * policy has one, is the shared one.
 */
final class CacheRun implements StageRun, AnswerRecording {

	private final FallbackStage.@Nullable LadderRun ladder;
	private final ResponseCache<Object> cache;
	private final Function<ChatRequest, Object> cacheKey;
	private final ChatRequest original;
	private AnswerRecorder<Object> recorder;

	CacheRun(FallbackStage.@Nullable LadderRun ladder, ResponseCache<Object> cache,
			Function<ChatRequest, Object> cacheKey, ChatRequest original) {
		this.ladder = ladder;
		this.cache = cache;
		this.cacheKey = cacheKey;
		this.original = original;
		this.recorder = AnswerStore.recorderFor(cache);
	}

	@Override
	@Nullable
	public AnswerSource answers() {
		return ladder;
	}

	@Override
	public AnswerRecording recording() {
		return this;
	}

	@Override
	public void record(Object chunk) {
		recorder.record(chunk);
	}

	@Override
	public void restart() {
		AnswerRecorder<Object> r = recorder;
		if (r.size() > 0 || r.overflowed()) {
			recorder = AnswerStore.recorderFor(cache);
		}
	}

	@Override
	public void discard() {
		recorder.discard();
	}

	@Override
	public void completed(@Nullable String finishReason, Scheduler blocking) {
		AnswerStore.storeIfComplete(recorder, cache, CacheKeys.keyOf(cacheKey, original), Outcome.SUCCESS,
				finishReason != null && OutputLimits.isTruncation(finishReason), blocking);
	}
}
