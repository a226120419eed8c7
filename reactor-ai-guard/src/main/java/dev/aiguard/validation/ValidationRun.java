package dev.aiguard.validation;

import java.util.ArrayList;
import java.util.List;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.internal.Callbacks;
import dev.aiguard.stage.AnswerJudge;
import dev.aiguard.stage.StageRun;
import org.jspecify.annotations.Nullable;
import reactor.util.context.Context;

/**
 * The output validation of one request, its {@link ValidationStage}'s run: per content chunk
 * ({@link #afterContent}), it feeds the streaming validators and keeps what the end-of-attempt
 * validators read (the text only when one of them reads it; whether the answer is blank and its
 * tool calls always); at the end of an attempt it asks them for a verdict. The attempt's watch
 * feeds it on the delivering thread, after each content chunk went to its target; the verdict is
 * asked once the attempt has ended.
 *
 * <p>Per chunk it reads only what some validator needs: once the answer is known not to be blank
 * and no validator reads the text nor watches the stream, a chunk costs a type check and one field
 * comparison (does it carry tool calls?).
 */
final class ValidationRun implements StageRun, AnswerJudge {

	private final OutputValidator[] validators;
	/** The streaming validators' watch (one, or all of them in turn), or {@code null} when there are none. */
	private final StreamingValidator.@Nullable Watch watch;
	@Nullable
	private final StringBuilder text;
	private boolean blank;
	/** Whether a chunk's text is read at all: kept, watched, or still needed to tell a blank answer. */
	private boolean readsText;
	/** Tool calls of the attempt by index, assembled from their deltas; {@code null} until the first. */
	@Nullable
	private List<ToolCallParts> toolCalls;

	/** A validator asks for an attempt's leading whitespace-only chunks to be held. */
	private final boolean holdsLeadingWhitespace;

	/** Rejections so far: a retry after a rejection is granted once per request. */
	private int rejections;
	/** The last rejection's validator, answer and reason, for the retry request. */
	@Nullable
	private OutputValidator rejectedBy;
	@Nullable
	private Answer rejected;
	@Nullable
	private String violation;

	ValidationRun(List<OutputValidator> validators, List<StreamingValidator> streaming) {
		this.validators = validators.toArray(new OutputValidator[0]);
		StreamingValidator.Watch[] watches = new StreamingValidator.Watch[streaming.size()];
		for (int i = 0; i < watches.length; i++) {
			watches[i] = streaming.get(i).newWatch();
		}
		this.watch = watches.length == 0 ? null : watches.length == 1 ? watches[0] : new AllWatches(watches);
		boolean keepText = false;
		boolean holdsBlanks = false;
		for (OutputValidator v : this.validators) {
			keepText |= v.needsText();
			holdsBlanks |= v.holdsLeadingWhitespace();
		}
		this.holdsLeadingWhitespace = holdsBlanks;
		this.text = keepText ? new StringBuilder() : null;
		this.blank = true;
		this.readsText = true;
	}

	@Override
	public AnswerJudge judge() {
		return this;
	}

	@Override
	public boolean holdsLeadingWhitespace() {
		return holdsLeadingWhitespace;
	}

	/** A realtime attempt starts: what the previous one streamed is forgotten. */
	@Override
	public void startAttempt() {
		if (text != null) {
			text.setLength(0);
		}
		blank = true;
		readsText = true;
		toolCalls = null;
		if (watch != null) {
			watch.reset();
		}
	}

	/** @return whether a validator holds the answer to {@code request} back until it passed */
	@Override
	public boolean holds(@Nullable ChatRequest request) {
		for (OutputValidator v : validators) {
			if (v.holdsAnswer(request)) {
				return true;
			}
		}
		return false;
	}

	/**
	 * Notes a content chunk that was just delivered. O(1) per chunk besides the streaming
	 * validators' own work and the text append (only when kept); allocates nothing unless the chunk
	 * carries a tool-call delta.
	 *
	 * @throws InvalidOutputException when a streaming validator cuts the stream
	 */
	@Override
	public void afterContent(Object chunk) {
		if (!(chunk instanceof ChatChunk)) {
			return;
		}
		ChatChunk c = (ChatChunk) chunk;
		if (c.hasToolCalls()) {
			assemble(c.toolCalls());
		}
		if (readsText) {
			String t = c.text();
			if (!t.isEmpty()) {
				onText(t);
			}
		}
	}

