package dev.aiguard.truncation;

import java.util.List;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ToolCall;

/**
 * Counts tokens of prompts, for {@link PromptTruncator}s. Only {@link #count(String)} is abstract;
 * a message adds {@link #messageOverhead()} (role and separators) and its tool calls, a list adds
 * {@link #requestOverhead()} (the tokens that prime the reply). Implementations should keep
 * {@code count(List)} equal to that sum, so truncators can work message by message.
 *
 * <pre>{@code
 * TokenCounter fast  = TokenCounter.estimate();               // characters / 4, no dependency
 * TokenCounter exact = TokenCounter.jtokkit("o200k_base");    // needs com.knuddels:jtokkit
 * int tokens = exact.count(request.messages());
 * }</pre>
 *
 * The estimate is cheap and good enough for English-like text; it undercounts scripts with many
 * tokens per character (CJK). {@link TruncationSpec} corrects for that when the provider says how
 * many tokens it counted.
 */
@FunctionalInterface
public interface TokenCounter {

	/** @return tokens of {@code text} ({@code 0} for {@code null} or empty) */
	int count(String text);

	/** @return tokens every message adds besides its text (default 4) */
	default int messageOverhead() {
		return 4;
	}

	/** @return tokens a whole request adds besides its messages (default 3) */
	default int requestOverhead() {
		return 3;
	}

	/** @return tokens of one message: overhead, content, tool calls and tool-call id */
	default int count(ChatMessage message) {
		long n = messageOverhead() + (long) count(message.content());
		for (ToolCall call : message.toolCalls()) {
			n += count(call.id()) + (long) count(call.name()) + count(call.arguments());
		}
		if (message.toolCallId() != null) {
			n += count(message.toolCallId());
		}
		return saturate(n);
	}

	/** @return tokens of a whole conversation: request overhead plus every message */
	default int count(List<ChatMessage> messages) {
		long n = requestOverhead();
		for (ChatMessage message : messages) {
			n += count(message);
		}
		return saturate(n);
	}

	/**
	 * @return characters / 4 rounded up, 4 tokens per message, 3 per request; no dependency,
	 * no allocation
	 */
	static TokenCounter estimate() {
		return EstimatedTokenCounter.INSTANCE;
	}

	/**
	 * An exact counter on jtokkit, OpenAI's tokenizers in Java (an optional dependency:
	 * {@code com.knuddels:jtokkit}). The encoding's ranks are loaded on first use; build the
	 * counter once, at start-up, not on an event loop. Special tokens in the text are counted as
	 * ordinary text.
	 *
	 * @param encodingName {@code cl100k_base} (GPT-4, GPT-3.5), {@code o200k_base} (GPT-4o and
	 * later), {@code p50k_base} or {@code r50k_base}
	 * @throws IllegalArgumentException when jtokkit has no such encoding
	 * @throws IllegalStateException when jtokkit is not on the classpath
	 */
	static TokenCounter jtokkit(String encodingName) {
		if (encodingName == null || encodingName.isBlank()) {
			throw new IllegalArgumentException("encodingName must not be blank, was "
					+ (encodingName == null ? "null" : "\"" + encodingName + "\""));
		}
		try {
			return JtokkitTokenCounter.create(encodingName);
		}
		catch (LinkageError missing) {
			throw new IllegalStateException(
					"TokenCounter.jtokkit needs com.knuddels:jtokkit on the classpath (an optional dependency)", missing);
		}
	}

	private static int saturate(long n) {
		return n > Integer.MAX_VALUE ? Integer.MAX_VALUE : (int) n;
	}
}
