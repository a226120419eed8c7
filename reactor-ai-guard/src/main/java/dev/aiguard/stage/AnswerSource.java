package dev.aiguard.stage;

import org.reactivestreams.Publisher;

/**
 * A run that answers when the live model does not (the fallback ladder). The request reaches it
 * through {@link StageRun#answers()}; what the answer is made of stays the stage's.
 */
public interface AnswerSource {

	/** @return whether there is an answer for a request the live model failed for {@code why} */
	boolean answers(Shortfall why);

	/** @return whether there are sources to walk before (or instead of) the live model for {@code degradation} */
	boolean answersFirst(Degradation degradation);

	/**
	 * @return the answer, a new walk for each subscription; call only when {@link #answers} said
	 *         there is one. The port hears which source answered.
	 */
	Publisher<?> answer(Shortfall why, Throwable cause, RequestPort port);

	/** @return the sources for {@code degradation}, walked before the live model; call only when {@link #answersFirst} said there are some */
	Publisher<?> answerFirst(Degradation degradation, Throwable cause, RequestPort port);
}
