package dev.aiguard.provider;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.aiguard.ErrorClassifier;
import tools.jackson.databind.JsonNode;
import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.core.Outcome;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
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
 * The client against a loopback Reactor Netty server serving canned streams, alone and through
 * the guard.
 */
class OpenAiCompatibleClientTest extends CannedServerFixture {

	static final String KEY = "sk-test-SECRET123";

	static final ChatRequest REQUEST = ChatRequest.of(null, List.of(ChatMessage.user("Say hello")));

	OpenAiCompatibleClientTest() {
		super("/chat/completions", Fixtures.OPENAI_STREAM);
	}

	// ---- the canned server ----

	@Override
	Publisher<Void> respond(String scenario, HttpServerResponse response) {
		String stream = Fixtures.OPENAI_STREAM;
		switch (scenario) {
			case "stalled":
				return sse(response, Flux.just(Fixtures.firstEvents(stream, 3)).concatWith(Flux.never()));
			case "tokens-only":
				return sse(response, Flux.just(Fixtures.firstEvents(stream, 3)));
			case "no-done":
				return sse(response, Flux.just(Fixtures.firstEvents(stream, 5)));
			case "in-band":
				return sse(response, Flux.just(Fixtures.firstEvents(stream, 2), Fixtures.OPENAI_IN_BAND_ERROR));
			case "forever":
				return sse(response, Flux.just(Fixtures.firstEvents(stream, 1)).concatWith(Flux.interval(Duration.ofMillis(5))
					.map(i -> "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t" + i + "\"}}]}\n\n")));
			case "rate-limited":
				return json(response.status(429)
					.header("retry-after", "2")
					.header("x-ratelimit-remaining-requests", "0")
					.header("x-ratelimit-reset-requests", "1s"), ProviderErrorsTest.OPENAI_RATE_LIMIT);
			case "context":
				return json(response.status(400), ProviderErrorsTest.OPENAI_CONTEXT);
			case "unauthorized":
				return json(response.status(401), "{\"error\":{\"message\":\"Incorrect API key provided: " + KEY
						+ ". You can find your API key at https://platform.openai.com/account/api-keys.\","
						+ "\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"invalid_api_key\"}}");
			default:
				return super.respond(scenario, response);
		}
	}

	// ---- helpers ----

	OpenAiCompatibleClient client(String scenario) {
		return OpenAiCompatibleClient.builder(baseUrl(scenario)).apiKey(KEY).model("test-model").build();
	}

