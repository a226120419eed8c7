package dev.aiguard.boot.autoconfigure.properties;

import org.jspecify.annotations.Nullable;

/**
 * What a policy does when an answer fails after tokens were delivered,
 * {@code aiguard.policies.<name>.mid-stream}.
 *
 * <pre>
 * mid-stream: { mode: continue, max-continuations: 2, continuation: assistant-prefill }
 * </pre>
 */
public class MidStreamProperties {

	/** {@code fail} (PartialStreamException), {@code notice} (append the notice text and complete) or {@code continue}. */
	private MidStreamMode mode = MidStreamMode.FAIL;

	/** The text appended in {@code notice} mode. */
	@Nullable
	private String notice;

	/** Continuation requests per answer in {@code continue} mode. Default: 2. */
	private int maxContinuations = 2;

	/** How a continuation is asked for in {@code continue} mode. */
	private ContinuationMode continuation = ContinuationMode.USER_CONTINUE;

	public MidStreamMode getMode() {
		return mode;
	}

	public void setMode(MidStreamMode mode) {
		this.mode = mode;
	}

	public @Nullable String getNotice() {
		return notice;
	}

	public void setNotice(@Nullable String notice) {
		this.notice = notice;
	}

	public int getMaxContinuations() {
		return maxContinuations;
	}

	public void setMaxContinuations(int maxContinuations) {
		this.maxContinuations = maxContinuations;
	}

	public ContinuationMode getContinuation() {
		return continuation;
	}

	public void setContinuation(ContinuationMode continuation) {
		this.continuation = continuation;
	}

	/** Mid-stream failure handling. */
	public enum MidStreamMode {
		/** End with {@code PartialStreamException}. */
		FAIL,
		/** Append a notice chunk and complete. */
		NOTICE,
		/** Ask the model to continue where it stopped. */
		CONTINUE
	}

	/** How a continuation request is phrased. */
	public enum ContinuationMode {
		/** The partial answer as an assistant message, then a user message asking to continue. */
		USER_CONTINUE,
		/** The partial answer as an assistant message the model extends (Anthropic-style prefill). */
		ASSISTANT_PREFILL
	}
}
