package dev.aiguard.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;

import dev.aiguard.GuardPolicy;
import dev.aiguard.springai.AiGuardAdvisor;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.openai.OpenAiChatModel;
import org.springframework.ai.openai.OpenAiChatOptions;

/** The set-up of docs/spring-ai.md with the test kit beside it: one streamed answer from the mock through the advisor. */
class SpringAiConsumerTest {

	@Test
	void resolvesTheTestedVersions() {
		ClassPathCheck.fromSystemProperties().verify();
	}

	@Test
	void streamsAGuardedAnswerThroughTheAdvisor() {
		try (MockModelServer mock = MockModelServer.builder()
			.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)))
			.start()) {
			OpenAiChatModel model = OpenAiChatModel.builder()
				.options(OpenAiChatOptions.builder()
					.baseUrl(mock.baseUrl())
					.apiKey("test-key")
					.model(MockModelServer.MODEL)
					.maxRetries(0)
					.build())
				.build();
			ChatClient chat = ChatClient.builder(model)
				.defaultAdvisors(AiGuardAdvisor.of(GuardPolicy.builder("chat").build()))
				.build();

			List<String> answer = chat.prompt("Why do streams stall?").stream().content().collectList()
				.block(Duration.ofSeconds(60));

			assertEquals(true, answer.stream().anyMatch(t -> !t.isEmpty()), "tokens: " + answer);
		}
	}
}
