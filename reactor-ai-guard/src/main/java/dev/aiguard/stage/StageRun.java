package dev.aiguard.stage;

import dev.aiguard.core.Outcome;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;

/**
 * What one stage does for one request. The request calls the hooks one after another (never two
 * at once); a run answers through the {@link RequestPort}, now or later from another thread.
 */
public interface StageRun {

	/**
	 * Admission, in the stages' order, once per request (the load stage's cheaper sources may come
	 * first). The run calls exactly one of {@link RequestPort#proceed()},
	 * {@link RequestPort#refuse} or {@link RequestPort#walkFirst}, at once or later.
	 */
	default void admit(RequestPort port) {
		port.proceed();
	}

	/**
	 * Before each realtime attempt is sent, in the stages' order. When a run asks for the attempt
	 * later, every run is asked again then, from the first: a stage that may wait comes before the
	 * stages that take something for the attempt.
	 *
	 * @return true to go on now; false when the run answered otherwise: it refused the attempt
	 *         ({@link RequestPort#refuse}), or asked for it later ({@link RequestPort#attemptAfter}
	 *         or, when an answer arrives, {@link RequestPort#attemptNow})
	 */
	default boolean beforeAttempt(RequestPort port) {
		return true;
	}

	/**
	 * @return the attempt's source as it is sent: {@code attempt} itself, or one that carries what
	 *         this stage must hear from the upstream (in its context)
	 */
	default <T> Publisher<? extends T> decorate(Publisher<? extends T> attempt) {
		return attempt;
	}

	/**
	 * A realtime attempt whose {@link #beforeAttempt} this run passed ended, or was not sent
	 * ({@link AttemptEnd#sent()} false) because a later stage refused it.
	 */
	default void afterAttempt(AttemptEnd end) {
	}

	/**
	 * @return this run's judge of the request's realtime answers (output validation), or
	 *         {@code null} when the run judges nothing
	 */
	@Nullable
	default AnswerJudge judge() {
		return null;
	}

	/**
	 * @return this run's answer when the live model gives none (a fallback ladder), or {@code null}
	 *         when the run has no other source
	 */
	@Nullable
	default AnswerSource answers() {
		return null;
	}

	/**
	 * @return this run's keeper of the realtime answer as delivered (a response cache), or
	 *         {@code null} when the run keeps nothing
	 */
	@Nullable
	default AnswerRecording recording() {
		return null;
	}

	/**
	 * The request ends: whatever the run holds goes back. Called once, before the subscriber hears
	 * of the end (or when a cancel finishes the request).
	 */
	default void finish(Outcome outcome) {
	}
}
