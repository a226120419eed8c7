package dev.aiguard.chat;

import java.util.List;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One message of a conversation.
 *
 * @param role who said it
 * @param content its text (never {@code null}; empty for an assistant message that only calls tools)
 * @param toolCalls the tool calls an assistant message made (empty otherwise)
 * @param toolCallId for a {@link Role#TOOL} message, the id of the call it answers
 */
public record ChatMessage(Role role, String content, List<ToolCall> toolCalls, @Nullable String toolCallId) {

	/** Who said a message. */
	public enum Role {
		SYSTEM, USER, ASSISTANT, TOOL;

		/** @return the lower-case wire name ({@code system}, {@code user}, ...). */
		public String wireName() {
			return name().toLowerCase(java.util.Locale.ROOT);
		}

		/**
		 * @throws IllegalArgumentException naming the value when it is not a role
		 */
		public static Role parse(String text) {
			Objects.requireNonNull(text, "role");
			for (Role r : values()) {
				if (r.wireName().equalsIgnoreCase(text.trim())) {
					return r;
				}
			}
			throw new IllegalArgumentException("unknown role '" + text + "': expected system, user, assistant or tool");
		}
	}

	public ChatMessage {
		Objects.requireNonNull(role, "role");
		content = content == null ? "" : content;
		toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
		if (role == Role.TOOL && toolCallId == null) {
			throw new IllegalArgumentException("toolCallId is required for a tool message");
		}
	}

	public static ChatMessage system(String content) {
		return new ChatMessage(Role.SYSTEM, content, List.of(), null);
	}

	public static ChatMessage user(String content) {
		return new ChatMessage(Role.USER, content, List.of(), null);
	}

	public static ChatMessage assistant(String content) {
		return new ChatMessage(Role.ASSISTANT, content, List.of(), null);
	}

	/** An assistant message that calls tools. */
	public static ChatMessage assistantToolCalls(List<ToolCall> calls) {
		return new ChatMessage(Role.ASSISTANT, "", calls, null);
	}

	/** The result of the tool call {@code toolCallId}. */
	public static ChatMessage tool(String toolCallId, String content) {
		return new ChatMessage(Role.TOOL, content, List.of(), toolCallId);
	}

	/** @return a copy with other content, same role and tool links. */
	public ChatMessage withContent(String newContent) {
		return new ChatMessage(role, newContent, toolCalls, toolCallId);
	}
}
