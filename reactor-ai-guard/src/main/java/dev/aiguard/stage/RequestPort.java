package dev.aiguard.stage;

import dev.aiguard.chat.ChatRequest;

/**
 * The way back from a stage into its request. Every call is a decision the request carries out;
 * a stage never reaches further into the request than this.
 */
public interface RequestPort extends RequestFacts {

	/** This stage admits the request: the next stage is asked, then the first attempt is sent. */
	void proceed();

	/** This stage refuses the request or the attempt; {@code reason} is what the subscriber may see. */
	void refuse(Refusal kind, Throwable reason);

	/** @return whether the policy's fallback ladder has steps for {@code degradation} */
	boolean hasLadder(Degradation degradation);

	/**
	 * Walks the ladder's steps for {@code degradation} before the live model; when they have no
	 * answer, admission goes on with the next stage, or, with {@code shedOtherwise}, the request
	 * ends with it. Call only when {@link #hasLadder} said there are steps.
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
}
