package dev.aiguard.langchain4j;

import java.util.List;
import java.util.Map;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ToolCall;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.CustomMessage;
import dev.langchain4j.data.message.ImageContent;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LangChain4jRequestsTest {

	@Test
	void theLibrarysRequestBecomesLangChain4jMessagesAndParameters() {
		dev.aiguard.chat.ChatRequest request = new dev.aiguard.chat.ChatRequest("gpt-x", List.of(
				ChatMessage.system("Be brief."),
				ChatMessage.user("Weather?"),
				ChatMessage.assistantToolCalls(List.of(new ToolCall("call_1", "weather", "{\"city\":\"Paris\"}"))),
				ChatMessage.tool("call_1", "sunny"),
				ChatMessage.assistant("Sunny.")), 64, 0.3);

		ChatRequest converted = LangChain4jRequests.toLangChain4j(request);

		assertThat(converted.modelName()).isEqualTo("gpt-x");
		assertThat(converted.maxOutputTokens()).isEqualTo(64);
		assertThat(converted.temperature()).isEqualTo(0.3);
		assertThat(converted.messages()).hasSize(5);
		assertThat(((SystemMessage) converted.messages().get(0)).text()).isEqualTo("Be brief.");
		assertThat(((UserMessage) converted.messages().get(1)).singleText()).isEqualTo("Weather?");
		AiMessage call = (AiMessage) converted.messages().get(2);
		assertThat(call.text()).isNull();
		assertThat(call.toolExecutionRequests()).singleElement().satisfies(r -> {
			assertThat(r.id()).isEqualTo("call_1");
			assertThat(r.name()).isEqualTo("weather");
			assertThat(r.arguments()).isEqualTo("{\"city\":\"Paris\"}");
		});
		ToolExecutionResultMessage result = (ToolExecutionResultMessage) converted.messages().get(3);
		assertThat(result.id()).isEqualTo("call_1");
		assertThat(result.toolName()).as("found from the call it answers").isEqualTo("weather");
		assertThat(result.text()).isEqualTo("sunny");
		assertThat(((AiMessage) converted.messages().get(4)).text()).isEqualTo("Sunny.");
	}

	@Test
	void langChain4jsRequestIsSeenAsTextsAndToolCalls() {
		ChatRequest request = ChatRequest.builder()
			.messages(SystemMessage.from("Be brief."),
					UserMessage.from(TextContent.from("Look:"), ImageContent.from("https://example.org/cat.png"),
							TextContent.from("what is it?")),
					AiMessage.from(List.of(ToolExecutionRequest.builder().id("c1").name("vision").arguments("{}").build())),
					ToolExecutionResultMessage.from("c1", "vision", "a cat"))
			.modelName("gpt-y")
			.maxOutputTokens(32)
			.build();

		dev.aiguard.chat.ChatRequest seen = LangChain4jRequests.fromLangChain4j(request).request();

		assertThat(seen.model()).isEqualTo("gpt-y");
		assertThat(seen.maxTokens()).isEqualTo(32);
		assertThat(seen.messages()).extracting(ChatMessage::role).containsExactly(ChatMessage.Role.SYSTEM,
				ChatMessage.Role.USER, ChatMessage.Role.ASSISTANT, ChatMessage.Role.TOOL);
		assertThat(seen.messages().get(1).content()).isEqualTo("Look:\nwhat is it?");
		assertThat(seen.messages().get(2).toolCalls()).containsExactly(new ToolCall("c1", "vision", "{}"));
		assertThat(seen.messages().get(3).toolCallId()).isEqualTo("c1");
		assertThat(seen.messages().get(3).content()).isEqualTo("a cat");
	}

	@Test
	void anUnchangedRequestIsSentAsWritten() {
		ChatRequest request = ChatRequest.builder().messages(UserMessage.from("Hi")).build();
		LangChain4jRequests.Conversion conversion = LangChain4jRequests.fromLangChain4j(request);

		assertThat(conversion.toLangChain4j(conversion.request())).isSameAs(request);
	}

	@Test
	void aShrunkRequestKeepsTheOriginalsOfTheMessagesLeftAndTheParametersWithTheGuardsChanges() {
		UserMessage picture = UserMessage.from(TextContent.from("Old question"), ImageContent.from("https://example.org/a.png"));
		SystemMessage system = SystemMessage.from("Be brief.");
		UserMessage last = UserMessage.from("New question");
		ToolSpecification tool = ToolSpecification.builder().name("search").build();
		ChatRequest request = ChatRequest.builder()
			.messages(system, picture, AiMessage.from("Old answer"), last)
			.toolSpecifications(tool)
			.temperature(0.7)
			.build();
		LangChain4jRequests.Conversion conversion = LangChain4jRequests.fromLangChain4j(request);
		List<ChatMessage> seen = conversion.request().messages();

		dev.aiguard.chat.ChatRequest shrunk = conversion.request()
			.withMessages(List.of(seen.get(0), seen.get(1).withContent("Old"), seen.get(3)))
			.withMaxTokens(100);
		ChatRequest sent = conversion.toLangChain4j(shrunk);

		assertThat(sent.messages()).hasSize(3);
		assertThat(sent.messages().get(0)).isSameAs(system);
		assertThat(sent.messages().get(1)).as("a message the guard rewrote is converted anew")
			.isInstanceOfSatisfying(UserMessage.class, u -> assertThat(u.singleText()).isEqualTo("Old"));
		assertThat(sent.messages().get(2)).isSameAs(last);
		assertThat(sent.toolSpecifications()).containsExactly(tool);
		assertThat(sent.temperature()).isEqualTo(0.7);
		assertThat(sent.maxOutputTokens()).isEqualTo(100);
	}

	@Test
	void aCustomMessageIsRefusedByIndexAndType() {
		ChatRequest request = ChatRequest.builder()
			.messages(UserMessage.from("Hi"), CustomMessage.from(Map.of("role", "developer")))
			.build();

		assertThatThrownBy(() -> LangChain4jRequests.fromLangChain4j(request))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageStartingWith("messages[1] is a CUSTOM message");
	}
}
