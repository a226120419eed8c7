package dev.aiguard.validation;

import java.util.List;
import java.util.Objects;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import org.jspecify.annotations.Nullable;

/**
 * What an attempt answered, assembled from its chunks when it ended: what an
 * {@link OutputValidator} judges. The text is kept only when a validator of the policy
 * {@linkplain OutputValidator#needsText() needs it}; whether the answer is blank and its tool
 * calls are always known.
 *
 * <pre>{@code
 * Answer answer = Answer.of("{\"city\":\"Paris\"}", List.of(), "stop", request);
 * assertThat(Validators.jsonSchema().check(answer)).isNull();
 * }</pre>
 */
public final class Answer {

	@Nullable
	private final String text;
	private final boolean blank;
	private final List<ToolCall> toolCalls;
	@Nullable
	private final String finishReason;
	@Nullable
	private final ChatRequest request;

	private Answer(@Nullable String text, boolean blank, List<ToolCall> toolCalls, @Nullable String finishReason,
			@Nullable ChatRequest request) {
		this.text = text;
		this.blank = blank;
		this.toolCalls = List.copyOf(Objects.requireNonNull(toolCalls, "toolCalls"));
		this.finishReason = finishReason;
		this.request = request;
	}

	/**
	 * @param text the answer's text, the deltas joined
	 * @param toolCalls the tool calls it made, assembled from their deltas
	 * @param finishReason why generation stopped, or {@code null}
	 * @param request the request it answers, or {@code null} when the guard does not own it (transform form)
	 */
	public static Answer of(String text, List<ToolCall> toolCalls, @Nullable String finishReason,
			@Nullable ChatRequest request) {
		Objects.requireNonNull(text, "text");
		return new Answer(text, text.isBlank(), toolCalls, finishReason, request);
	}

	/**
	 * An answer whose text was not kept, for validators that never read it.
	 *
	 * @param blank whether the text had no character other than whitespace
	 */
	public static Answer withoutText(boolean blank, List<ToolCall> toolCalls, @Nullable String finishReason,
			@Nullable ChatRequest request) {
		return new Answer(null, blank, toolCalls, finishReason, request);
	}

	/**
	 * @return the answer's text
	 * @throws IllegalStateException when it was not kept: no validator of the policy said it needs it
	 */
	public String text() {
		if (text == null) {
			throw new IllegalStateException("the answer's text was not kept: a validator that reads it must "
					+ "return true from OutputValidator.needsText()");
		}
		return text;
	}

	/** @return whether the text was kept (see {@link OutputValidator#needsText()}) */
	public boolean hasText() {
		return text != null;
	}

	/** @return whether the text is empty or whitespace only */
	public boolean blank() {
		return blank;
	}

	/** @return the tool calls the answer made, assembled from their deltas; empty when none */
	public List<ToolCall> toolCalls() {
		return toolCalls;
	}

	/** @return why generation stopped, or {@code null} when no finish reason was seen */
	@Nullable
	public String finishReason() {
		return finishReason;
	}

	/** @return the request answered, or {@code null} in the transform form */
	@Nullable
	public ChatRequest request() {
		return request;
	}

	@Override
	public String toString() {
		return "Answer{" + (text == null ? (blank ? "blank" : "text not kept") : "text=\"" + text + '"')
				+ (toolCalls.isEmpty() ? "" : ", toolCalls=" + toolCalls) + ", finishReason=" + finishReason + '}';
	}
}