	/** A guard with generous real-time deadlines that report to {@code report}. */
	static AiGuard<ChatChunk> guard(CompletableFuture<GuardReport> report) {
		return AiGuard.of(GuardPolicy.builder("wire")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(20)).idleTimeout(Duration.ofSeconds(20)))
			.errorClassifier(ErrorClassifier::outcomeOf)
			.onReport(report::complete)
			.build());
	}

	static GuardReport await(CompletableFuture<GuardReport> report) throws Exception {
		return report.get(10, TimeUnit.SECONDS);
	}

	static List<String> texts(List<ChatChunk> chunks) {
		return chunks.stream().filter(ChatChunk::hasContent).map(ChatChunk::text).toList();
	}

	// ---- streams ----

	@Test
	void normalStreamDecodesToTheFixtureChunks() {
		assertThat(client("normal").stream(REQUEST).collectList().block(Duration.ofSeconds(10)))
				.isEqualTo(Fixtures.OPENAI_CHUNKS);
	}

	@Test
	void normalStreamThroughTheGuardSucceedsWithExactTokens() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		List<ChatChunk> chunks = client("normal").stream(REQUEST).transform(guard(report)).collectList()
			.block(Duration.ofSeconds(10));
		assertThat(texts(chunks)).containsExactly("Hel", "lo");
		GuardReport r = await(report);
		assertThat(r.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(r.tokens()).isEqualTo(2);
		assertThat(r.finishReason()).isEqualTo("stop");
	}

	@Test
	void oneByteWritesDecodeToTheSameChunks() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		assertThat(client("bytes").stream(REQUEST).transform(guard(report)).collectList().block(Duration.ofSeconds(10)))
				.isEqualTo(Fixtures.OPENAI_CHUNKS);
		assertThat(await(report).outcome()).isEqualTo(Outcome.SUCCESS);
	}

	@Test
	void streamThatStallsAfterThreeEventsIsCaughtByTheIdleDeadline() throws Exception {
		VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("wire")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(10)).idleTimeout(Duration.ofSeconds(30)))
			.timer(clock)
			.errorClassifier(ErrorClassifier::outcomeOf)
			.onReport(report::complete)
			.build());
		StepVerifier.create(client("stalled").stream(REQUEST).transform(guard))
				.expectNext(Fixtures.OPENAI_CHUNKS.get(0), ChatChunk.token("Hel"), ChatChunk.token("lo"))
				.then(() -> clock.advanceTimeBy(Duration.ofSeconds(29)))
				.expectNoEvent(Duration.ofMillis(50))
				.then(() -> clock.advanceTimeBy(Duration.ofSeconds(10)))
				.expectErrorSatisfies(partial -> {
					// tokens had reached the subscriber: the stall arrives marked partial
					assertThat(partial).isInstanceOf(PartialStreamException.class);
					assertThat(((PartialStreamException) partial).tokensDelivered()).isEqualTo(2);
					Throwable e = partial.getCause();
					assertThat(e).isInstanceOf(StreamStalledException.class);
					assertThat(((StreamStalledException) e).phase()).isEqualTo(StallPhase.IDLE);
					assertThat(((StreamStalledException) e).tokensReceived()).isEqualTo(2);
				})
				.verify(Duration.ofSeconds(10));
		assertThat(await(report).outcome()).isEqualTo(Outcome.STALLED);
		// the stalled exchange was abandoned: its connection is closed, not pooled
		StepVerifier.create(connectionsClosed.asFlux().take(1)).expectNextCount(1).verifyComplete();
	}

	@Test
	void connectionClosedMidEventIsARetryableConnectionFailure() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		StepVerifier.create(client("cut").stream(REQUEST).transform(guard(report)))
				.expectNext(Fixtures.OPENAI_CHUNKS.get(0), ChatChunk.token("Hel"), ChatChunk.token("lo"))
				.expectErrorSatisfies(partial -> {
					assertThat(partial).isInstanceOf(PartialStreamException.class);
					Throwable e = partial.getCause();
					assertThat(e).isInstanceOf(ProviderConnectionException.class);
					assertThat(((ProviderException) e).retryable()).isTrue();
					assertThat(e.getMessage()).contains("127.0.0.1").doesNotContain(KEY);
				})
				.verify(Duration.ofSeconds(10));
		GuardReport r = await(report);
		assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
		assertThat(r.tokens()).isEqualTo(2);
	}

	@Test
	void streamEndingWithoutDoneOrFinishReasonIsIncomplete() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		StepVerifier.create(client("tokens-only").stream(REQUEST).transform(guard(report)))
				.expectNext(Fixtures.OPENAI_CHUNKS.get(0), ChatChunk.token("Hel"), ChatChunk.token("lo"))
				.expectErrorSatisfies(partial -> assertThat(partial).isInstanceOf(PartialStreamException.class)
						.hasCauseInstanceOf(IncompleteStreamException.class))
				.verify(Duration.ofSeconds(10));
		assertThat(await(report).outcome()).isEqualTo(Outcome.INCOMPLETE);
	}

	@Test
	void streamMissingOnlyDoneButWithFinishReasonCountsAsComplete() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		List<ChatChunk> chunks = client("no-done").stream(REQUEST).transform(guard(report)).collectList()
			.block(Duration.ofSeconds(10));
		assertThat(chunks).isEqualTo(Fixtures.OPENAI_CHUNKS.subList(0, 5));
		assertThat(await(report).outcome()).isEqualTo(Outcome.SUCCESS);
	}

	@Test
	void inBandErrorAfterTokensIsAFailure() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		StepVerifier.create(client("in-band").stream(REQUEST).transform(guard(report)))
				.expectNext(Fixtures.OPENAI_CHUNKS.get(0), ChatChunk.token("Hel"))
				.expectErrorSatisfies(partial -> {
					assertThat(partial).isInstanceOf(PartialStreamException.class);
					Throwable e = partial.getCause();
					assertThat(e).isInstanceOf(ProviderStreamException.class);
					assertThat(((ProviderException) e).errorType()).isEqualTo("server_error");
					assertThat(((ProviderException) e).retryable()).isTrue();
				})
				.verify(Duration.ofSeconds(10));
		GuardReport r = await(report);
		assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
		assertThat(r.tokens()).isEqualTo(1);
	}

	// ---- errors before streaming ----

	@Test
	void rateLimitCarriesRetryAfterAndIsAFailure() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		StepVerifier.create(client("rate-limited").stream(REQUEST).transform(guard(report)))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(RateLimitedException.class);
					RateLimitedException r = (RateLimitedException) e;
					assertThat(r.status()).isEqualTo(429);
					assertThat(r.retryAfter()).contains(Duration.ofSeconds(2));
					assertThat(r.rateLimits().remainingRequests()).isZero();
					assertThat(r.rateLimits().resetRequests()).isEqualTo(Duration.ofSeconds(1));
				})
				.verify(Duration.ofSeconds(10));
		GuardReport r = await(report);
		assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
		assertThat(r.tokens()).isZero();
	}

	@Test
	void contextLengthIsAClientErrorWithLimitAndActual() throws Exception {
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		StepVerifier.create(client("context").stream(REQUEST).transform(guard(report)))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ContextLengthExceededException.class);
					assertThat(((ContextLengthExceededException) e).limit()).hasValue(8192);
					assertThat(((ContextLengthExceededException) e).actual()).hasValue(9013);
				})
				.verify(Duration.ofSeconds(10));
		assertThat(await(report).outcome()).isEqualTo(Outcome.CLIENT_ERROR);
	}

	@Test
	void errorBodyIsReadOnlyUpToTheLimit() {
		OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(baseUrl("huge-error")).model("m")
			.maxErrorBodyBytes(2048).httpClient(pooled(1)).build();
		StepVerifier.create(client.stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderServerException.class);
					assertThat(((ProviderException) e).status()).isEqualTo(502);
					assertThat(e.getMessage().length()).isLessThan(600);
				})
				.verify(Duration.ofSeconds(10));
		// the rest of the megabyte was not read: the connection was closed rather than drained
		StepVerifier.create(connectionsClosed.asFlux().take(1)).expectNextCount(1).verifyComplete();
	}

	@Test
	void apiKeyNeverAppearsInMessagesOrToString() {
		OpenAiCompatibleClient client = client("unauthorized");
		StepVerifier.create(client.stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderClientException.class);
					assertThat(((ProviderException) e).status()).isEqualTo(401);
					assertThat(e.getMessage()).contains("Incorrect API key provided: [redacted]").doesNotContain("SECRET");
				})
				.verify(Duration.ofSeconds(10));
		assertThat(client.toString()).doesNotContain("SECRET").contains("apiKey=[set]");
		assertThat(client.scrub("key sk-proj-abc***xyz1 leaked")).isEqualTo("key [redacted] leaked");
	}

	@Test
	void noResponseHeadersInTimeIsAConnectionFailure() {
		VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(baseUrl("no-headers")).model("m")
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
		OpenAiCompatibleClient client = OpenAiCompatibleClient.builder("http://127.0.0.1:" + port + "/v1").model("m").build();
		StepVerifier.create(client.stream(REQUEST))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderConnectionException.class);
					assertThat(ProviderErrors.isRetryable(e)).isTrue();
					assertThat(ErrorClassifier.outcomeOf(e)).isEqualTo(Outcome.FAILURE);
				})
				.verify(Duration.ofSeconds(10));
	}

	// ---- connection handling ----

	@Test
	void cancelClosesTheConnectionInsteadOfPoolingItHalfRead() {
		HttpClient http = pooled(1);
		OpenAiCompatibleClient forever = OpenAiCompatibleClient.builder(baseUrl("forever")).model("m").httpClient(http).build();
		StepVerifier.create(forever.stream(REQUEST).filter(ChatChunk::hasContent).take(3))
				.expectNextCount(3)
				.verifyComplete();
		StepVerifier.create(connectionsClosed.asFlux().take(1)).expectNext(1).verifyComplete();
		// the pool has one slot: the next request works, on a fresh connection
		OpenAiCompatibleClient normal = OpenAiCompatibleClient.builder(baseUrl("normal")).model("m").httpClient(http).build();
		assertThat(normal.stream(REQUEST).collectList().block(Duration.ofSeconds(10))).isEqualTo(Fixtures.OPENAI_CHUNKS);
		assertThat(connectionsOpened.get()).isEqualTo(2);
	}

	@Test
	void completedStreamReturnsItsConnectionToThePool() {
		HttpClient http = pooled(1);
		OpenAiCompatibleClient normal = OpenAiCompatibleClient.builder(baseUrl("normal")).model("m").httpClient(http).build();
		for (int i = 0; i < 3; i++) {
			assertThat(normal.stream(REQUEST).collectList().block(Duration.ofSeconds(10))).isEqualTo(Fixtures.OPENAI_CHUNKS);
		}
		assertThat(connectionsOpened.get()).isEqualTo(1);
	}

	// ---- the request ----

	@Test
	void requestAsksForAStreamWithUsageAndSerialisesToolCalls() throws Exception {
		ChatRequest request = new ChatRequest("gpt-test", List.of(ChatMessage.system("Be brief."),
				ChatMessage.user("Weather in Paris?"),
				ChatMessage.assistantToolCalls(List.of(new ToolCall("call_1", "get_weather", "{\"city\":\"Paris\"}"))),
				ChatMessage.tool("call_1", "18C"),
				ChatMessage.user("Thanks")), 100, 0.2);
		client("normal").stream(request).blockLast(Duration.ofSeconds(10));
		JsonNode body = Json.MAPPER.readTree(requestBodies.get(0));
		assertThat(body.get("model").asString()).isEqualTo("gpt-test");
		assertThat(body.get("stream").asBoolean()).isTrue();
		assertThat(body.at("/stream_options/include_usage").asBoolean()).isTrue();
		assertThat(body.get("max_tokens").asInt()).isEqualTo(100);
		assertThat(body.get("temperature").asDouble()).isEqualTo(0.2);
		assertThat(body.get("messages")).hasSize(5);
		assertThat(body.at("/messages/0/role").asString()).isEqualTo("system");
		assertThat(body.at("/messages/2/content").isNull()).isTrue();
		assertThat(body.at("/messages/2/tool_calls/0/id").asString()).isEqualTo("call_1");
		assertThat(body.at("/messages/2/tool_calls/0/type").asString()).isEqualTo("function");
		assertThat(body.at("/messages/2/tool_calls/0/function/name").asString()).isEqualTo("get_weather");
		assertThat(body.at("/messages/2/tool_calls/0/function/arguments").asString()).isEqualTo("{\"city\":\"Paris\"}");
		assertThat(body.at("/messages/3/role").asString()).isEqualTo("tool");
		assertThat(body.at("/messages/3/tool_call_id").asString()).isEqualTo("call_1");
		assertThat(body.at("/messages/3/content").asString()).isEqualTo("18C");
		HttpHeaders headers = requestHeaders.get(0);
		assertThat(headers.get("authorization")).isEqualTo("Bearer " + KEY);
		assertThat(headers.get("accept")).isEqualTo("text/event-stream");
		assertThat(headers.get("content-type")).isEqualTo("application/json");
	}

	@Test
	void aResponseFormatIsSentAsAJsonSchemaAndNoneWithoutIt() throws Exception {
		String schema = "{\"type\":\"object\",\"required\":[\"city\"]}";
		client("normal").stream(REQUEST.withResponseFormat(dev.aiguard.chat.ResponseFormat.jsonSchema("weather", schema)))
				.blockLast(Duration.ofSeconds(10));
		client("normal").stream(REQUEST).blockLast(Duration.ofSeconds(10));
		JsonNode body = Json.MAPPER.readTree(requestBodies.get(0));
		assertThat(body.at("/response_format/type").asString()).isEqualTo("json_schema");
		assertThat(body.at("/response_format/json_schema/name").asString()).isEqualTo("weather");
		assertThat(body.at("/response_format/json_schema/strict").asBoolean()).isTrue();
		assertThat(body.at("/response_format/json_schema/schema")).isEqualTo(Json.MAPPER.readTree(schema));
		assertThat(Json.MAPPER.readTree(requestBodies.get(1)).has("response_format")).isFalse();
	}

	@Test
	void withoutAKeyNoAuthorizationIsSentAndTheClientModelIsUsed() throws Exception {
		OpenAiCompatibleClient local = OpenAiCompatibleClient.builder(baseUrl("normal") + "/").model("llama3.2")
			.includeUsage(false).build();
		local.stream(REQUEST).blockLast(Duration.ofSeconds(10));
		assertThat(requestHeaders.get(0).contains("authorization")).isFalse();
		JsonNode body = Json.MAPPER.readTree(requestBodies.get(0));
		assertThat(body.get("model").asString()).isEqualTo("llama3.2");
		assertThat(body.has("stream_options")).isFalse();
		assertThat(local.toString()).contains("apiKey=none");
	}

	@Test
	void requestWithoutAnyModelFailsBeforeSending() {
		OpenAiCompatibleClient noModel = OpenAiCompatibleClient.builder(baseUrl("normal")).build();
		StepVerifier.create(noModel.stream(REQUEST))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
						.hasMessageContaining("model"))
				.verify(Duration.ofSeconds(5));
		assertThat(requestBodies).isEmpty();
	}

	@Test
	void builderRejectsBadSettingsNamingFieldAndValue() {
		assertThatThrownBy(() -> OpenAiCompatibleClient.builder("ftp://x/v1"))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("baseUrl").hasMessageContaining("ftp://x/v1");
		assertThatThrownBy(() -> OpenAiCompatibleClient.builder("not a url"))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("baseUrl");
		assertThatThrownBy(() -> OpenAiCompatibleClient.builder("http://h/v1").connectTimeout(Duration.ZERO))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("connectTimeout").hasMessageContaining("PT0S");
		assertThatThrownBy(() -> OpenAiCompatibleClient.builder("http://h/v1").responseTimeout(Duration.ofSeconds(-1)))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("responseTimeout");
		assertThatThrownBy(() -> OpenAiCompatibleClient.builder("http://h/v1").maxErrorBodyBytes(0))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("maxErrorBodyBytes must be > 0, was 0");
		assertThatThrownBy(() -> OpenAiCompatibleClient.builder("http://h/v1").apiKey("sk-abc def"))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("apiKey").hasMessageNotContaining("abc");
		assertThatThrownBy(() -> OpenAiCompatibleClient.builder("http://h/v1").model(" "))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("model");
	}
}
