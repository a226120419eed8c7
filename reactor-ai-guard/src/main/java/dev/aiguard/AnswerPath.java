package dev.aiguard;

import java.util.function.LongConsumer;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.stage.AnswerJudge;
import dev.aiguard.stage.AnswerRecording;
import dev.aiguard.stage.StageRun;
import dev.aiguard.stall.watch.StallWatch;
import org.jspecify.annotations.Nullable;
import reactor.core.CoreSubscriber;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * The way one request's chunks take to the subscriber when something must see them: the recording
 * of a stage that keeps the answer (the response cache), the continuation's transcript, the output
 * validation. Chooses, per attempt, the subscriber the attempt delivers to (the actual one, an
 * {@link AnswerTap}, or the tap's hold) and the {@link AnswerJudge} the attempt's watch feeds (the
 * one place validation is fed). A request whose policy needs none of these has no path: its chunks
 * go straight to the subscriber.
 */
final class AnswerPath<T> {

	private final PolicyView<T> view;
	private final boolean callForm;
	private final CoreSubscriber<? super T> actual;
	private final ChunkInspector<T> inspector;
	private final LongConsumer demand;
	@Nullable
	AnswerTap<T> tap;
	/** The request's output validation (the validation stage's run), {@code null} without validators. */
	@Nullable
	private AnswerJudge judge;
	/** The run that keeps the realtime answer (the response cache's), {@code null} when none does or in the transform form. */
	@Nullable
	private AnswerRecording recording;
	/** What the watch feeds: the judge, as the watch's check. */
	private StallWatch.@Nullable ContentCheck<Object> feed;
	/** The current attempt is validated (a realtime attempt of a policy with validators). */
	private boolean validating;
	/** The finish reason of the attempt whose held answer is released: the answer's, whatever the release sees. */
	@Nullable
	String releasedReason;

	private AnswerPath(PolicyView<T> view, boolean callForm, CoreSubscriber<? super T> actual,
			ChunkInspector<T> inspector, LongConsumer demand) {
		this.view = view;
		this.callForm = callForm;
		this.actual = actual;
		this.inspector = inspector;
		this.demand = demand;
	}

	/** @return the request's path, or {@code null} when nothing of its policy must see the chunks */
	@Nullable
	static <T> AnswerPath<T> of(PolicyView<T> view, boolean callForm, CoreSubscriber<? super T> actual,
			ChunkInspector<T> inspector, LongConsumer demand) {
		boolean needed = view.policy.validates()
				|| callForm && (view.recordsAnswers || view.continuationSupport() != null);
		return needed ? new AnswerPath<>(view, callForm, actual, inspector, demand) : null;
	}

	/**
	 * The request's stages started: the run that judges its answers, if any, is fed from now on, and
	 * the run that keeps them, if any, records the call form's realtime answers.
	 */
	void startedWith(StageRun[] runs) {
		for (StageRun run : runs) {
			AnswerJudge j = run.judge();
			if (j != null && judge == null) {
				judge = j;
				feed = j::afterContent;
			}
			AnswerRecording r = callForm ? run.recording() : null;
			if (r != null && recording == null) {
				recording = r;
			}
		}
	}

	/**
	 * The subscriber chunks go to: the actual one, or a tap when something must see them, or the
	 * tap's hold when the answer is validated before anything of it is delivered. Starts the
	 * attempt's validation, which the watch feeds ({@link #check}).
	 */
	CoreSubscriber<? super T> targetFor(AttemptKind next, @Nullable ChatRequest request, long delivered,
			boolean continued) {
		AnswerRecording keeper = recording;
		ContinuationSupport<T> continuation = callForm ? view.continuationSupport() : null;
		boolean record = next == AttemptKind.REALTIME && keeper != null;
		boolean transcribe = next == AttemptKind.REALTIME && continuation != null;
		AnswerJudge j = next == AttemptKind.REALTIME ? judge : null;
		validating = j != null;
		if (j != null) {
			j.startAttempt();
		}
		boolean hold = j != null && j.holds(request);
		// leading whitespace is held only while a retry is still possible: nothing delivered yet
		boolean holdBlanks = j != null && !hold && j.holdsLeadingWhitespace() && delivered == 0L
				&& inspector.chunkType() == ChatChunk.class;
		boolean onlyBlanks = !record && !transcribe && !hold;
		if (onlyBlanks && !holdBlanks) {
			if (tap != null) {
				tap.holding = false;
				tap.holdLeadingWhitespace(false, false);
			}
			return actual;
		}
		if (tap == null) {
			tap = new AnswerTap<>(actual, keeper, continuation, demand);
		}
		else if (record && !continued) {
			tap.restartRecording();
		}
		tap.recordingOn = record;
		tap.transcribing = transcribe;
		tap.holding = false;
		tap.holdLeadingWhitespace(holdBlanks, onlyBlanks);
		return hold ? tap.hold() : tap;
	}

	/**
	 * @return the check the watch calls for each content chunk of the current attempt, after the
	 *         chunk went to its target (a cut it throws ends the attempt): the validation of a
	 *         validated attempt, else {@code null}
	 */
	StallWatch.@Nullable ContentCheck<Object> check() {
		return validating ? feed : null;
	}

	/** @return whether the current attempt's answer is held back, not delivered */
	boolean holding() {
		return tap != null && tap.holding;
	}

	/** @return whether leading whitespace is still held: nothing of the attempt's content reached the subscriber */
	boolean holdsBlanks() {
		return tap != null && tap.holdsBlanks();
	}

	/** @return whether the answer so far can be continued (its transcript is readable) */
	boolean continuable() {
		return tap != null && tap.continuable();
	}

	/**
	 * @return the verdict on a completed validated attempt: the validator's rejection, or {@code null}
	 *         when the answer stands (or the attempt is not validated)
	 */
	@Nullable
	RuntimeException verdict(StallWatch<T> watch, @Nullable ChatRequest request, Context context) {
		AnswerJudge j = judge;
		if (!validating || j == null || watch.capped()) {
			return null;
		}
		return j.verdict(watch.finishReason(), request, context);
	}

	/** @return the request to retry after a rejected answer: what its validator adds to the prompt, if anything */
	ChatRequest retryRequest(ChatRequest request, Context context) {
		AnswerJudge j = judge;
		return j != null ? j.retryRequest(request, context) : request;
	}

	/** The realtime answer completed: the run that keeps it hears so, when the tap recorded it and it was not continued. */
	void storeAnswer(@Nullable String finishReason, boolean continued, Scheduler blocking) {
		AnswerTap<T> t = tap;
		AnswerRecording keeper = t != null ? t.recording : null;
		if (keeper == null || continued) {
			return;
		}
		keeper.completed(finishReason, blocking);
	}
}
