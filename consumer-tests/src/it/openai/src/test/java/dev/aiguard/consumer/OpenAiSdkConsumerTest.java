package dev.aiguard.consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;

import com.openai.client.OpenAIClient;
import com.openai.client.OpenAIClientAsync;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.client.okhttp.OpenAIOkHttpClientAsync;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.openai.OpenAiRequests;
import dev.aiguard.openai.OpenAiStreams;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.Test;

/**
 * The set-up of docs/openai-sdk.md with the test kit beside it: building the SDK's client loads its
 * Jackson (a jackson-databind newer than jackson-annotations fails there), then one answer streams
 * from the mock through the guard.
 */
class OpenAiSdkConsumerTest {

	@Test
	void resolvesTheTestedVersions() {
		ClassPathCheck.fromSystemProperties().verify();
	}

	@Test
	void streamsAGuardedAnswerThroughTheSdk() {
		try (MockModelServer mock = MockModelServer.builder()
			.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)))
			.start()) {
			OpenAIClient blocking = OpenAIOkHttpClient.builder().baseUrl(mock.baseUrl()).apiKey("test-key").build();
			blocking.close();
			OpenAIClientAsync client = OpenAIOkHttpClientAsync.builder()
				.baseUrl(mock.baseUrl())
				.apiKey("test-key")
				.maxRetries(0)
				.build();
			try {
				ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
					.model(MockModelServer.MODEL)
					.addUserMessage("Why do streams stall?")
					.build();
				List<ChatChunk> answer = AiGuard.of(GuardPolicy.builder("chat").build())
					.call(OpenAiRequests.toChatRequest(params), OpenAiStreams.of(client, params))
					.collectList()
					// a cold JVM loads the SDK, OkHttp, Kotlin and Jackson's Kotlin module on this first answer
					.block(Duration.ofSeconds(60));

				assertEquals(true, answer.stream().anyMatch(c -> c.text() != null && !c.text().isEmpty()), "tokens: " + answer);
				assertEquals(1, mock.stats().requests());
			}
			finally {
				client.close();
			}
		}
	}
}