	private void onText(String t) {
		if (text != null) {
			text.append(t);
		}
		if (blank) {
			noteText(t);
		}
		StreamingValidator.Watch w = watch;
		if (w != null) {
			InvalidOutputException cut = w.onText(t);
			if (cut != null) {
				// the watch ends the attempt with what it throws, the chunk counted as delivered
				throw cut;
			}
		}
	}

	/** Until the answer has a visible character: is it this chunk? Then the text is read only if kept or watched. */
	private void noteText(String t) {
		if (!t.isBlank()) {
			blank = false;
			readsText = text != null || watch != null;
		}
	}

	private void assemble(List<ToolCallDelta> deltas) {
		List<ToolCallParts> calls = toolCalls;
		if (calls == null) {
			calls = new ArrayList<>(2);
			toolCalls = calls;
		}
		for (ToolCallDelta d : deltas) {
			ToolCallParts parts = null;
			for (ToolCallParts p : calls) {
				if (p.index == d.index()) {
					parts = p;
					break;
				}
			}
			if (parts == null) {
				parts = new ToolCallParts(d.index());
				calls.add(parts);
			}
			if (d.id() != null) {
				parts.id = d.id();
			}
			if (d.name() != null) {
				parts.name = d.name();
			}
			if (d.argumentsDelta() != null) {
				parts.arguments.append(d.argumentsDelta());
			}
		}
	}

	/**
	 * The attempt completed: the end-of-attempt validators judge its answer, in order. A validator
	 * that throws is skipped; what it threw goes to {@code Hooks.onErrorDropped}.
	 *
	 * @return the rejection, or {@code null} when the answer passed
	 */
	@Override
	@Nullable
	public InvalidOutputException verdict(@Nullable String finishReason, @Nullable ChatRequest request,
			Context context) {
		if (validators.length == 0) {
			return null;
		}
		List<ToolCall> calls = List.of();
		if (toolCalls != null) {
			calls = new ArrayList<>(toolCalls.size());
			for (ToolCallParts p : toolCalls) {
				calls.add(new ToolCall(p.id != null ? p.id : "", p.name != null ? p.name : "", p.arguments.toString()));
			}
		}
		Answer answer = text != null ? Answer.of(text.toString(), calls, finishReason, request)
				: Answer.withoutText(blank, calls, finishReason, request);
		for (OutputValidator v : validators) {
			String reason;
			try {
				reason = v.check(answer);
			}
			catch (Throwable validatorFailure) {
				Callbacks.dropped(validatorFailure, context);
				continue;
			}
			if (reason != null) {
				rejections++;
				rejectedBy = v;
				rejected = answer;
				violation = reason;
				return new InvalidOutputException(v.name(), reason, rejections == 1 && v.retryable());
			}
		}
		return null;
	}

	/**
	 * @return the request a retry after the last rejection sends: what its validator makes of
	 *         {@code request}, or {@code request} when the validator fails
	 */
	@Override
	public ChatRequest retryRequest(ChatRequest request, Context context) {
		OutputValidator v = rejectedBy;
		if (v == null || rejected == null || violation == null) {
			return request;
		}
		try {
			ChatRequest next = v.retryRequest(request, rejected, violation);
			return next != null ? next : request;
		}
		catch (Throwable validatorFailure) {
			Callbacks.dropped(validatorFailure, context);
			return request;
		}
	}

	/** One tool call being streamed. */
	private static final class ToolCallParts {

		final int index;
		@Nullable
		String id;
		@Nullable
		String name;
		final StringBuilder arguments = new StringBuilder();

		ToolCallParts(int index) {
			this.index = index;
		}
	}

	/** Several streaming validators as one watch: each in turn, the first cut wins. */
	private static final class AllWatches implements StreamingValidator.Watch {

		private final StreamingValidator.Watch[] watches;

		AllWatches(StreamingValidator.Watch[] watches) {
			this.watches = watches;
		}

		@Override
		public void reset() {
			for (StreamingValidator.Watch w : watches) {
				w.reset();
			}
		}

		@Override
		@Nullable
		public InvalidOutputException onText(String text) {
			for (StreamingValidator.Watch w : watches) {
				InvalidOutputException cut = w.onText(text);
				if (cut != null) {
					return cut;
				}
			}
			return null;
		}
	}
}
