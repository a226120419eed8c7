package dev.aiguard.stage;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Source;
import reactor.core.scheduler.Scheduler;

/**
 * The way back from a stage into its request. Every call is a decision the request carries out;
 * a stage never reaches further into the request than this.
 */
public interface RequestPort extends RequestFacts {

	/** This stage admits the request: the next stage is asked, then the first attempt is sent. */
	void proceed();

	/** This stage refuses the request or the attempt; {@code reason} is what the subscriber may see. */
	void refuse(Refusal kind, Throwable reason);

	/** @return whether a run of the request's stages has sources for {@code degradation} ({@link AnswerSource#answersFirst}) */
	boolean hasLadder(Degradation degradation);

	/**
	 * Walks the sources for {@code degradation} before the live model; when they have no answer,
	 * admission goes on with the next stage, or, with {@code shedOtherwise}, the request ends with
	 * it. Call only when {@link #hasLadder} said there are steps.
	 */
	void walkFirst(Degradation degradation, Throwable cause, @org.jspecify.annotations.Nullable Throwable shedOtherwise);

	/** The request holds a lane from now on: its blocking work runs there. */
	void admitted(Lane lane);

	/** The capacity the request held was taken back: whatever it is doing, it stops with {@code reason}. */
	void preempted(Throwable reason);

	/** The attempt waits {@code delayNanos} on the policy's timer; then the stages are asked again. */
	void attemptAfter(long delayNanos);

	/** An answer that {@link StageRun#beforeAttempt} waited for arrived: the stages are asked again now. */
	void attemptNow();

	/** The stage shortened the prompt before the first attempt. */
	void promptShortened(ChatRequest shorter, int tokensDropped);

	/** Tells the request's observer of {@code event}. */
	void observe(StageEvent event);

	/** What a realtime attempt used, for the request's report. */
	void spent(long promptTokens, long completionTokens, long costNanos, boolean wasted);

	/** The output cap ended the answer. */
	void outputCapped();

	/** An answer other than the live model's is chosen: its first chunk comes from {@code source}. */
	void sourceChosen(Source source);

	/** @return where the request's blocking work runs (its lane's threads) */
	Scheduler blockingScheduler();

	/** @return the policy's timer as the request read it: its deadlines and durations run there */
	Scheduler timer();
}
