package dev.aiguard.stage;

import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;

/**
 * A run that keeps the realtime answer as it is delivered (the response cache). The request
 * reaches it through {@link StageRun#recording()} and feeds it only in the call form, and only
 * the chunks of realtime attempts.
 */
public interface AnswerRecording {

	/** A chunk of the realtime answer (content, finish reason, terminal marker) reached the subscriber; O(1), allocation-free. */
	void record(Object chunk);

	/** A new realtime attempt starts the answer again: what an earlier attempt delivered is no longer part of it. */
	void restart();

	/** The answer is no longer one to keep (a continuation splices it from two attempts). */
	void discard();

	/**
	 * The realtime answer completed and was not continued: keep it if it is whole.
	 *
	 * @param finishReason the answer's finish reason, {@code null} when none came
	 * @param blocking where work that may block runs (the request's lane threads)
	 */
	void completed(@Nullable String finishReason, Scheduler blocking);
}
