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
 * How the last realtime attempt of one request ended, as the stages that let it through read it.
 * The provider's usage and the prompt estimate are read only when a stage asks, once per attempt
 * (the estimate once per request sent). Made by the {@link RequestLedger} at the first attempt of
 * a request whose policy has stages, and reused for every later one.
 */
final class AttemptRecord<T> implements AttemptEnd {

	private final ChunkInspector<T> inspector;
	private final Context context;
	private StallWatch<T> watch;
	private Outcome outcome = Outcome.CANCELLED;
	@Nullable
	private Throwable error;
	@Nullable
	private ChatRequest sent;
	private boolean usageRead;
	private int reportedPrompt;
	private int reportedCompletion;
	/** The request {@link #estimate} was made for. */
	@Nullable
	private ChatRequest estimated;
	private int estimate;

	AttemptRecord(ChunkInspector<T> inspector, Context context, StallWatch<T> watch) {
		this.inspector = inspector;
		this.context = context;
		this.watch = watch;
	}

	/** @return this record, now of {@code ended}'s attempt */
	AttemptRecord<T> of(StallWatch<T> ended, Outcome how, @Nullable Throwable failure, @Nullable ChatRequest request) {
		watch = ended;
		outcome = how;
		error = failure;
		sent = request;
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

	/** Reads the usage chunk once; an inspector that throws leaves the counts it did not give unknown. */
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
		ChatRequest s = sent;
		if (s == null) {
			return 0;
		}
		if (s != estimated) {
			estimated = s;
			estimate = TokenCounter.estimate().count(s.messages());
		}
		return estimate;
	}
}
