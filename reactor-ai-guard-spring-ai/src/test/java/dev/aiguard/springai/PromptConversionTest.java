package dev.aiguard.springai;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import dev.aiguard.truncation.PromptTruncator;
import dev.aiguard.truncation.TokenCounter;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.ToolResponseMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.content.Media;
import org.springframework.ai.openai.OpenAiChatOptions;
import org.springframework.util.MimeTypeUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PromptConversionTest {

	private static final OpenAiChatOptions OPTIONS = OpenAiChatOptions.builder().model("gpt-x").maxTokens(64)
		.temperature(0.2).build();

	private final SystemMessage system = new SystemMessage("Be brief.");
	private final UserMessage withMedia = UserMessage.builder()
		.text("What is on this picture? " + "describe it in detail ".repeat(20))
		.media(new Media(MimeTypeUtils.IMAGE_PNG, java.net.URI.create("https://example.com/cat.png")))
		.metadata(Map.of("source", "upload"))
		.build();
	private final AssistantMessage toolCall = AssistantMessage.builder()
		.content("")
		.toolCalls(List.of(new AssistantMessage.ToolCall("c1", "function", "weather", "{\"city\":\"Oslo\"}"),
				new AssistantMessage.ToolCall("c2", "function", "time", "{}")))
		.build();
	private final ToolResponseMessage toolResults = ToolResponseMessage.builder()
		.responses(List.of(new ToolResponseMessage.ToolResponse("c1", "weather", "Rain, 4 degrees"),
				new ToolResponseMessage.ToolResponse("c2", "time", "10:42")))
		.metadata(Map.of("k", "v"))
		.build();
	private final AssistantMessage answer = new AssistantMessage("It rains in Oslo at 10:42.");
	private final UserMessage question = new UserMessage("And tomorrow?");

	private Prompt prompt() {
		return new Prompt(List.of(system, withMedia, toolCall, toolResults, answer, question), OPTIONS);
	}

	@Test
	void thePromptBecomesAChatRequestWithOneMessagePerToolResponse() {
		ChatRequest request = PromptConversion.of(prompt()).request();

		assertThat(request.model()).isEqualTo("gpt-x");
		assertThat(request.maxTokens()).isEqualTo(64);
		assertThat(request.temperature()).isEqualTo(0.2);
		assertThat(request.messages()).extracting(ChatMessage::role).containsExactly(ChatMessage.Role.SYSTEM,
				ChatMessage.Role.USER, ChatMessage.Role.ASSISTANT, ChatMessage.Role.TOOL, ChatMessage.Role.TOOL,
				ChatMessage.Role.ASSISTANT, ChatMessage.Role.USER);
		assertThat(request.messages().get(2).toolCalls()).containsExactly(
				new ToolCall("c1", "weather", "{\"city\":\"Oslo\"}"), new ToolCall("c2", "time", "{}"));
		assertThat(request.messages().get(4).toolCallId()).isEqualTo("c2");
		assertThat(request.messages().get(4).content()).isEqualTo("10:42");
	}

	@Test
	void theOriginalRequestGivesBackTheOriginalPromptAndClientRequest() {
		Prompt prompt = prompt();
		PromptConversion conversion = PromptConversion.of(prompt);
		ChatClientRequest request = new ChatClientRequest(prompt, Map.of("a", 1));

		assertThat(conversion.toPrompt(conversion.request())).isSameAs(prompt);
		assertThat(conversion.toClientRequest(request, conversion.request())).isSameAs(request);
		assertThat(conversion.toPrompt(conversion.request().withMessages(conversion.request().messages())).getInstructions())
			.containsExactlyElementsOf(prompt.getInstructions());
	}

	@Test
	void droppedMessagesGoAndTheOthersKeepTheirTypesAndInstances() {
		PromptConversion conversion = PromptConversion.of(prompt());
		List<ChatMessage> messages = conversion.request().messages();

		Prompt shrunk = conversion.toPrompt(conversion.request().withMessages(
				List.of(messages.get(0), messages.get(5), messages.get(6))));

		assertThat(shrunk.getInstructions()).containsExactly(system, answer, question);
		assertThat(shrunk.getOptions()).isSameAs(OPTIONS);
	}

	@Test
	void aShortenedMessageKeepsItsTypeMediaAndMetadata() {
		PromptConversion conversion = PromptConversion.of(prompt());
		List<ChatMessage> messages = new ArrayList<>(conversion.request().messages());
		messages.set(1, messages.get(1).withContent("What is on this picture? […] in detail "));

		List<Message> rebuilt = conversion.toPrompt(conversion.request().withMessages(messages)).getInstructions();

		assertThat(rebuilt.get(1)).isInstanceOfSatisfying(UserMessage.class, u -> {
			assertThat(u.getText()).isEqualTo("What is on this picture? […] in detail ");
			assertThat(u.getMedia()).isEqualTo(withMedia.getMedia());
			assertThat(u.getMetadata()).containsEntry("source", "upload");
		});
		assertThat(rebuilt).hasSize(6);
		assertThat(rebuilt.get(0)).isSameAs(system);
		assertThat(rebuilt.get(2)).isSameAs(toolCall);
		assertThat(rebuilt.get(3)).isSameAs(toolResults);
	}

	@Test
	void toolResponsesGoBackIntoOneMessageWithWhatWasKept() {
		PromptConversion conversion = PromptConversion.of(prompt());
		List<ChatMessage> messages = new ArrayList<>(conversion.request().messages());
		messages.set(3, messages.get(3).withContent("Rain"));

		List<Message> rebuilt = conversion.toPrompt(conversion.request().withMessages(messages)).getInstructions();

		assertThat(rebuilt).hasSize(6);
		assertThat(rebuilt.get(3)).isInstanceOfSatisfying(ToolResponseMessage.class, t -> {
			assertThat(t.getResponses()).containsExactly(new ToolResponseMessage.ToolResponse("c1", "weather", "Rain"),
					new ToolResponseMessage.ToolResponse("c2", "time", "10:42"));
			assertThat(t.getMetadata()).containsEntry("k", "v");
		});
		messages.remove(4);
		assertThat(conversion.toPrompt(conversion.request().withMessages(messages)).getInstructions().get(3))
			.isInstanceOfSatisfying(ToolResponseMessage.class, t -> assertThat(t.getResponses()).hasSize(1));
	}

	@Test
	void theLibrarysTruncatorWorksOnTheConversion() {
		List<Message> history = new ArrayList<>();
		history.add(system);
		for (int i = 0; i < 5; i++) {
			history.add(new UserMessage("question " + i + " " + "and more words ".repeat(30)));
			history.add(new AssistantMessage("answer " + i + " " + "and more words ".repeat(30)));
		}
		history.add(question);
		PromptConversion conversion = PromptConversion.of(new Prompt(history, OPTIONS));
		TokenCounter counter = TokenCounter.estimate();

		ChatRequest truncated = PromptTruncator.tokenBudget().truncate(conversion.request(), 200, counter);
		List<Message> rebuilt = conversion.toPrompt(truncated).getInstructions();

		assertThat(rebuilt.size()).isLessThan(history.size());
		assertThat(rebuilt.get(0)).isSameAs(system);
		assertThat(rebuilt.get(rebuilt.size() - 1)).isSameAs(question);
		for (Message m : rebuilt) {
			assertThat(m.getClass()).isIn(SystemMessage.class, UserMessage.class, AssistantMessage.class);
		}
		assertThat(counter.count(PromptConversion.of(new Prompt(rebuilt, OPTIONS)).request().messages()))
			.isLessThanOrEqualTo(200);
	}

	@Test
	void aMessageWithoutOriginalBecomesAPlainMessageOfItsRole() {
		PromptConversion conversion = PromptConversion.of(new Prompt(List.of(question), OPTIONS));

		List<Message> rebuilt = conversion.toPrompt(conversion.request().withMessages(List.of(
				ChatMessage.system("New system prompt"),
				ChatMessage.assistantToolCalls(List.of(new ToolCall("c9", "search", "{}"))),
				ChatMessage.tool("c9", "found"),
				conversion.request().messages().get(0),
				ChatMessage.assistant("partial answer")))).getInstructions();

		assertThat(rebuilt.get(0)).isInstanceOf(SystemMessage.class).extracting(Message::getText)
			.isEqualTo("New system prompt");
		assertThat(rebuilt.get(1)).isInstanceOfSatisfying(AssistantMessage.class,
				a -> assertThat(a.getToolCalls()).containsExactly(new AssistantMessage.ToolCall("c9", "function", "search", "{}")));
		assertThat(rebuilt.get(2)).isInstanceOfSatisfying(ToolResponseMessage.class, t -> assertThat(t.getResponses())
			.containsExactly(new ToolResponseMessage.ToolResponse("c9", "search", "found")));
		assertThat(rebuilt.get(3)).isSameAs(question);
		assertThat(rebuilt.get(4)).isInstanceOf(AssistantMessage.class).extracting(Message::getText)
			.isEqualTo("partial answer");
	}

	@Test
	void aPromptWithoutMessagesIsRefused() {
		assertThatThrownBy(() -> PromptConversion.of(new Prompt(List.<Message>of(), OPTIONS)))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("messages");
	}
}
