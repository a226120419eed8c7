package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.List;
import java.util.Set;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.AnthropicClient;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

import static dev.aiguard.test.mock.RawHttp.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A model that is down while its siblings on the same server answer: {@link FaultProfile#withFailingModels}
 * over loopback HTTP, on the OpenAI and the Anthropic route.
 */
class FailingModelsTest {

	private MockModelServer mock;
	private OpenAiCompatibleClient client;

	@BeforeEach
	void start() {
		// an error rate of 0 that a draw of 0.99 would never pass: the failing models fail by name, not by chance
		mock = MockModelServer.builder().faults(FaultProfile.defaults(Duration.ZERO, Duration.ZERO))
			.random(() -> 0.99).start();
		client = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
	}

	@AfterEach
	void stop() {
		mock.close();
	}

	private static ChatRequest ask(String model, String question) {
		return ChatRequest.of(model, List.of(ChatMessage.user(question)));
	}

	@Test
	void onlyTheNamedModelFailsTheOthersAnswer() {
		mock.faults(mock.faults().withFailingModels("mock-large"));

		StepVerifier.create(client.stream(ask("mock-large", "Are you there?")))
			.expectError(ProviderServerException.class)
			.verify(WAIT);
		List<ChatChunk> small = client.stream(ask("mock-small", "Are you there?")).collectList().block(WAIT);
		String text = small.stream().map(ChatChunk::text).reduce("", String::concat);
		assertThat(text).isEqualTo(MockAnswers.text("Are you there?"));
		assertThat(client.stream(ask(null, "Default model?")).collectList().block(WAIT))
			.as("a request without a model asks mock-1, which is up").anyMatch(ChatChunk::terminal);

		MockModelServer.Stats stats = mock.stats();
		assertThat(stats.requests()).isEqualTo(3);
		assertThat(stats.injectedErrors()).isEqualTo(1);
		assertThat(stats.completed()).isEqualTo(2);
	}

	@Test
	void theFailingModelGetsTheProfilesStatusAndRetryAfterEveryTime() {
		mock.faults(mock.faults().withErrors(0, 429, 2).withFailingModels("mock-large", "mock-small"));

		for (String model : List.of("mock-large", "mock-small", "mock-large")) {
			StepVerifier.create(client.stream(ask(model, "Rate me")))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class,
						r -> assertThat(r.retryAfter()).contains(Duration.ofSeconds(2))))
				.verify(WAIT);
		}
		RawHttp.Reply raw = RawHttp.post(mock.baseUrl() + "/chat/completions",
				"{\"model\":\"mock-small\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
		assertThat(raw.status()).isEqualTo(429);
		assertThat(mock.stats().injectedErrors()).isEqualTo(4);

		mock.faults(mock.faults().withFailingModels(Set.of()));
		assertThat(client.stream(ask("mock-large", "Back?")).collectList().block(WAIT)).anyMatch(ChatChunk::terminal);
	}

	@Test
	void theAnthropicRouteFailsTheNamedModelToo() {
		AnthropicClient anthropic = AnthropicClient.builder(mock.anthropicBaseUrl()).apiKey("sk-ant-mock")
			.model("claude-large").build();
		mock.faults(mock.faults().withErrors(0, 529, 0).withFailingModels("claude-large"));

		StepVerifier.create(anthropic.stream(ask("claude-large", "Overloaded?")))
			.expectError(ProviderOverloadedException.class)
			.verify(WAIT);
		List<ChatChunk> other = anthropic.stream(ask("claude-small", "Overloaded?")).collectList().block(WAIT);
		assertThat(other.stream().map(ChatChunk::text).reduce("", String::concat))
			.isEqualTo(MockAnswers.text("Overloaded?"));
	}

	@Test
	void everyOtherChangeKeepsTheFailingModelsInOrderWithoutRepeats() {
		FaultProfile p = FaultProfile.defaults(Duration.ZERO, Duration.ZERO)
			.withFailingModels("b", "a", "b");
		assertThat(p.failingModels()).containsExactly("b", "a");
		FaultProfile changed = p.withStallAfter(3).withErrors(0.5, 500, 0).withPace(1, 2).withDropAfter(4)
			.withContextLimit(9).withOmitTerminal(true).withInBandError(1).withEmptyAnswer(true)
			.withFinishReason("length").withLoopingAnswer(true).withLoadPressure(4).withErrorBody("{}")
			.withRateLimits(null);
		assertThat(changed.failingModels()).containsExactly("b", "a");
		assertThat(changed.failsModel("a")).isTrue();
		assertThat(changed.failsModel("c")).isFalse();
		assertThat(FaultProfile.defaults(Duration.ZERO, Duration.ZERO).failingModels()).isEmpty();
		assertThatThrownBy(() -> p.failingModels().add("c")).isInstanceOf(UnsupportedOperationException.class);
	}

	@Test
	void aBadModelNameIsRefusedNamingTheField() {
		FaultProfile p = FaultProfile.defaults(Duration.ZERO, Duration.ZERO);
		assertThatThrownBy(() -> p.withFailingModels("mock large"))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessage("failingModels must hold model names of 1 to 64 letters, digits, '_', '.', ':' or '-', "
					+ "was 'mock large'");
		assertThatThrownBy(() -> p.withFailingModels(""))
			.hasMessageContaining("was ''");
		assertThatThrownBy(() -> p.withFailingModels((java.util.Collection<String>) null))
			.hasMessage("failingModels must not be null (empty: no model is down)");
		assertThatThrownBy(() -> p.withFailingModels(java.util.Arrays.asList("ok", null)))
			.hasMessageContaining("was null");
	}
}
