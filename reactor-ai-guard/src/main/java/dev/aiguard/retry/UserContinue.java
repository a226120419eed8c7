package dev.aiguard.retry;

import java.util.ArrayList;
import java.util.List;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;

/** {@link ContinuationStrategy#USER_CONTINUE} and {@link ContinuationStrategy#userContinue(String)}. */
final class UserContinue implements ContinuationStrategy {

	private final String instruction;

	UserContinue(String instruction) {
		this.instruction = instruction;
	}

	@Override
	public ChatRequest continuation(ChatRequest original, String partialText) {
		List<ChatMessage> messages = original.messages();
		ChatMessage last = messages.get(messages.size() - 1);
		List<ChatMessage> next = new ArrayList<>(messages.size() + 2);
		if (AssistantPrefill.isPlainAssistant(last)) {
			// the caller prefilled: what the model wrote belongs to that same assistant turn
			next.addAll(messages.subList(0, messages.size() - 1));
			next.add(ChatMessage.assistant(last.content() + partialText));
		}
		else {
			next.addAll(messages);
			next.add(ChatMessage.assistant(partialText));
		}
		next.add(ChatMessage.user(instruction));
		return original.withMessages(next);
	}

	@Override
	public String toString() {
		return instruction == DEFAULT_INSTRUCTION ? "USER_CONTINUE" : "USER_CONTINUE(\"" + instruction + "\")";
	}
}
