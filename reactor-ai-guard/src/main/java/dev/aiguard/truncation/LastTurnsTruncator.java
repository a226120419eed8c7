package dev.aiguard.truncation;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;

/** {@link PromptTruncator#keepSystemAndLastTurns(int)}. */
final class LastTurnsTruncator implements PromptTruncator {

	private final int turns;

	LastTurnsTruncator(int turns) {
		this.turns = turns;
	}

	@Override
	public ChatRequest truncate(ChatRequest request, int tokenBudget, TokenCounter counter) {
		Objects.requireNonNull(request, "request");
		Objects.requireNonNull(counter, "counter");
		Conversation.checkBudget(tokenBudget);
		List<ChatMessage> messages = request.messages();
		List<Integer> roundStarts = new ArrayList<>();
		for (int i = 0; i < messages.size(); i++) {
			if (messages.get(i).role() == ChatMessage.Role.USER) {
				roundStarts.add(i);
			}
		}
		if (roundStarts.isEmpty()) {
			roundStarts.add(Conversation.turnInProgress(messages));
		}
		int first = Math.max(0, roundStarts.size() - turns);
		List<ChatMessage> kept = keepFrom(messages, roundStarts.get(first));
		int size = counter.count(kept);
		while (size > tokenBudget && first < roundStarts.size() - 1) {
			first++;
			kept = keepFrom(messages, roundStarts.get(first));
			size = counter.count(kept);
		}
		if (size > tokenBudget) {
			throw new PromptTooLargeException(tokenBudget, size);
		}
		return kept.size() == messages.size() ? request : request.withMessages(kept);
	}

	/** System messages before {@code start}, then everything from {@code start}. */
	private static List<ChatMessage> keepFrom(List<ChatMessage> messages, int start) {
		List<ChatMessage> kept = new ArrayList<>(messages.size());
		for (int i = 0; i < start; i++) {
			if (messages.get(i).role() == ChatMessage.Role.SYSTEM) {
				kept.add(messages.get(i));
			}
		}
		kept.addAll(messages.subList(start, messages.size()));
		return kept;
	}

	@Override
	public String toString() {
		return "keepSystemAndLastTurns(" + turns + ")";
	}
}
