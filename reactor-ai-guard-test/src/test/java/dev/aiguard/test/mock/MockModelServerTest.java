package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitedException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.ByteBufFlux;
import reactor.netty.http.HttpResources;
import reactor.netty.http.client.HttpClient;
import reactor.test.StepVerifier;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MockModelServerTest {

	private static final Duration WAIT = Duration.ofSeconds(10);

	private final JsonMapper json = new JsonMapper();
	private MockModelServer mock;
	private OpenAiCompatibleClient client;

	@BeforeEach
	void start() {
		mock = MockModelServer.builder().faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1))).random(() -> 0.0).build();
		mock.start();
		client = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
	}

	@AfterEach
	void stop() {
		mock.stop();
	}

	private static ChatRequest ask(String question) {
		return ChatRequest.of(null, List.of(ChatMessage.system("Be brief."), ChatMessage.user(question)));
	}

	private static String text(List<ChatChunk> chunks) {
		return chunks.stream().filter(ChatChunk::hasContent).map(ChatChunk::text).collect(Collectors.joining());
	}

	@Test
	void streamsTheAnswerToTheLastUserMessageThenStopUsageAndDone() {
		List<ChatChunk> chunks = client.stream(ask("How do breakers work?")).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("How do breakers work?"));
		assertThat(chunks).anyMatch(c -> "stop".equals(c.finishReason()));
		assertThat(chunks).anyMatch(c -> c.usage() != null && c.usage().completionTokens() ==
				MockAnswers.tokens("How do breakers work?").size());
		assertThat(chunks.get(chunks.size() - 1).terminal()).isTrue();
		// the count follows the last byte written: the client may have read it first
		StepVerifier.create(AnthropicEndpointTest.until(() -> mock.stats().completed(), 1)).expectNextCount(1).verifyComplete();
	}

	@Test
	void differentQuestionsGetDifferentAnswers() {
		assertThat(MockAnswers.text("What is a stall?")).isNotEqualTo(MockAnswers.text("What is a lane?"))
			.startsWith("You asked: \"What is a stall?\". ");
		assertThat(MockAnswers.tokens("What is a stall?")).allMatch(t -> !t.isEmpty());
	}

	@Test
	void aSeqQuestionGetsOneNumberedTokenPerChunk() {
		String question = MockAnswers.numbered("s-7", 4) + " and whatever follows";

		List<ChatChunk> chunks = client.stream(ask(question)).collectList().block(WAIT);

		assertThat(chunks).filteredOn(ChatChunk::hasContent).extracting(ChatChunk::text)
			.containsExactly("s-7.1 ", "s-7.2 ", "s-7.3 ", "s-7.4");
		assertThat(MockAnswers.tokens("#seq big 5000")).hasSize(1000);
		assertThatThrownBy(() -> MockAnswers.numbered("no spaces allowed", 3)).isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> MockAnswers.numbered("x", 0)).hasMessageContaining("1 to 1000");
	}

	@Test
	void maxTokensCutsTheAnswerWithFinishReasonLength() {
		List<ChatChunk> chunks = client.stream(ask("How do breakers work?").withMaxTokens(3)).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(String.join("", MockAnswers.tokens("How do breakers work?").subList(0, 3)));
		assertThat(chunks).anyMatch(c -> "length".equals(c.finishReason()));
		assertThat(chunks.get(chunks.size() - 1).terminal()).isTrue();
	}

	@Test
	void aRequestThatDoesNotAskToStreamGetsOneCompletionObject() throws Exception {
		JsonNode answer = json.readTree(post("{\"model\":\"m\",\"max_completion_tokens\":4,"
				+ "\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}"));

		assertThat(answer.path("object").asString()).isEqualTo("chat.completion");
		JsonNode choice = answer.path("choices").path(0);
		assertThat(choice.path("message").path("content").asString())
			.isEqualTo(String.join("", MockAnswers.tokens("Hello").subList(0, 4)));
		assertThat(choice.path("finish_reason").asString()).isEqualTo("length");
		assertThat(answer.path("usage").path("completion_tokens").asInt()).isEqualTo(4);

		mock.faults(mock.faults().withOmitTerminal(true));
		JsonNode whole = json.readTree(post("{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}"));
		assertThat(whole.path("choices").path(0).path("message").path("content").asString())
			.isEqualTo(MockAnswers.text("Hello"));
		assertThat(whole.path("choices").path(0).path("finish_reason").isNull()).isTrue();
		// the count follows the last byte written: the client may have read it first
		StepVerifier.create(AnthropicEndpointTest.until(() -> mock.stats().completed(), 2)).expectNextCount(1).verifyComplete();
	}

	@Test
	void aCompletionThatStallsNeverAnswersAndSeesTheClientLeave() {
		mock.faults(mock.faults().withStallAfter(2));

		StepVerifier.create(postAsync("{\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}"))
			.expectSubscription()
			.expectNoEvent(Duration.ofMillis(300))
			.thenCancel()
			.verify(WAIT);

		StepVerifier.create(untilNoneInProgress()).expectNextCount(1).verifyComplete();
		assertThat(mock.stats().stalled()).isEqualTo(1);
		assertThat(mock.stats().completed()).isZero();
	}

	@Test
	void disposingReactorNettysGlobalResourcesLeavesTheMockRunning() {
		// what stopping a Spring application context does to the shared event loops
		HttpResources.disposeLoopsAndConnections();
		OpenAiCompatibleClient fresh = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
		assertThat(text(fresh.stream(ask("Still there?")).collectList().block(WAIT)))
			.isEqualTo(MockAnswers.text("Still there?"));
	}

	@Test
	void omitTerminalEndsWithoutFinishReasonOrDone() {
		mock.faults(mock.faults().withOmitTerminal(true));

		List<ChatChunk> chunks = client.stream(ask("Hello")).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		assertThat(chunks).noneMatch(c -> c.terminal() || c.finishReason() != null);
	}

	@Test
	void dropAfterTokensClosesTheConnectionAfterThatManyTokens() {
		mock.faults(mock.faults().withDropAfter(3));

		StepVerifier.create(client.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.expectNextCount(3)
			.expectError(ProviderConnectionException.class)
			.verify(WAIT);
		assertThat(mock.stats().dropped()).isEqualTo(1);
		StepVerifier.create(untilNoneInProgress()).expectNextCount(1).verifyComplete();
	}

	@Test
	void stallAfterTokensKeepsTheConnectionOpenAndSeesTheClientLeave() {
		mock.faults(mock.faults().withStallAfter(2));

		StepVerifier.create(client.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.expectNextCount(2)
			.expectNoEvent(Duration.ofMillis(300))
			.thenCancel()
			.verify(WAIT);

		StepVerifier.create(untilCancelled(1)).expectNextCount(1).verifyComplete();
		assertThat(mock.stats().stalled()).isEqualTo(1);
		assertThat(mock.stats().completed()).isZero();
		StepVerifier.create(untilNoneInProgress()).expectNextCount(1).verifyComplete();
	}

	@Test
	void errorRateAnswersWithTheStatusAndRetryAfter() {
		mock.faults(mock.faults().withErrors(1.0, 429, 2));
		StepVerifier.create(client.stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class,
					r -> assertThat(r.retryAfter()).contains(Duration.ofSeconds(2))))
			.verify(WAIT);

		mock.faults(mock.faults().withErrors(1.0, 500, 0));
		StepVerifier.create(client.stream(ask("Hello"))).expectError(ProviderServerException.class).verify(WAIT);

		mock.faults(mock.faults().withErrors(1.0, 529, 0));
		StepVerifier.create(client.stream(ask("Hello"))).expectError(ProviderOverloadedException.class).verify(WAIT);

		assertThat(mock.stats().injectedErrors()).isEqualTo(3);
	}

	@Test
	void errorRateIsDecidedByTheRandomDraw() {
		MockModelServer lucky = MockModelServer.builder().random(() -> 0.7).build();
		lucky.start();
		try {
			lucky.faults(lucky.faults().withErrors(0.5, 500, 0));
			OpenAiCompatibleClient c = OpenAiCompatibleClient.builder(lucky.baseUrl()).model(MockModelServer.MODEL).build();
			assertThat(text(c.stream(ask("Hi")).collectList().block(WAIT))).isEqualTo(MockAnswers.text("Hi"));
			lucky.faults(lucky.faults().withErrors(0.8, 500, 0));
			StepVerifier.create(c.stream(ask("Hi"))).expectError(ProviderServerException.class).verify(WAIT);
		}
		finally {
			lucky.stop();
		}
	}

	@Test
	void contextLimitAnswersWithTheOpenAiContextLengthError() {
		mock.faults(mock.faults().withContextLimit(20));
		String longQuestion = "word ".repeat(40);

		StepVerifier.create(client.stream(ask(longQuestion)))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ContextLengthExceededException.class,
					c -> {
						assertThat(c.limit()).hasValue(20);
						assertThat(c.actual().getAsInt()).isGreaterThan(20);
					}))
			.verify(WAIT);
		assertThat(text(client.stream(ask("short")).collectList().block(WAIT))).isEqualTo(MockAnswers.text("short"));
	}

	@Test
	void faultsApplyToNewRequestsAndResetRestoresTheDefaults() {
		FaultProfile before = mock.faults();
		mock.faults(before.withStallAfter(1));
		assertThat(mock.faults().stallAfterTokens()).isEqualTo(1);
		assertThat(mock.resetFaults()).isEqualTo(before);
		assertThat(mock.faults()).isEqualTo(before);
	}

	@Test
	void badProfilesNameTheFieldAndTheValue() {
		FaultProfile ok = mock.faults();
		assertThatThrownBy(() -> ok.withErrors(1.5, 500, 0)).isInstanceOf(IllegalArgumentException.class)
			.hasMessage("errorRate must be between 0 and 1, was 1.5");
		assertThatThrownBy(() -> ok.withErrors(0.5, 302, 0)).hasMessage("errorStatus must be between 400 and 599, was 302");
		assertThatThrownBy(() -> ok.withStallAfter(-1))
			.hasMessage("stallAfterTokens must be between 0 and 2147483647, was -1");
		assertThatThrownBy(() -> ok.withPace(-5, 0)).hasMessage("firstTokenDelayMs must be between 0 and 120000, was -5");
		assertThatThrownBy(() -> ok.withContextLimit(0)).hasMessage("contextLimitTokens must be between 1 and 2147483647, was 0");
	}

	private String post(String body) {
		return postAsync(body).block(WAIT);
	}

	private Mono<String> postAsync(String body) {
		return HttpClient.create()
			.headers(h -> h.set("Content-Type", "application/json"))
			.post()
			.uri(mock.baseUrl() + "/chat/completions")
			.send(ByteBufFlux.fromString(Mono.just(body)))
			.responseContent()
			.aggregate()
			.asString();
	}

	/** Emits once no response of the mock is still open. */
	private Flux<Long> untilNoneInProgress() {
		return Flux.interval(Duration.ofMillis(10)).map(i -> mock.stats().inProgress()).filter(n -> n == 0).take(1)
			.timeout(WAIT);
	}

	/** Emits once the mock has counted {@code n} abandoned answers. */
	private Flux<Long> untilCancelled(long n) {
		return Flux.interval(Duration.ofMillis(10)).map(i -> mock.stats().cancelled()).filter(c -> c >= n).take(1)
			.timeout(WAIT);
	}
}
