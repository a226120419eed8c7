package dev.aiguard;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.CallbackException;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.Outcome;
import dev.aiguard.stage.AttemptEnd;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.truncation.TokenCounter;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * How the last realtime attempt of a request ended, as its stages read it. One per request, filled
 * again at each attempt's end; the provider's usage and the prompt estimate are read only when a
 * stage asks, and once per attempt (per request sent, for the estimate).
 */
final class EndedAttempt<T> implements AttemptEnd {

	private final ChunkInspector<T> inspector;
	private final Context context;
	@Nullable
	private StallWatch<T> watch;
	private Outcome outcome = Outcome.CANCELLED;
	@Nullable
	private Throwable error;
	@Nullable
	private ChatRequest request;
	private boolean usageRead;
	private int reportedPrompt;
	private int reportedCompletion;
	/** The request {@link #estimate} was made for. */
	@Nullable
	private ChatRequest estimated;
	private int estimate;

	EndedAttempt(ChunkInspector<T> inspector, Context context) {
		this.inspector = inspector;
		this.context = context;
	}

	EndedAttempt<T> of(StallWatch<T> ended, Outcome how, @Nullable Throwable why, @Nullable ChatRequest sent) {
		watch = ended;
		outcome = how;
		error = why;
		request = sent;
		usageRead = false;
		return this;
	}

	@Override
	public boolean sent() {
		return true;
	}

	@Override
	public Outcome outcome() {
		return outcome;
	}

	@Override
	@Nullable
	public Throwable error() {
		return error;
	}

	@Override
	public long timeToFirstTokenNanos() {
		return watch.timeToFirstTokenNanos();
	}

	@Override
	public long contentChunks() {
		return watch.tokens();
	}

	@Override
	public boolean capped() {
		return watch.capped();
	}

	@Override
	public int reportedPromptTokens() {
		readUsage();
		return reportedPrompt;
	}

	@Override
	public int reportedCompletionTokens() {
		readUsage();
		return reportedCompletion;
	}

	/** Reads the usage chunk once; an inspector that throws leaves both counts unknown. */
	private void readUsage() {
		if (usageRead) {
			return;
		}
		usageRead = true;
		reportedPrompt = -1;
		reportedCompletion = -1;
		T usage = watch.usageChunk();
		if (usage == null) {
			return;
		}
		try {
			reportedPrompt = inspector.promptTokens(usage);
			reportedCompletion = inspector.completionTokens(usage);
		}
		catch (Throwable inspectorFailure) {
			Operators.onErrorDropped(CallbackException.threw("ChunkInspector", inspectorFailure), context);
		}
	}

	/** Estimated (characters / 4) once per request sent; 0 (unknown) without a request. */
	@Override
	public int estimatedPromptTokens() {
		ChatRequest sent = request;
		if (sent == null) {
			return 0;
		}
		if (sent != estimated) {
			estimated = sent;
			estimate = TokenCounter.estimate().count(sent.messages());
		}
		return estimate;
	}
}
