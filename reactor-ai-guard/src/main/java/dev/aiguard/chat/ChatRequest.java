package dev.aiguard.chat;

import java.util.List;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * A provider-neutral chat request. Immutable; the {@code with...} methods return copies, so the
 * guard can shrink or extend a request between attempts without touching the caller's.
 *
 * <pre>{@code
 * ChatRequest request = ChatRequest.of("gpt-4o-mini",
 *     List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hello")));
 * }</pre>
 *
 * @param model the model name ({@code null} lets the client use its default)
 * @param messages the conversation, never empty
 * @param maxTokens the output token limit, or {@code null} for the provider's default
 * @param temperature sampling temperature, or {@code null} for the provider's default
 * @param responseFormat the structured output asked for, or {@code null} for free text
 */
public record ChatRequest(String model, List<ChatMessage> messages, @Nullable Integer maxTokens,
		@Nullable Double temperature, @Nullable ResponseFormat responseFormat) {

	public ChatRequest {
		Objects.requireNonNull(messages, "messages");
		messages = List.copyOf(messages);
		if (messages.isEmpty()) {
			throw new IllegalArgumentException("messages must not be empty");
		}
		if (maxTokens != null && maxTokens <= 0) {
			throw new IllegalArgumentException("maxTokens must be > 0, was " + maxTokens);
		}
	}

	/** A request for free text (no response format). */
	public ChatRequest(String model, List<ChatMessage> messages, @Nullable Integer maxTokens,
			@Nullable Double temperature) {
		this(model, messages, maxTokens, temperature, null);
	}

	public static ChatRequest of(String model, List<ChatMessage> messages) {
		return new ChatRequest(model, messages, null, null, null);
	}

	public ChatRequest withMessages(List<ChatMessage> newMessages) {
		return new ChatRequest(model, newMessages, maxTokens, temperature, responseFormat);
	}

	public ChatRequest withModel(String newModel) {
		return new ChatRequest(newModel, messages, maxTokens, temperature, responseFormat);
	}

	public ChatRequest withMaxTokens(@Nullable Integer newMaxTokens) {
		return new ChatRequest(model, messages, newMaxTokens, temperature, responseFormat);
	}

	/** @param format the structured output to ask for, or {@code null} for free text */
	public ChatRequest withResponseFormat(@Nullable ResponseFormat format) {
		return new ChatRequest(model, messages, maxTokens, temperature, format);
	}

	/** @return the last message, which is what the user just asked (usually). */
	public ChatMessage lastMessage() {
		return messages.get(messages.size() - 1);
	}
}
