package dev.aiguard.test.mock;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.Usage;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.StallPhase;
import dev.aiguard.provider.AnthropicClient;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.truncation.TokenCounter;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.timeout.ReadTimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.ByteBufFlux;
import reactor.netty.DisposableServer;
import reactor.netty.http.client.HttpClient;
import reactor.netty.http.client.PrematureCloseException;
import reactor.netty.http.server.HttpServer;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The library's {@link AnthropicClient} against the mock's Anthropic route: answers, usage and
 * stop reasons, every fault of the profile as its typed exception, the guard's stall and
 * completeness checks, cancellation, and the route's own rules (non-streaming answers, required
 * fields and headers).
 */
class AnthropicEndpointTest {

	private static final Duration WAIT = Duration.ofSeconds(10);
	private static final String SYSTEM = "Be brief and answer like a mock.";
	private static final JsonMapper JSON = new JsonMapper();

	private MockModelServer mock;
	private AnthropicClient client;

	@BeforeEach
	void start() {
		mock = MockModelServer.builder().faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)))
			.random(() -> 0.0).start();
		client = AnthropicClient.builder(mock.anthropicBaseUrl()).apiKey("sk-ant-mock").model("claude-mock").build();
	}

	@AfterEach
	void stop() {
		mock.stop();
	}

	private static ChatRequest ask(String question) {
		return ChatRequest.of(null, List.of(ChatMessage.system(SYSTEM), ChatMessage.user(question)));
	}

	private static String text(List<ChatChunk> chunks) {
		return chunks.stream().filter(ChatChunk::hasContent).map(ChatChunk::text).collect(Collectors.joining());
	}

	private static int estimate(ChatMessage... messages) {
		return TokenCounter.estimate().count(List.of(messages));
	}

	// ---- answers ----

	@Test
	void streamsTheMockAnswerWithEndTurnUsageAndMessageStop() {
		String question = "How do breakers work?";

		List<ChatChunk> chunks = client.stream(ask(question)).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text(question));
		assertThat(chunks).filteredOn(c -> c.finishReason() != null).extracting(ChatChunk::finishReason)
			.containsExactly("end_turn");
		// the input tokens count the system prompt: it reached the mock as Anthropic's top-level system
		int prompt = estimate(ChatMessage.system(SYSTEM), ChatMessage.user(question));
		assertThat(prompt).isGreaterThan(estimate(ChatMessage.user(question)));
		assertThat(chunks).filteredOn(c -> c.usage() != null).extracting(ChatChunk::usage)
			.containsExactly(new Usage(prompt, MockAnswers.tokens(question).size()));
		assertThat(chunks).filteredOn(ChatChunk::heartbeat).hasSize(1);
		assertThat(chunks.get(0).role()).isEqualTo("assistant");
		assertThat(chunks.get(chunks.size() - 1).terminal()).isTrue();
		assertThat(mock.stats().requests()).isEqualTo(1);
		// the count follows the last byte written: the client may have read it first
		StepVerifier.create(until(() -> mock.stats().completed(), 1)).expectNextCount(1).verifyComplete();
	}

	@Test
	void aNumberedQuestionGetsOneTextDeltaPerToken() {
		List<ChatChunk> chunks = client.stream(ask(MockAnswers.numbered("a", 4))).collectList().block(WAIT);

		assertThat(chunks).filteredOn(ChatChunk::hasContent).extracting(ChatChunk::text)
			.containsExactly("a.1 ", "a.2 ", "a.3 ", "a.4");
	}

	@Test
	void maxTokensCutsTheAnswerWithStopReasonMaxTokens() {
		String question = MockAnswers.numbered("cut", 10);

		List<ChatChunk> chunks = client.stream(ask(question).withMaxTokens(3)).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo("cut.1 cut.2 cut.3 ");
		assertThat(chunks).filteredOn(c -> c.finishReason() != null).extracting(ChatChunk::finishReason)
			.containsExactly("max_tokens");
		assertThat(chunks).filteredOn(c -> c.usage() != null).extracting(c -> c.usage().completionTokens())
			.containsExactly(3);
	}

	@Test
	void theClientSendsTheAnthropicHeadersAndTheSystemPrompt() throws Exception {
		CompletableFuture<HttpHeaders> headers = new CompletableFuture<>();
		CompletableFuture<String> body = new CompletableFuture<>();
		// captures what the client sends, then hands it to the mock and relays the answer
		DisposableServer relay = HttpServer.create().host("127.0.0.1").port(0)
			.route(routes -> routes.post("/v1/messages", (request, response) -> request.receive().aggregate()
				.asString(StandardCharsets.UTF_8)
				.flatMap(sent -> {
					headers.complete(request.requestHeaders().copy());
					body.complete(sent);
					return HttpClient.create()
						.headers(h -> h.add(request.requestHeaders()).remove(HttpHeaderNames.HOST))
						.post().uri(mock.anthropicBaseUrl() + "/messages")
						.send(ByteBufFlux.fromString(Mono.just(sent)))
						.response((answer, in) -> response.status(answer.status())
							.header(HttpHeaderNames.CONTENT_TYPE, answer.responseHeaders().get(HttpHeaderNames.CONTENT_TYPE))
							.send(in.retain()))
						.then();
				})))
			.bindNow();
		try {
			AnthropicClient relayed = AnthropicClient.builder("http://127.0.0.1:" + relay.port() + "/v1")
				.apiKey("sk-ant-mock").model("claude-mock").build();

			List<ChatChunk> chunks = relayed.stream(ask("Hello there")).collectList().block(WAIT);

			assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello there"));
			HttpHeaders sent = headers.get(5, TimeUnit.SECONDS);
			assertThat(sent.get("x-api-key")).isEqualTo("sk-ant-mock");
			assertThat(sent.get("anthropic-version")).isEqualTo("2023-06-01");
			assertThat(sent.get("content-type")).isEqualTo("application/json");
			JsonNode root = JSON.readTree(body.get(5, TimeUnit.SECONDS));
			assertThat(root.get("system").asString()).isEqualTo(SYSTEM);
			assertThat(root.get("model").asString()).isEqualTo("claude-mock");
			assertThat(root.get("max_tokens").asInt()).isEqualTo(AnthropicClient.DEFAULT_MAX_TOKENS);
			assertThat(root.get("stream").asBoolean()).isTrue();
			assertThat(root.get("messages")).hasSize(1);
			assertThat(root.at("/messages/0/role").asString()).isEqualTo("user");
		}
		finally {
			relay.disposeNow(WAIT);
		}
	}

	// ---- faults ----

	@Test
	void injectedErrorsAreAnthropicErrorBodiesThatBecomeTheTypedExceptions() {
		mock.faults(mock.faults().withErrors(1.0, 429, 2));
		StepVerifier.create(client.stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class, r -> {
				assertThat(r.retryAfter()).contains(Duration.ofSeconds(2));
				assertThat(r.errorType()).isEqualTo("rate_limit_error");
				assertThat(r.provider()).isEqualTo("anthropic");
			}))
			.verify(WAIT);

		mock.faults(mock.faults().withErrors(1.0, 529, 0));
		StepVerifier.create(client.stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderOverloadedException.class, o -> {
				assertThat(o.status()).isEqualTo(529);
				assertThat(o.errorType()).isEqualTo("overloaded_error");
				assertThat(o.retryable()).isTrue();
			}))
			.verify(WAIT);

		mock.faults(mock.faults().withErrors(1.0, 500, 0));
		StepVerifier.create(client.stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderServerException.class,
					s -> assertThat(s.errorType()).isEqualTo("api_error")))
			.verify(WAIT);

		assertThat(mock.stats().injectedErrors()).isEqualTo(3);
		assertThat(mock.stats().completed()).isZero();
	}

	@Test
	void contextLimitAnswersPromptIsTooLongWithLimitAndActual() {
		mock.faults(mock.faults().withContextLimit(20));
		String longQuestion = "word ".repeat(40);

		StepVerifier.create(client.stream(ask(longQuestion)))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ContextLengthExceededException.class, c -> {
				assertThat(c.limit()).hasValue(20);
				assertThat(c.actual()).hasValue(estimate(ChatMessage.system(SYSTEM), ChatMessage.user(longQuestion)));
				assertThat(c.errorType()).isEqualTo("invalid_request_error");
				assertThat(c.getMessage()).contains("prompt is too long");
			}))
			.verify(WAIT);
		assertThat(mock.stats().contextRejections()).isEqualTo(1);
		assertThat(text(client.stream(ChatRequest.of(null, List.of(ChatMessage.user("short")))).collectList().block(WAIT)))
			.isEqualTo(MockAnswers.text("short"));
	}

	@Test
	void dropAfterTokensIsAConnectionFailureAfterThatManyTokens() {
		mock.faults(mock.faults().withDropAfter(3));

		StepVerifier.create(client.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.expectNextCount(3)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderConnectionException.class,
					c -> assertThat(c.retryable()).isTrue()))
			.verify(WAIT);
		assertThat(mock.stats().dropped()).isEqualTo(1);
		assertThat(mock.stats().cancelled()).isZero();
		StepVerifier.create(until(() -> mock.stats().inProgress(), 0)).expectNextCount(1).verifyComplete();
	}

	@Test
	void omittedTerminalIsAnIncompleteStreamForTheGuard() throws Exception {
		mock.faults(mock.faults().withOmitTerminal(true));
		String question = MockAnswers.numbered("o", 5);
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("anthropic-incomplete")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5)).idleTimeout(Duration.ofSeconds(5)))
			.onReport(report::complete)
			.build());

		StepVerifier.create(client.stream(ask(question)).transform(guard).filter(ChatChunk::hasContent))
			.expectNextCount(5)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.hasCauseInstanceOf(IncompleteStreamException.class))
			.verify(WAIT);
		assertThat(report.get(5, TimeUnit.SECONDS).outcome()).isEqualTo(Outcome.INCOMPLETE);
		// the count follows the last byte written: the client may have read it first
		StepVerifier.create(until(() -> mock.stats().completed(), 1)).expectNextCount(1).verifyComplete();
	}

	@Test
	void aStallMidStreamIsCaughtWithinTheIdleDeadlineAndTheMockSeesTheConnectionClosed() throws Exception {
		mock.faults(mock.faults().withPace(0, 5).withStallAfter(3));
		Duration idle = Duration.ofMillis(300);
		// the guard's clock is the test's: the deadline is measured exactly, whatever the machine's load
		VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		CompletableFuture<GuardReport> report = new CompletableFuture<>();
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("anthropic-stall")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5)).idleTimeout(idle).idleChecks(10))
			.timer(clock)
			.onReport(report::complete)
			.build());

		StepVerifier.create(client.stream(ask(MockAnswers.numbered("s", 10))).transform(guard).filter(ChatChunk::hasContent))
			.expectNext(ChatChunk.token("s.1 "), ChatChunk.token("s.2 "), ChatChunk.token("s.3 "))
			.then(() -> clock.advanceTimeBy(idle.minusMillis(1)))
			.expectNoEvent(Duration.ofMillis(100))
			.then(() -> clock.advanceTimeBy(Duration.ofMillis(101)))
			.expectErrorSatisfies(e -> {
				assertThat(e).isInstanceOf(PartialStreamException.class);
				assertThat(e.getCause()).isInstanceOfSatisfying(StreamStalledException.class, s -> {
					assertThat(s.phase()).isEqualTo(StallPhase.IDLE);
					assertThat(s.tokensReceived()).isEqualTo(3);
					assertThat(s.elapsed()).as("caught within the deadline + 100 ms")
						.isBetween(idle, idle.plusMillis(100));
				});
			})
			.verify(WAIT);
		assertThat(report.get(5, TimeUnit.SECONDS).outcome()).isEqualTo(Outcome.STALLED);
		assertThat(mock.stats().stalled()).isEqualTo(1);
		StepVerifier.create(until(() -> mock.stats().cancelled(), 1)).expectNextCount(1).verifyComplete();
		StepVerifier.create(until(() -> mock.stats().inProgress(), 0)).expectNextCount(1).verifyComplete();
	}

	@Test
	void aSlowFirstTokenMissesTheGuardsFirstTokenDeadline() {
		mock.faults(mock.faults().withPace(2_000, 1));
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("anthropic-first-token")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofMillis(300)))
			.build());

		StepVerifier.create(client.stream(ask("Hello")).transform(guard).filter(ChatChunk::hasContent))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(StreamStalledException.class,
					s -> assertThat(s.phase()).isEqualTo(StallPhase.FIRST_TOKEN)))
			.verify(WAIT);
		StepVerifier.create(until(() -> mock.stats().cancelled(), 1)).expectNextCount(1).verifyComplete();
	}

	@Test
	void cancellingTheStreamClosesTheConnectionAtTheMock() {
		mock.faults(mock.faults().withPace(0, 20));

		StepVerifier.create(client.stream(ask(MockAnswers.numbered("c", 100))).filter(ChatChunk::hasContent).take(3))
			.expectNextCount(3)
			.verifyComplete();

		StepVerifier.create(until(() -> mock.stats().cancelled(), 1)).expectNextCount(1).verifyComplete();
		StepVerifier.create(until(() -> mock.stats().inProgress(), 0)).expectNextCount(1).verifyComplete();
		assertThat(mock.stats().completed()).isZero();
	}

	// ---- the route's own rules ----

	@Test
	void withoutStreamTheAnswerIsOneMessageObject() throws Exception {
		Raw raw = post(true, "{\"model\":\"claude-mock\",\"max_tokens\":1024,\"system\":\"" + SYSTEM
				+ "\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Why stall?\"}]}]}");

		assertThat(raw.status()).isEqualTo(200);
		assertThat(raw.contentType()).startsWith("application/json");
		JsonNode message = JSON.readTree(raw.body());
		assertThat(message.get("type").asString()).isEqualTo("message");
		assertThat(message.get("role").asString()).isEqualTo("assistant");
		assertThat(message.get("model").asString()).isEqualTo("claude-mock");
		assertThat(message.at("/content/0/type").asString()).isEqualTo("text");
		assertThat(message.at("/content/0/text").asString()).isEqualTo(MockAnswers.text("Why stall?"));
		assertThat(message.get("stop_reason").asString()).isEqualTo("end_turn");
		assertThat(message.at("/usage/input_tokens").asInt())
			.isEqualTo(estimate(ChatMessage.system(SYSTEM), ChatMessage.user("Why stall?")));
		assertThat(message.at("/usage/output_tokens").asInt()).isEqualTo(MockAnswers.tokens("Why stall?").size());
		// the count follows the last byte written: the client may have read it first
		StepVerifier.create(until(() -> mock.stats().completed(), 1)).expectNextCount(1).verifyComplete();
	}

	@Test
	void withoutStreamAStallSendsNothingAndADropClosesTheConnection() {
		mock.faults(mock.faults().withStallAfter(2));
		String body = "{\"model\":\"m\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";

		StepVerifier.create(postFor(body, Duration.ofMillis(300)))
			.expectError(ReadTimeoutException.class)
			.verify(WAIT);
		assertThat(mock.stats().stalled()).isEqualTo(1);
		StepVerifier.create(until(() -> mock.stats().cancelled(), 1)).expectNextCount(1).verifyComplete();
		StepVerifier.create(until(() -> mock.stats().inProgress(), 0)).expectNextCount(1).verifyComplete();

		mock.faults(mock.faults().withStallAfter(null).withDropAfter(2));
		StepVerifier.create(postFor(body, WAIT))
			.expectError(PrematureCloseException.class)
			.verify(WAIT);
		assertThat(mock.stats().dropped()).isEqualTo(1);
		assertThat(mock.stats().completed()).isZero();
		StepVerifier.create(until(() -> mock.stats().inProgress(), 0)).expectNextCount(1).verifyComplete();
	}

	@Test
	void requestsTheApiWouldRefuseGetAnInvalidRequestError() throws Exception {
		String fine = "{\"model\":\"m\",\"max_tokens\":10,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
		assertRefused(post(false, fine), "anthropic-version");
		assertRefused(post(true, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}"), "max_tokens");
		assertRefused(post(true, "{\"model\":\"m\",\"max_tokens\":10,\"messages\":[]}"), "messages");
		assertRefused(post(true, "{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}"),
				"messages.0.role");
		assertRefused(post(true, "not json"), "not valid JSON");
		assertThat(post(true, fine).status()).isEqualTo(200);
	}

	private static void assertRefused(Raw raw, String naming) throws Exception {
		assertThat(raw.status()).isEqualTo(400);
		JsonNode body = JSON.readTree(raw.body());
		assertThat(body.get("type").asString()).isEqualTo("error");
		assertThat(body.at("/error/type").asString()).isEqualTo("invalid_request_error");
		assertThat(body.at("/error/message").asString()).contains(naming);
		ProviderException e = ProviderErrors.fromHttp("anthropic", raw.status(), name -> null, raw.body());
		assertThat(e).isInstanceOf(ProviderClientException.class);
		assertThat(e.getMessage()).contains(naming);
	}

	// ---- helpers ----

	private record Raw(int status, String contentType, String body) {
	}

	/** A POST to the mock's route without the library's client, with or without {@code anthropic-version}. */
	private Raw post(boolean withVersion, String body) {
		return post(withVersion, body, WAIT).block(WAIT);
	}

	/** A POST with {@code anthropic-version} whose response must start within {@code responseTimeout}. */
	private Mono<Raw> postFor(String body, Duration responseTimeout) {
		return post(true, body, responseTimeout);
	}

	private Mono<Raw> post(boolean withVersion, String body, Duration responseTimeout) {
		return HttpClient.create()
			.responseTimeout(responseTimeout)
			.headers(h -> {
				h.set(HttpHeaderNames.CONTENT_TYPE, "application/json");
				if (withVersion) {
					h.set("anthropic-version", "2023-06-01");
				}
			})
			.post().uri(mock.anthropicBaseUrl() + "/messages")
			.send(Mono.fromCallable(() -> Unpooled.copiedBuffer(body, StandardCharsets.UTF_8)))
			.responseSingle((response, bytes) -> bytes.asString(StandardCharsets.UTF_8).defaultIfEmpty("")
				.map(text -> new Raw(response.status().code(),
						String.valueOf(response.responseHeaders().get(HttpHeaderNames.CONTENT_TYPE)), text)));
	}

	/** Emits once {@code value} reads {@code wanted}. */
	static Flux<Long> until(LongSupplier value, long wanted) {
		return Flux.interval(Duration.ofMillis(10)).map(i -> value.getAsLong()).filter(v -> v == wanted).take(1)
			.timeout(WAIT);
	}
}
