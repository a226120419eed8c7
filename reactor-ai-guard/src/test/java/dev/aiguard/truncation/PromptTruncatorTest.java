package dev.aiguard.truncation;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.statistics.StatisticsReport;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

class PromptTruncatorTest {

	private static final TokenCounter ESTIMATE = TokenCounter.estimate();

	/** A message of about {@code tokens} estimated tokens of content. */
	private static String text(String label, int tokens) {
		StringBuilder sb = new StringBuilder(label).append(':');
		while (sb.length() < tokens * 4) {
			sb.append(' ').append(label);
		}
		return sb.substring(0, tokens * 4);
	}

	private static ChatRequest chat(ChatMessage... messages) {
		return ChatRequest.of("m", List.of(messages));
	}

	/** System prompt, then {@code rounds} user/assistant rounds of 100 tokens each, then the final question. */
	private static ChatRequest longChat(int rounds) {
		List<ChatMessage> messages = new ArrayList<>();
		messages.add(ChatMessage.system(text("system", 50)));
		for (int i = 0; i < rounds; i++) {
			messages.add(ChatMessage.user(text("q" + i, 100)));
			messages.add(ChatMessage.assistant(text("a" + i, 100)));
		}
		messages.add(ChatMessage.user(text("final", 60)));
		return ChatRequest.of("m", messages);
	}

	// ---- tokenBudget() ----

	@Test
	void aRequestThatFitsIsReturnedUnchanged() {
		ChatRequest request = longChat(3);
		assertThat(PromptTruncator.tokenBudget().truncate(request, 10_000, ESTIMATE)).isSameAs(request);
	}

	@Test
	void oldestMessagesGoFirstAndTheSystemPromptStays() {
		ChatRequest request = longChat(10);
		int budget = ESTIMATE.count(request.messages()) - 450;
		ChatRequest out = PromptTruncator.tokenBudget().truncate(request, budget, ESTIMATE);

		assertThat(ESTIMATE.count(out.messages())).isLessThanOrEqualTo(budget);
		assertThat(out.messages().get(0)).isEqualTo(request.messages().get(0));
		assertThat(out.lastMessage()).isEqualTo(request.lastMessage());
		// 450 tokens over: the five oldest messages (104 tokens each) go, nothing else
		List<ChatMessage> expected = new ArrayList<>(request.messages());
		expected.subList(1, 6).clear();
		assertThat(out.messages()).containsExactlyElementsOf(expected);
		assertThat(out.model()).isEqualTo(request.model());
	}

	@Test
	void aToolCallAndItsResultsAreDroppedTogether() {
		ChatMessage call = ChatMessage.assistantToolCalls(List.of(new ToolCall("c1", "search", "{\"q\":\"tcp\"}"),
				new ToolCall("c2", "search", "{\"q\":\"udp\"}")));
		ChatRequest request = chat(ChatMessage.system("You are terse."), ChatMessage.user(text("first", 20)), call,
				ChatMessage.tool("c1", text("result1", 200)), ChatMessage.tool("c2", text("result2", 200)),
				ChatMessage.assistant(text("answer", 30)), ChatMessage.user(text("follow-up", 20)));
		// dropping the first question and the call would fit if counted alone; their results must go too
		int budget = ESTIMATE.count(request.messages()) - ESTIMATE.count(request.messages().get(1)) - ESTIMATE.count(call);
		ChatRequest out = PromptTruncator.tokenBudget().truncate(request, budget, ESTIMATE);

		assertThat(out.messages()).containsExactly(request.messages().get(0), request.messages().get(5),
				request.messages().get(6));
		assertThat(out.messages()).noneMatch(m -> m.role() == ChatMessage.Role.TOOL);
	}

	@Test
	void aToolCallAnsweredInTheTurnInProgressIsKept() {
		ChatMessage call = ChatMessage.assistantToolCalls(List.of(new ToolCall("c9", "lookup", "{}")));
		ChatRequest request = chat(ChatMessage.user(text("old question", 100)), call, ChatMessage.user("meanwhile: hurry"),
				ChatMessage.tool("c9", text("result", 50)));
		// dropping the old question is not enough; the call must stay, so its result is shortened instead
		ChatRequest out = PromptTruncator.tokenBudget().truncate(request, 60, ESTIMATE);
		assertThat(out.messages()).hasSize(3);
		assertThat(out.messages().subList(0, 2)).containsExactly(call, request.messages().get(2));
		assertThat(out.lastMessage().toolCallId()).isEqualTo("c9");
		assertThat(out.lastMessage().content()).contains(PromptTruncator.ELISION_MARKER);
	}

