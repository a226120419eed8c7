package dev.aiguard.retry;

import java.util.List;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ContinuationStrategyTest {

	private static final ChatRequest ORIGINAL = new ChatRequest("claude-x",
			List.of(ChatMessage.system("Be precise."), ChatMessage.user("Explain TCP.")), 800, 0.2);

	@Test
	void assistantPrefillAppendsThePartialAnswerAsTheFinalAssistantMessage() {
		ChatRequest next = ContinuationStrategy.ASSISTANT_PREFILL.continuation(ORIGINAL, "TCP is a reliable", false);
		assertThat(next.messages()).containsExactly(ChatMessage.system("Be precise."),
				ChatMessage.user("Explain TCP."), ChatMessage.assistant("TCP is a reliable"));
		assertThat(next.model()).isEqualTo("claude-x");
		assertThat(next.maxTokens()).isEqualTo(800);
		assertThat(next.temperature()).isEqualTo(0.2);
		assertThat(ORIGINAL.messages()).hasSize(2);
	}

	@Test
	void assistantPrefillRemovesTrailingWhitespace() {
		ChatRequest next = ContinuationStrategy.ASSISTANT_PREFILL.continuation(ORIGINAL, "Steps:\n1. Open \n", false);
		assertThat(next.lastMessage()).isEqualTo(ChatMessage.assistant("Steps:\n1. Open"));
	}

	@Test
	void anExistingPrefillIsExtendedNotRepeated() {
		ChatRequest prefilled = ORIGINAL.withMessages(List.of(ChatMessage.user("List three colours as JSON."),
				ChatMessage.assistant("[")));
		ChatRequest next = ContinuationStrategy.ASSISTANT_PREFILL.continuation(prefilled, "\"red\", \"gr", false);
		assertThat(next.messages()).containsExactly(ChatMessage.user("List three colours as JSON."),
				ChatMessage.assistant("[\"red\", \"gr"));
		ChatRequest asUser = ContinuationStrategy.USER_CONTINUE.continuation(prefilled, "\"red\", \"gr", false);
		assertThat(asUser.messages()).containsExactly(ChatMessage.user("List three colours as JSON."),
				ChatMessage.assistant("[\"red\", \"gr"), ChatMessage.user(ContinuationStrategy.DEFAULT_INSTRUCTION));
	}

	@Test
	void userContinueAddsThePartialAnswerAndARequestToGoOn() {
		ChatRequest next = ContinuationStrategy.USER_CONTINUE.continuation(ORIGINAL, "TCP is a reliable ", false);
		assertThat(next.messages()).containsExactly(ChatMessage.system("Be precise."), ChatMessage.user("Explain TCP."),
				ChatMessage.assistant("TCP is a reliable "), ChatMessage.user(ContinuationStrategy.DEFAULT_INSTRUCTION));
		assertThat(ContinuationStrategy.DEFAULT_INSTRUCTION).contains("exactly where it stopped").contains("not repeat");
	}

	@Test
	void userContinueTakesItsOwnWording() {
		ContinuationStrategy german = ContinuationStrategy.userContinue("Mach genau dort weiter, ohne Wiederholung.");
		assertThat(german.continuation(ORIGINAL, "TCP ist", false).lastMessage())
				.isEqualTo(ChatMessage.user("Mach genau dort weiter, ohne Wiederholung."));
		assertThatThrownBy(() -> ContinuationStrategy.userContinue(" "))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("instruction").hasMessageContaining("\" \"");
	}

	@Test
	void byModelChoosesPerModelName() {
		ContinuationStrategy strategy = ContinuationStrategy.byModel(model -> model.startsWith("claude")
				? ContinuationStrategy.ASSISTANT_PREFILL : ContinuationStrategy.USER_CONTINUE);
		assertThat(strategy.continuation(ORIGINAL, "TCP", false).lastMessage().role())
				.isEqualTo(ChatMessage.Role.ASSISTANT);
		assertThat(strategy.continuation(ORIGINAL.withModel("gpt-4o"), "TCP", false).lastMessage().role())
				.isEqualTo(ChatMessage.Role.USER);
	}

	@Test
	void byModelFallsBackToUserContinueWhenTheChooserHasNoAnswer() {
		ContinuationStrategy strategy = ContinuationStrategy.byModel(model -> null);
		assertThat(strategy.continuation(ORIGINAL, "TCP", false).lastMessage())
				.isEqualTo(ChatMessage.user(ContinuationStrategy.DEFAULT_INSTRUCTION));
		assertThatThrownBy(() -> ContinuationStrategy.byModel(null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("chooser");
	}

	@Test
	void toolCallAnswersAreNeverContinued() {
		for (ContinuationStrategy strategy : List.of(ContinuationStrategy.ASSISTANT_PREFILL,
				ContinuationStrategy.USER_CONTINUE, ContinuationStrategy.byModel(m -> ContinuationStrategy.ASSISTANT_PREFILL))) {
			assertThatThrownBy(() -> strategy.continuation(ORIGINAL, "Let me look that up", true))
					.isInstanceOf(ContinuationRefusedException.class).hasMessageContaining("tool calls");
		}
	}

	@Test
	void anAnswerWithoutTextIsNotContinued() {
		assertThatThrownBy(() -> ContinuationStrategy.USER_CONTINUE.continuation(ORIGINAL, "", false))
				.isInstanceOf(ContinuationRefusedException.class);
		assertThatThrownBy(() -> ContinuationStrategy.ASSISTANT_PREFILL.continuation(ORIGINAL, " \n", false))
				.isInstanceOf(ContinuationRefusedException.class);
	}

	@Test
	void aConversationWithToolCallsBeforeIsContinuedAfterIt() {
		ChatRequest agent = ORIGINAL.withMessages(List.of(ChatMessage.user("Weather in Oslo?"),
				ChatMessage.assistantToolCalls(List.of(new ToolCall("c1", "weather", "{\"city\":\"Oslo\"}"))),
				ChatMessage.tool("c1", "4°C, rain")));
		ChatRequest next = ContinuationStrategy.ASSISTANT_PREFILL.continuation(agent, "It is 4°C", false);
		assertThat(next.messages()).hasSize(4).last().isEqualTo(ChatMessage.assistant("It is 4°C"));
	}
}
