package dev.aiguard.truncation;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;

/**
 * {@link PromptTruncator#tokenBudget()}. Counts each message once and then works on the sums
 * (a {@link TokenCounter}'s list count is its messages plus a constant), so it costs one pass of
 * the counter plus a binary search per shortened message.
 */
final class TokenBudgetTruncator implements PromptTruncator {

	static final TokenBudgetTruncator INSTANCE = new TokenBudgetTruncator();

	private TokenBudgetTruncator() {
	}

	@Override
	public ChatRequest truncate(ChatRequest request, int tokenBudget, TokenCounter counter) {
		Objects.requireNonNull(request, "request");
		Objects.requireNonNull(counter, "counter");
		Conversation.checkBudget(tokenBudget);
		List<ChatMessage> messages = request.messages();
		int total = counter.count(messages);
		if (total <= tokenBudget) {
			return request;
		}
		int n = messages.size();
		ChatMessage[] current = messages.toArray(new ChatMessage[0]);
		int[] sizes = new int[n];
		for (int i = 0; i < n; i++) {
			sizes[i] = counter.count(current[i]);
		}
		long size = total;
		int finalTurn = Conversation.turnInProgress(messages);
		boolean[] dropped = new boolean[n];

		// 1. drop whole messages, oldest first; a tool call goes with its results
		for (int i = 0; i < finalTurn && size > tokenBudget; i++) {
			if (dropped[i] || current[i].role() == ChatMessage.Role.SYSTEM) {
				continue;
			}
			ChatMessage m = current[i];
			if (m.toolCalls().isEmpty()) {
				size -= drop(i, sizes, dropped);
				continue;
			}
			Set<String> ids = new HashSet<>();
			for (ToolCall call : m.toolCalls()) {
				ids.add(call.id());
			}
			List<Integer> results = new ArrayList<>();
			boolean answeredInFinalTurn = false;
			for (int j = i + 1; j < n; j++) {
				if (current[j].role() == ChatMessage.Role.TOOL && ids.contains(current[j].toolCallId())) {
					results.add(j);
					answeredInFinalTurn |= j >= finalTurn;
				}
			}
			if (answeredInFinalTurn) {
				// the turn in progress needs this call: keeping it is the only valid choice
				continue;
			}
			size -= drop(i, sizes, dropped);
			for (int j : results) {
				if (!dropped[j]) {
					size -= drop(j, sizes, dropped);
				}
			}
		}

		// 2. shorten the longest remaining messages in the middle; system prompts last, final user message never
		boolean[] exhausted = new boolean[n];
		while (size > tokenBudget) {
			int pick = longest(current, sizes, dropped, exhausted, finalTurn, false);
			if (pick < 0) {
				pick = longest(current, sizes, dropped, exhausted, finalTurn, true);
			}
			if (pick < 0) {
				throw new PromptTooLargeException(tokenBudget, (int) Math.min(Integer.MAX_VALUE, size));
			}
			ChatMessage m = current[pick];
			long excess = size - tokenBudget;
			int target = (int) Math.max(0L, counter.count(m.content()) - excess);
			String shortened = elide(m.content(), target, counter);
			ChatMessage replaced = m.withContent(shortened);
			int newSize = counter.count(replaced);
			if (shortened.equals(ELISION_MARKER) || newSize >= sizes[pick]) {
				exhausted[pick] = true;
			}
			if (newSize < sizes[pick]) {
				size += newSize - sizes[pick];
				sizes[pick] = newSize;
				current[pick] = replaced;
			}
		}

		List<ChatMessage> kept = new ArrayList<>(n);
		for (int i = 0; i < n; i++) {
			if (!dropped[i]) {
				kept.add(current[i]);
			}
		}
		int result = counter.count(kept);
		if (result > tokenBudget) {
			// only a counter whose list count is not its messages plus a constant gets here
			throw new PromptTooLargeException(tokenBudget, result);
		}
		return request.withMessages(kept);
	}

	private static int drop(int i, int[] sizes, boolean[] dropped) {
		dropped[i] = true;
		return sizes[i];
	}

	/** @return the index of the longest message that may still be shortened, or -1 */
	private static int longest(ChatMessage[] current, int[] sizes, boolean[] dropped, boolean[] exhausted,
			int finalTurn, boolean system) {
		int pick = -1;
		for (int i = 0; i < current.length; i++) {
			if (dropped[i] || exhausted[i] || i == finalTurn || current[i].content().isEmpty()
					|| (current[i].role() == ChatMessage.Role.SYSTEM) != system) {
				continue;
			}
			if (pick < 0 || sizes[i] > sizes[pick]) {
				pick = i;
			}
		}
		return pick;
	}

	/**
	 * @return {@code text} with its middle replaced by the marker, as long as possible within
	 * {@code targetTokens}; the marker alone when nothing of the text fits
	 */
	static String elide(String text, int targetTokens, TokenCounter counter) {
		if (targetTokens <= counter.count(ELISION_MARKER) || text.length() <= 1) {
			return ELISION_MARKER;
		}
		int low = 0;
		int high = text.length() - 1;
		while (low < high) {
			int mid = (int) ((low + (long) high + 1L) / 2L);
			if (counter.count(keep(text, mid)) <= targetTokens) {
				low = mid;
			}
			else {
				high = mid - 1;
			}
		}
		return keep(text, low);
	}

	/** The first and last {@code chars / 2} characters around the marker, never splitting a surrogate pair. */
	static String keep(String text, int chars) {
		int len = text.length();
		int headEnd = (chars + 1) / 2;
		int tailStart = len - (chars - (chars + 1) / 2);
		if (headEnd > 0 && Character.isHighSurrogate(text.charAt(headEnd - 1))) {
			headEnd--;
		}
		if (tailStart < len && Character.isLowSurrogate(text.charAt(tailStart))) {
			tailStart++;
		}
		return text.substring(0, headEnd) + ELISION_MARKER + text.substring(tailStart);
	}

	@Override
	public String toString() {
		return "tokenBudget()";
	}
}