	@Test
	void anOrphanToolResultIsDroppedOnItsOwn() {
		ChatRequest request = chat(ChatMessage.tool("gone", text("stale result", 100)),
				ChatMessage.assistant(text("answer", 10)), ChatMessage.user("and now?"));
		ChatRequest out = PromptTruncator.tokenBudget().truncate(request, 40, ESTIMATE);
		assertThat(out.messages()).containsExactly(request.messages().get(1), request.messages().get(2));
	}

	@Test
	void theLongestRemainingMessageIsShortenedInTheMiddle() {
		String file = "BEGIN " + "lorem ipsum dolor sit amet ".repeat(1_500) + " END";
		ChatMessage read = ChatMessage.assistantToolCalls(List.of(new ToolCall("r1", "read_file", "{\"path\":\"a.txt\"}")));
		ChatRequest request = chat(ChatMessage.system("Summarise files."), ChatMessage.user("Summarise a.txt"), read,
				ChatMessage.tool("r1", file));
		ChatRequest out = PromptTruncator.tokenBudget().truncate(request, 2_000, ESTIMATE);

		assertThat(ESTIMATE.count(out.messages())).isLessThanOrEqualTo(2_000).isGreaterThan(1_900);
		assertThat(out.messages()).hasSize(4);
		assertThat(out.messages().subList(0, 3)).containsExactlyElementsOf(request.messages().subList(0, 3));
		String shortened = out.lastMessage().content();
		assertThat(shortened).startsWith("BEGIN lorem ipsum").endsWith("amet  END").contains(PromptTruncator.ELISION_MARKER);
		int cut = shortened.indexOf(PromptTruncator.ELISION_MARKER);
		assertThat(file).startsWith(shortened.substring(0, cut))
				.endsWith(shortened.substring(cut + PromptTruncator.ELISION_MARKER.length()));
		assertThat(out.lastMessage().toolCallId()).isEqualTo("r1");
	}

	@Test
	void theSystemPromptIsShortenedOnlyWhenNothingElseIsLeft() {
		ChatRequest request = chat(ChatMessage.system(text("rules", 600)), ChatMessage.assistant(text("old answer", 300)),
				ChatMessage.user(text("question", 50)));
		ChatRequest out = PromptTruncator.tokenBudget().truncate(request, 400, ESTIMATE);
		assertThat(out.messages()).hasSize(2);
		assertThat(out.messages().get(0).role()).isEqualTo(ChatMessage.Role.SYSTEM);
		assertThat(out.messages().get(0).content()).contains(PromptTruncator.ELISION_MARKER).startsWith("rules:");
		assertThat(out.lastMessage()).isEqualTo(request.lastMessage());
		assertThat(ESTIMATE.count(out.messages())).isLessThanOrEqualTo(400);
	}

	@Test
	void promptTooLargeWhenTheFinalUserMessageAloneDoesNotFit() {
		ChatRequest request = chat(ChatMessage.system("Be brief."), ChatMessage.assistant(text("earlier", 200)),
				ChatMessage.user(text("pasted document", 5_000)));
		PromptTooLargeException e = catchThrowableOfType(PromptTooLargeException.class,
				() -> PromptTruncator.tokenBudget().truncate(request, 1_000, ESTIMATE));
		int userAlone = ESTIMATE.count(List.of(request.lastMessage()));
		assertThat(e.limit()).hasValue(1_000);
		assertThat(e.smallestSize()).isGreaterThanOrEqualTo(userAlone).isLessThan(userAlone + 20);
		assertThat(e).hasMessageContaining("1000 tokens").hasMessageContaining(e.smallestSize() + " tokens");
	}

	@Test
	void theTurnInProgressKeepsItsUserMessageWhenTheConversationHasNone() {
		ChatRequest request = chat(ChatMessage.system(text("sys", 100)), ChatMessage.assistant(text("hello", 100)));
		ChatRequest out = PromptTruncator.tokenBudget().truncate(request, 150, ESTIMATE);
		assertThat(out.lastMessage()).isEqualTo(request.lastMessage());
	}

