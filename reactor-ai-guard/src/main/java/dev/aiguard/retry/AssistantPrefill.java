package dev.aiguard.retry;

import java.util.ArrayList;
import java.util.List;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;

/** {@link ContinuationStrategy#ASSISTANT_PREFILL}. */
final class AssistantPrefill implements ContinuationStrategy {

	@Override
	public ChatRequest continuation(ChatRequest original, String partialText) {
		List<ChatMessage> messages = original.messages();
		ChatMessage last = messages.get(messages.size() - 1);
		List<ChatMessage> next = new ArrayList<>(messages.size() + 1);
		String prefill;
		if (isPlainAssistant(last)) {
			// the caller already prefilled: the model's output continued that text
			next.addAll(messages.subList(0, messages.size() - 1));
			prefill = last.content() + partialText;
		}
		else {
			next.addAll(messages);
			prefill = partialText;
		}
		// Anthropic rejects a final assistant message that ends with whitespace
		prefill = prefill.stripTrailing();
		if (prefill.isEmpty()) {
			throw new ContinuationRefusedException("the partial answer has no text to continue from");
		}
		next.add(ChatMessage.assistant(prefill));
		return original.withMessages(next);
	}

	static boolean isPlainAssistant(ChatMessage message) {
		return message.role() == ChatMessage.Role.ASSISTANT && message.toolCalls().isEmpty();
	}

	@Override
	public String toString() {
		return "ASSISTANT_PREFILL";
	}
}
