package dev.aiguard.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.langchain4j.AbortableHttpClientBuilder;
import dev.aiguard.langchain4j.LangChain4jStreams;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import org.junit.jupiter.api.Test;

/** The set-up of docs/langchain4j.md with the test kit beside it: one answer from the mock through the guard. */
class LangChain4jConsumerTest {

	@Test
	void resolvesTheTestedVersions() {
		ClassPathCheck.fromSystemProperties().verify();
	}

	@Test
	void streamsAGuardedAnswerThroughLangChain4j() {
		try (MockModelServer mock = MockModelServer.builder()
			.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)))
			.start()) {
			OpenAiStreamingChatModel model = OpenAiStreamingChatModel.builder()
				.httpClientBuilder(AbortableHttpClientBuilder.create())
				.baseUrl(mock.baseUrl())
				.apiKey("sk-test")
				.modelName(MockModelServer.MODEL)
				.build();

			List<ChatChunk> answer = AiGuard.of(GuardPolicy.builder("chat").build())
				.call(ChatRequest.of(MockModelServer.MODEL, List.of(ChatMessage.user("Why do streams stall?"))),
						LangChain4jStreams.of(model))
				.collectList()
				.block(Duration.ofSeconds(60));

			assertEquals(true, answer.stream().anyMatch(c -> c.text() != null && !c.text().isEmpty()), "tokens: " + answer);
		}
	}
}