	@Test
	void exactCountingWorksTheSameWay() {
		TokenCounter exact = TokenCounter.jtokkit("cl100k_base");
		ChatRequest request = longChat(8);
		int budget = exact.count(request.messages()) / 2;
		ChatRequest out = PromptTruncator.tokenBudget().truncate(request, budget, exact);
		assertThat(exact.count(out.messages())).isLessThanOrEqualTo(budget);
		assertThat(out.messages().get(0)).isEqualTo(request.messages().get(0));
		assertThat(out.lastMessage()).isEqualTo(request.lastMessage());
	}

	@Test
	void aBudgetMustBePositive() {
		assertThatThrownBy(() -> PromptTruncator.tokenBudget().truncate(longChat(1), 0, ESTIMATE))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tokenBudget").hasMessageContaining("0");
		assertThatThrownBy(() -> PromptTruncator.keepSystemAndLastTurns(2).truncate(longChat(1), -5, ESTIMATE))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("tokenBudget").hasMessageContaining("-5");
	}

	@Test
	void elisionNeverSplitsASurrogatePair() {
		String emoji = "\uD83D\uDE00".repeat(100);
		for (int keep = 0; keep < 200; keep++) {
			String out = TokenBudgetTruncator.keep(emoji, keep);
			for (int i = 0; i < out.length(); i++) {
				char c = out.charAt(i);
				if (Character.isHighSurrogate(c)) {
					assertThat(Character.isLowSurrogate(out.charAt(i + 1))).isTrue();
				}
				if (Character.isLowSurrogate(c)) {
					assertThat(Character.isHighSurrogate(out.charAt(i - 1))).isTrue();
				}
			}
		}
	}

	// ---- keepSystemAndLastTurns(n) ----

	@Test
	void keepsTheSystemPromptAndTheLastRounds() {
		ChatRequest request = longChat(5);
		ChatRequest out = PromptTruncator.keepSystemAndLastTurns(2).truncate(request, 10_000, ESTIMATE);
		List<ChatMessage> m = request.messages();
		// rounds start at user messages: q4 + a4, then the final question
		assertThat(out.messages()).containsExactly(m.get(0), m.get(9), m.get(10), m.get(11));
	}

	@Test
	void keepsFewerRoundsWhenTheBudgetDemands() {
		ChatRequest request = longChat(5);
		int finalRoundOnly = ESTIMATE.count(List.of(request.messages().get(0), request.lastMessage()));
		ChatRequest out = PromptTruncator.keepSystemAndLastTurns(4).truncate(request, finalRoundOnly + 10, ESTIMATE);
		assertThat(out.messages()).containsExactly(request.messages().get(0), request.lastMessage());
	}

	@Test
	void keepingTurnsFailsWhenTheFinalRoundDoesNotFit() {
		ChatRequest request = longChat(2);
		assertThatThrownBy(() -> PromptTruncator.keepSystemAndLastTurns(1).truncate(request, 50, ESTIMATE))
				.isInstanceOf(PromptTooLargeException.class).hasMessageContaining("50 tokens");
		assertThatThrownBy(() -> PromptTruncator.keepSystemAndLastTurns(0))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("n must be >= 1, was 0");
	}

	@Test
	void keepingAsManyTurnsAsThereAreChangesNothing() {
		ChatRequest request = longChat(2);
		assertThat(PromptTruncator.keepSystemAndLastTurns(3).truncate(request, 10_000, ESTIMATE)).isSameAs(request);
	}

	// ---- properties ----

