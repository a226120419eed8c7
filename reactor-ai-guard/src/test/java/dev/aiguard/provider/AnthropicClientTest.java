package dev.aiguard.provider;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import tools.jackson.databind.JsonNode;
import dev.aiguard.GuardReport;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import dev.aiguard.chat.Usage;
import dev.aiguard.core.Outcome;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.stall.IncompleteStreamException;
import io.netty.handler.codec.http.HttpHeaders;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.server.HttpServerResponse;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The Anthropic client against a loopback Reactor Netty server that captures each request and
 * serves canned Anthropic streams and error bodies.
 */
class AnthropicClientTest extends CannedServerFixture {

	static final String KEY = "sk-ant-api03-SECRET123";

	static final ChatRequest REQUEST = ChatRequest.of(null, List.of(ChatMessage.user("Say hello")));

	static final List<ChatChunk> FIXTURE_CHUNKS = List.of(
			new ChatChunk("", "assistant", null, null, List.of(), false, false),
			ChatChunk.keepAlive(),
			ChatChunk.token("Hello"),
			new ChatChunk("", null, "end_turn", new Usage(25, 15), List.of(), false, false),
			ChatChunk.done());

	AnthropicClientTest() {
		super("/messages", Fixtures.ANTHROPIC_STREAM);
	}

	// ---- the canned server ----

	@Override
	Publisher<Void> respond(String scenario, HttpServerResponse response) {
		String stream = Fixtures.ANTHROPIC_STREAM;
		switch (scenario) {
			case "no-stop":
				// the last content block ends, then nothing: no stop_reason, no message_stop
				return sse(response, Flux.just(Fixtures.firstEvents(stream, 5)));
			case "overloaded-in-band":
				return sse(response, Flux.just(Fixtures.firstEvents(stream, 4), Fixtures.ANTHROPIC_OVERLOADED));
			case "forever":
				return sse(response, Flux.just(Fixtures.firstEvents(stream, 2)).concatWith(Flux.interval(Duration.ofMillis(5))
					.map(i -> "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
							+ "\"delta\":{\"type\":\"text_delta\",\"text\":\"t" + i + "\"}}\n\n")));
			case "rate-limited":
				return json(response.status(429)
					.header("retry-after", "3")
					.header("anthropic-ratelimit-requests-remaining", "0"),
						"{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"Number of request tokens has exceeded your per-minute rate limit\"}}");
			case "overloaded":
				return json(response.status(529), "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}");
			case "api-error":
				return json(response.status(500), "{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}");
			case "context":
				return json(response.status(400), ProviderErrorsTest.ANTHROPIC_CONTEXT);
			case "unauthorized":
				return json(response.status(401), "{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\","
						+ "\"message\":\"invalid x-api-key " + KEY + "\"}}");
			default:
				return super.respond(scenario, response);
		}
	}

	// ---- helpers ----

	AnthropicClient client(String scenario) {
		return AnthropicClient.builder(baseUrl(scenario)).apiKey(KEY).model("claude-test").build();
	}

	JsonNode sentBody(ChatRequest request) throws Exception {
		client("normal").stream(request).blockLast(Duration.ofSeconds(10));
		return Json.MAPPER.readTree(requestBodies.get(requestBodies.size() - 1));
	}

	// ---- streams ----

	@Test
	void fixtureStreamDecodesToRolePingTokenStopReasonUsageAndDone() {
		assertThat(client("normal").stream(REQUEST).collectList().block(Duration.ofSeconds(10))).isEqualTo(FIXTURE_CHUNKS);
		assertThat(requestPaths).containsExactly("/normal/v1/messages");
	}

	@Test
	void oneByteWritesDecodeToTheSameChunksAndTheGuardCallsItASuccess() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		assertThat(client("bytes").stream(REQUEST).transform(OpenAiCompatibleClientTest.guard(report)).collectList()
			.block(Duration.ofSeconds(10))).isEqualTo(FIXTURE_CHUNKS);
		GuardReport r = OpenAiCompatibleClientTest.await(report);
		assertThat(r.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(r.finishReason()).isEqualTo("end_turn");
		assertThat(r.tokens()).isEqualTo(1);
	}

