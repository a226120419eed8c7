package dev.aiguard.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.boot.autoconfigure.AiGuardAutoConfiguration;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A reactive Spring Boot application with the starter and WebFlux: the library's OpenAI-compatible
 * client streams an answer through a guard from properties, on the Reactor Netty and the Jackson 3
 * that Boot brings, and nothing of Jackson 2 is on the class path.
 */
class StarterWebFluxConsumerTest {

	@Test
	void resolvesTheTestedVersions() {
		ClassPathCheck.fromSystemProperties().verify();
	}

	@Test
	void theClientStreamsThroughAGuardOnBootsJackson() {
		try (MockModelServer mock = MockModelServer.builder().start()) {
			OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
			new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class))
				.withPropertyValues("aiguard.policies.chat.stall.first-token-timeout=10s")
				.run(context -> {
					@SuppressWarnings("unchecked")
					AiGuard<ChatChunk> guard = context.getBean("aiguard.chat", AiGuard.class);
					List<ChatChunk> answer = client
						.stream(ChatRequest.of(MockModelServer.MODEL, List.of(ChatMessage.user("Hello"))))
						.transform(guard)
						.collectList()
						.block(Duration.ofSeconds(30));
					assertThat(answer).isNotNull();
					assertThat(answer.stream().map(ChatChunk::text).filter(t -> t != null).reduce("", String::concat))
						.isEqualTo(MockAnswers.text("Hello"));
				});
		}
	}
}