	@Provide
	Arbitrary<ChatRequest> conversations() {
		Arbitrary<Integer> sizes = Arbitraries.integers().between(0, 400);
		Arbitrary<List<Integer>> kinds = Arbitraries.integers().between(0, 3).list().ofMinSize(1).ofMaxSize(25);
		return kinds.flatMap(ks -> sizes.list().ofSize(ks.size() + 1).map(lengths -> {
			List<ChatMessage> messages = new ArrayList<>();
			int callId = 0;
			for (int i = 0; i < ks.size(); i++) {
				String content = "x".repeat(lengths.get(i));
				switch (ks.get(i)) {
					case 0 -> messages.add(ChatMessage.system(content));
					case 1 -> messages.add(ChatMessage.user(content));
					case 2 -> messages.add(ChatMessage.assistant(content));
					default -> {
						String id = "c" + (callId++);
						messages.add(ChatMessage.assistantToolCalls(List.of(new ToolCall(id, "f", "{}"))));
						messages.add(ChatMessage.tool(id, content));
					}
				}
			}
			messages.add(ChatMessage.user("y".repeat(lengths.get(ks.size()))));
			return ChatRequest.of("m", messages);
		}));
	}

	@Property(tries = 500)
	@StatisticsReport(onFailureOnly = true)
	void truncationFitsOrSaysWhyAndKeepsWhatMustStay(@ForAll("conversations") ChatRequest request,
			@ForAll @IntRange(min = 1, max = 1500) int budget) {
		// the least the prompt can shrink to: the final user message whole, system prompts down to the marker
		int smallest = ESTIMATE.requestOverhead() + ESTIMATE.count(request.lastMessage());
		for (ChatMessage m : request.messages()) {
			if (m.role() == ChatMessage.Role.SYSTEM) {
				smallest += Math.min(ESTIMATE.count(m), ESTIMATE.count(m.withContent(PromptTruncator.ELISION_MARKER)));
			}
		}
		ChatRequest out;
		try {
			out = PromptTruncator.tokenBudget().truncate(request, budget, ESTIMATE);
		}
		catch (PromptTooLargeException e) {
			Statistics.label("outcome").collect("too large");
			assertThat(smallest).as("refused although it could fit").isGreaterThan(budget);
			assertThat(e.smallestSize()).isEqualTo(smallest);
			assertThat(e.limit()).hasValue(budget);
			return;
		}
		Statistics.label("outcome").collect(out == request ? "unchanged" : "truncated");
		assertThat(smallest).isLessThanOrEqualTo(budget);
		assertThat(ESTIMATE.count(out.messages())).isLessThanOrEqualTo(budget);
		assertThat(out.lastMessage()).isEqualTo(request.lastMessage());
		assertThat(out.messages().stream().filter(m -> m.role() == ChatMessage.Role.SYSTEM).count())
				.isEqualTo(request.messages().stream().filter(m -> m.role() == ChatMessage.Role.SYSTEM).count());
		// what remains is the original order, each message whole or shortened around the marker
		int from = 0;
		for (ChatMessage kept : out.messages()) {
			int at = -1;
			for (int i = from; i < request.messages().size(); i++) {
				ChatMessage original = request.messages().get(i);
				if (original.role() == kept.role() && original.toolCalls().equals(kept.toolCalls())
						&& java.util.Objects.equals(original.toolCallId(), kept.toolCallId())
						&& (original.content().equals(kept.content()) || kept.content().contains(PromptTruncator.ELISION_MARKER))) {
					at = i;
					break;
				}
			}
			assertThat(at).as("kept message %s comes from the original, in order", kept).isGreaterThanOrEqualTo(0);
			from = at + 1;
		}
		// tool calls and their results stay paired
		Set<String> calls = new HashSet<>();
		Set<String> results = new HashSet<>();
		for (ChatMessage m : out.messages()) {
			m.toolCalls().forEach(c -> calls.add(c.id()));
			if (m.toolCallId() != null) {
				results.add(m.toolCallId());
			}
		}
		assertThat(results).isEqualTo(calls);
	}

	@Property(tries = 500)
	void theConversationGeneratorExercisesEveryOutcome(@ForAll("conversations") ChatRequest request,
			@ForAll @IntRange(min = 1, max = 1500) int budget) {
		String outcome;
		try {
			ChatRequest out = PromptTruncator.tokenBudget().truncate(request, budget, ESTIMATE);
			outcome = out == request ? "unchanged" : "truncated";
		}
		catch (PromptTooLargeException e) {
			outcome = "too large";
		}
		Statistics.label("outcome").collect(outcome);
		Statistics.label("outcome").coverage(c -> {
			c.check("truncated").percentage(p -> p > 20.0);
			c.check("too large").percentage(p -> p > 5.0);
			c.check("unchanged").percentage(p -> p > 5.0);
		});
	}
}
