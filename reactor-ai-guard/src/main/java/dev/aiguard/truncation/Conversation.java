package dev.aiguard.truncation;

import java.util.List;

import dev.aiguard.chat.ChatMessage;

/** Structure of a message list that truncators rely on. */
final class Conversation {

	private Conversation() {
	}

	/**
	 * @return where the turn in progress starts: the index of the final user message, or of the
	 * last message when there is no user message
	 */
	static int turnInProgress(List<ChatMessage> messages) {
		for (int i = messages.size() - 1; i >= 0; i--) {
			if (messages.get(i).role() == ChatMessage.Role.USER) {
				return i;
			}
		}
		return messages.size() - 1;
	}

	static void checkBudget(int tokenBudget) {
		if (tokenBudget <= 0) {
			throw new IllegalArgumentException("tokenBudget must be > 0, was " + tokenBudget);
		}
	}
}