	@Test
	void streamWithoutStopReasonOrMessageStopIsIncomplete() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		StepVerifier.create(client("no-stop").stream(REQUEST).transform(OpenAiCompatibleClientTest.guard(report)))
				.expectNext(FIXTURE_CHUNKS.get(0), ChatChunk.keepAlive(), ChatChunk.token("Hello"))
				.expectErrorSatisfies(partial -> assertThat(partial).isInstanceOf(PartialStreamException.class)
						.hasCauseInstanceOf(IncompleteStreamException.class))
				.verify(Duration.ofSeconds(10));
		assertThat(OpenAiCompatibleClientTest.await(report).outcome()).isEqualTo(Outcome.INCOMPLETE);
	}

	@Test
	void connectionClosedMidEventIsARetryableConnectionFailure() {
		StepVerifier.create(client("cut").stream(REQUEST))
				.expectNext(FIXTURE_CHUNKS.get(0), ChatChunk.keepAlive())
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderConnectionException.class);
					assertThat(((ProviderException) e).provider()).isEqualTo("anthropic");
					assertThat(((ProviderException) e).retryable()).isTrue();
					assertThat(e.getMessage()).contains("127.0.0.1").doesNotContain(KEY);
				})
				.verify(Duration.ofSeconds(10));
	}

	@Test
	void overloadedErrorEventAfterATokenFailsWithARetryableOverloadAndClosesTheConnection() {
		StepVerifier.create(client("overloaded-in-band").stream(REQUEST))
				.expectNext(FIXTURE_CHUNKS.get(0), ChatChunk.keepAlive(), ChatChunk.token("Hello"))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderOverloadedException.class);
					assertThat(((ProviderException) e).inBand()).isTrue();
					assertThat(((ProviderException) e).retryable()).isTrue();
				})
				.verify(Duration.ofSeconds(10));
		StepVerifier.create(connectionsClosed.asFlux().take(1)).expectNext(1).verifyComplete();
	}

	// ---- errors before streaming ----

	@Test
	void rateLimitCarriesRetryAfterAndAnthropicRateLimitHeaders() {
		StepVerifier.create(client("rate-limited").stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(RateLimitedException.class);
					RateLimitedException r = (RateLimitedException) e;
					assertThat(r.provider()).isEqualTo("anthropic");
					assertThat(r.status()).isEqualTo(429);
					assertThat(r.errorType()).isEqualTo("rate_limit_error");
					assertThat(r.retryAfter()).contains(Duration.ofSeconds(3));
					assertThat(r.rateLimits().remainingRequests()).isZero();
				})
				.verify(Duration.ofSeconds(10));
	}

	@Test
	void status529IsARetryableOverloadAnd500AServerError() {
		StepVerifier.create(client("overloaded").stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderOverloadedException.class);
					assertThat(((ProviderException) e).status()).isEqualTo(529);
					assertThat(((ProviderException) e).inBand()).isFalse();
				})
				.verify(Duration.ofSeconds(10));
		StepVerifier.create(client("api-error").stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderServerException.class);
					assertThat(((ProviderException) e).errorType()).isEqualTo("api_error");
					assertThat(((ProviderException) e).retryable()).isTrue();
				})
				.verify(Duration.ofSeconds(10));
	}

	@Test
	void promptTooLongIsAContextLengthErrorWithLimitAndActual() {
		StepVerifier.create(client("context").stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ContextLengthExceededException.class);
					assertThat(((ContextLengthExceededException) e).limit()).hasValue(200000);
					assertThat(((ContextLengthExceededException) e).actual()).hasValue(208310);
				})
				.verify(Duration.ofSeconds(10));
	}

	@Test
	void errorBodyIsReadOnlyUpToTheLimitAndTheConnectionClosed() {
		AnthropicClient client = AnthropicClient.builder(baseUrl("huge-error")).model("m")
			.maxErrorBodyBytes(2048).httpClient(pooled(1)).build();
		StepVerifier.create(client.stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderServerException.class);
					assertThat(((ProviderException) e).status()).isEqualTo(502);
					assertThat(e.getMessage().length()).isLessThan(600);
				})
				.verify(Duration.ofSeconds(10));
		StepVerifier.create(connectionsClosed.asFlux().take(1)).expectNextCount(1).verifyComplete();
	}

	@Test
	void apiKeyNeverAppearsInMessagesOrToString() {
		AnthropicClient client = client("unauthorized");
		StepVerifier.create(client.stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderClientException.class);
					assertThat(((ProviderException) e).status()).isEqualTo(401);
					assertThat(((ProviderException) e).errorType()).isEqualTo("authentication_error");
					assertThat(e.getMessage()).contains("invalid x-api-key [redacted]").doesNotContain("SECRET");
				})
				.verify(Duration.ofSeconds(10));
		assertThat(client.toString()).doesNotContain("SECRET").contains("apiKey=[set]").contains("maxTokens=1024");
		assertThat(client.scrub("key sk-ant-other-123 leaked")).isEqualTo("key [redacted] leaked");
	}

	@Test
	void noResponseHeadersInTimeIsAConnectionFailure() {
		VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		AnthropicClient client = AnthropicClient.builder(baseUrl("no-headers")).model("m")
			.responseTimeout(Duration.ofSeconds(5)).timer(clock).httpClient(pooled(1)).build();
		StepVerifier.create(client.stream(REQUEST))
				.expectSubscription()
				.then(() -> clock.advanceTimeBy(Duration.ofMillis(4999)))
				.expectNoEvent(Duration.ofMillis(50))
				.then(() -> clock.advanceTimeBy(Duration.ofMillis(1)))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProviderConnectionException.class)
						.hasMessageContaining("no response headers").hasMessageContaining("5000 ms"))
				.verify(Duration.ofSeconds(10));
	}

	@Test
	void refusedConnectionIsARetryableConnectionFailure() {
		int port = server.port();
		server.disposeNow();
		AnthropicClient client = AnthropicClient.builder("http://127.0.0.1:" + port + "/v1").model("m").build();
		StepVerifier.create(client.stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderConnectionException.class);
					assertThat(ProviderErrors.isRetryable(e)).isTrue();
				})
				.verify(Duration.ofSeconds(10));
	}

	// ---- connection handling ----

	@Test
	void cancelClosesTheConnectionAndTheNextRequestGetsAFreshOne() {
		HttpClient http = pooled(1);
		AnthropicClient forever = AnthropicClient.builder(baseUrl("forever")).model("m").httpClient(http).build();
		StepVerifier.create(forever.stream(REQUEST).filter(ChatChunk::hasContent).take(3))
				.expectNextCount(3)
				.verifyComplete();
		StepVerifier.create(connectionsClosed.asFlux().take(1)).expectNext(1).verifyComplete();
		AnthropicClient normal = AnthropicClient.builder(baseUrl("normal")).model("m").httpClient(http).build();
		assertThat(normal.stream(REQUEST).collectList().block(Duration.ofSeconds(10))).isEqualTo(FIXTURE_CHUNKS);
		assertThat(connectionsOpened.get()).isEqualTo(2);
	}

	@Test
	void completedStreamReturnsItsConnectionToThePool() {
		AnthropicClient normal = AnthropicClient.builder(baseUrl("normal")).model("m").httpClient(pooled(1)).build();
		for (int i = 0; i < 3; i++) {
			assertThat(normal.stream(REQUEST).collectList().block(Duration.ofSeconds(10))).isEqualTo(FIXTURE_CHUNKS);
		}
		assertThat(connectionsOpened.get()).isEqualTo(1);
	}

	// ---- the request ----

	@Test
	void requestCarriesTheAnthropicHeadersModelMaxTokensAndStream() throws Exception {
		JsonNode body = sentBody(REQUEST);
		assertThat(body.get("model").asString()).isEqualTo("claude-test");
		assertThat(body.get("max_tokens").asInt()).isEqualTo(AnthropicClient.DEFAULT_MAX_TOKENS);
		assertThat(body.get("stream").asBoolean()).isTrue();
		assertThat(body.has("system")).isFalse();
		assertThat(body.has("temperature")).isFalse();
		assertThat(body.get("messages")).hasSize(1);
		assertThat(body.at("/messages/0/role").asString()).isEqualTo("user");
		assertThat(body.at("/messages/0/content").asString()).isEqualTo("Say hello");
		HttpHeaders headers = requestHeaders.get(0);
		assertThat(headers.get("x-api-key")).isEqualTo(KEY);
		assertThat(headers.get("anthropic-version")).isEqualTo("2023-06-01");
		assertThat(headers.get("content-type")).isEqualTo("application/json");
		assertThat(headers.get("accept")).isEqualTo("text/event-stream");
		assertThat(headers.contains("authorization")).isFalse();
	}

	@Test
	void requestSettingsWinOverTheClientDefaults() throws Exception {
		JsonNode body = sentBody(new ChatRequest("claude-other", List.of(ChatMessage.user("Hi")), 77, 0.3));
		assertThat(body.get("model").asString()).isEqualTo("claude-other");
		assertThat(body.get("max_tokens").asInt()).isEqualTo(77);
		assertThat(body.get("temperature").asDouble()).isEqualTo(0.3);
	}

	@Test
	void systemMessagesBecomeTheTopLevelSystemJoinedByABlankLine() throws Exception {
		JsonNode body = sentBody(ChatRequest.of(null, List.of(ChatMessage.system("Be brief."),
				ChatMessage.user("Hi"), ChatMessage.assistant("Hello!"), ChatMessage.system("Answer in French."),
				ChatMessage.user("How are you?"))));
		assertThat(body.get("system").asString()).isEqualTo("Be brief.\n\nAnswer in French.");
		assertThat(body.get("messages")).hasSize(3);
		assertThat(body.get("messages")).extracting(m -> m.get("role").asString()).containsExactly("user", "assistant", "user");
		assertThat(body.at("/messages/1/content").asString()).isEqualTo("Hello!");
		assertThat(body.at("/messages/2/content").asString()).isEqualTo("How are you?");
	}

	@Test
	void toolCallsBecomeToolUseBlocksAndResultsToolResultBlocksInOneUserTurn() throws Exception {
		JsonNode body = sentBody(ChatRequest.of(null, List.of(ChatMessage.user("Weather in Paris and Rome?"),
				new ChatMessage(ChatMessage.Role.ASSISTANT, "Let me look.", List.of(
						new ToolCall("toolu_1", "get_weather", "{\"city\":\"Paris\"}"),
						new ToolCall("toolu_2", "get_weather", "{\"city\":\"Rome\"}"),
						new ToolCall("toolu_3", "now", "")), null),
				ChatMessage.tool("toolu_1", "18C"),
				ChatMessage.tool("toolu_2", "24C"),
				ChatMessage.tool("toolu_3", "noon"),
				ChatMessage.user("Which is warmer?"))));
		JsonNode messages = body.get("messages");
		assertThat(messages).hasSize(3);
		JsonNode assistant = messages.get(1);
		assertThat(assistant.get("role").asString()).isEqualTo("assistant");
		assertThat(assistant.at("/content/0/type").asString()).isEqualTo("text");
		assertThat(assistant.at("/content/0/text").asString()).isEqualTo("Let me look.");
		assertThat(assistant.at("/content/1/type").asString()).isEqualTo("tool_use");
		assertThat(assistant.at("/content/1/id").asString()).isEqualTo("toolu_1");
		assertThat(assistant.at("/content/1/name").asString()).isEqualTo("get_weather");
		assertThat(assistant.at("/content/1/input")).isEqualTo(Json.MAPPER.readTree("{\"city\":\"Paris\"}"));
		assertThat(assistant.at("/content/3/input")).isEqualTo(Json.MAPPER.createObjectNode());
		JsonNode results = messages.get(2);
		assertThat(results.get("role").asString()).isEqualTo("user");
		assertThat(results.get("content")).hasSize(4);
		assertThat(results.at("/content/0/type").asString()).isEqualTo("tool_result");
		assertThat(results.at("/content/0/tool_use_id").asString()).isEqualTo("toolu_1");
		assertThat(results.at("/content/0/content").asString()).isEqualTo("18C");
		assertThat(results.at("/content/2/tool_use_id").asString()).isEqualTo("toolu_3");
		// the user's follow-up comes after the results, in the same turn
		assertThat(results.at("/content/3/type").asString()).isEqualTo("text");
		assertThat(results.at("/content/3/text").asString()).isEqualTo("Which is warmer?");
	}

	@Test
	void anAssistantTurnThatOnlyCallsToolsHasNoEmptyTextBlock() throws Exception {
		JsonNode body = sentBody(ChatRequest.of(null, List.of(ChatMessage.user("Time?"),
				ChatMessage.assistantToolCalls(List.of(new ToolCall("toolu_9", "now", "{}"))),
				ChatMessage.tool("toolu_9", "noon"))));
		assertThat(body.at("/messages/1/content")).hasSize(1);
		assertThat(body.at("/messages/1/content/0/type").asString()).isEqualTo("tool_use");
		assertThat(body.at("/messages/2/content/0/type").asString()).isEqualTo("tool_result");
	}

	@Test
	void withoutAKeyNoApiKeyHeaderIsSentAndTheBuilderSettingsApply() throws Exception {
		AnthropicClient local = AnthropicClient.builder(baseUrl("normal") + "/").model("local-model").maxTokens(64)
			.anthropicVersion("2099-01-01").build();
		local.stream(REQUEST).blockLast(Duration.ofSeconds(10));
		assertThat(requestHeaders.get(0).contains("x-api-key")).isFalse();
		assertThat(requestHeaders.get(0).get("anthropic-version")).isEqualTo("2099-01-01");
		JsonNode body = Json.MAPPER.readTree(requestBodies.get(0));
		assertThat(body.get("model").asString()).isEqualTo("local-model");
		assertThat(body.get("max_tokens").asInt()).isEqualTo(64);
		assertThat(local.toString()).contains("apiKey=none").contains("anthropicVersion=2099-01-01");
	}

	@Test
	void requestsTheApiCannotTakeFailBeforeSendingNamingTheProblem() {
		StepVerifier.create(AnthropicClient.builder(baseUrl("normal")).build().stream(REQUEST))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
						.hasMessageContaining("model"))
				.verify(Duration.ofSeconds(5));
		StepVerifier.create(client("normal").stream(ChatRequest.of(null, List.of(ChatMessage.system("Only this.")))))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
						.hasMessageContaining("only system messages"))
				.verify(Duration.ofSeconds(5));
		ChatRequest badArguments = ChatRequest.of(null, List.of(ChatMessage.user("Hi"),
				ChatMessage.assistantToolCalls(List.of(new ToolCall("toolu_x", "f", "[1,2]")))));
		StepVerifier.create(client("normal").stream(badArguments))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
						.hasMessageContaining("messages[1].toolCalls[0].arguments")
						.hasMessageContaining("toolu_x")
						.hasMessageContaining("'[1,2]'"))
				.verify(Duration.ofSeconds(5));
		assertThat(requestBodies).isEmpty();
	}

	@Test
	void builderRejectsBadSettingsNamingFieldAndValue() {
		assertThatThrownBy(() -> AnthropicClient.builder("ftp://x/v1"))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("baseUrl").hasMessageContaining("ftp://x/v1");
		assertThatThrownBy(() -> AnthropicClient.builder(null))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("baseUrl");
		assertThatThrownBy(() -> AnthropicClient.builder("http://h/v1").connectTimeout(Duration.ZERO))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("connectTimeout").hasMessageContaining("PT0S");
		assertThatThrownBy(() -> AnthropicClient.builder("http://h/v1").responseTimeout(Duration.ofSeconds(-1)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("responseTimeout");
		assertThatThrownBy(() -> AnthropicClient.builder("http://h/v1").maxTokens(0))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("maxTokens must be > 0, was 0");
		assertThatThrownBy(() -> AnthropicClient.builder("http://h/v1").maxErrorBodyBytes(-1))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("maxErrorBodyBytes must be > 0, was -1");
		assertThatThrownBy(() -> AnthropicClient.builder("http://h/v1").apiKey("sk-ant abc"))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("apiKey").hasMessageNotContaining("abc");
		assertThatThrownBy(() -> AnthropicClient.builder("http://h/v1").model(" "))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("model");
		assertThatThrownBy(() -> AnthropicClient.builder("http://h/v1").anthropicVersion("2023 06 01"))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("anthropicVersion").hasMessageContaining("2023 06 01");
	}
}
