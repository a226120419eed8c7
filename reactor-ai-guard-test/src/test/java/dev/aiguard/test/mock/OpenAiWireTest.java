package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.OpenAiCompatibleClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.http.client.PrematureCloseException;
import reactor.test.StepVerifier;
import tools.jackson.databind.JsonNode;

import static dev.aiguard.test.mock.RawHttp.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The mock as an OpenAI client sees it on the wire: whole and streamed answers, roles and content
 * forms, the usage chunk, the model list and OpenAI's error objects. Raw Reactor Netty requests
 * where the library's client never sends the request; the library's client where it does.
 */
class OpenAiWireTest {

	private MockModelServer mock;
	private String chatUrl;

	@BeforeEach
	void start() {
		mock = MockModelServer.builder().faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1))).start();
		chatUrl = mock.baseUrl() + "/chat/completions";
	}

	@AfterEach
	void stop() {
		mock.close();
	}

	private static String user(String question, String extra) {
		return "{\"model\":\"mock-1\",\"messages\":[{\"role\":\"user\",\"content\":\"" + question + "\"}]" + extra + "}";
	}

	private static String streamedText(List<JsonNode> events) {
		return events.stream()
			.map(e -> e.path("choices").path(0).path("delta").path("content").asString(""))
			.collect(Collectors.joining());
	}

	@Test
	void withoutStreamTheAnswerIsOneChatCompletionObject() {
		for (String streamField : List.of("", ",\"stream\":false")) {
			RawHttp.Reply reply = RawHttp.post(chatUrl, user("How do breakers work?", streamField));

			assertThat(reply.status()).isEqualTo(200);
			assertThat(reply.headers().get("content-type")).isEqualTo("application/json");
			JsonNode completion = reply.json();
			assertThat(completion.path("object").asString()).isEqualTo("chat.completion");
			assertThat(completion.path("id").asString()).startsWith("chatcmpl-");
			assertThat(completion.path("model").asString()).isEqualTo("mock-1");
			JsonNode choice = completion.path("choices").path(0);
			assertThat(choice.path("index").asInt(-1)).isZero();
			assertThat(choice.path("message").path("role").asString()).isEqualTo("assistant");
			assertThat(choice.path("message").path("content").asString())
				.isEqualTo(MockAnswers.text("How do breakers work?"));
			assertThat(choice.path("finish_reason").asString()).isEqualTo("stop");
			JsonNode usage = completion.path("usage");
			int completionTokens = MockAnswers.tokens("How do breakers work?").size();
			assertThat(usage.path("completion_tokens").asInt()).isEqualTo(completionTokens);
			assertThat(usage.path("prompt_tokens").asInt()).isPositive();
			assertThat(usage.path("total_tokens").asInt())
				.isEqualTo(usage.path("prompt_tokens").asInt() + completionTokens);
		}
		// the count follows the last byte written: the client may have read it first
		reactor.test.StepVerifier.create(AnthropicEndpointTest.until(() -> mock.stats().completed(), 2))
			.expectNextCount(1)
			.verifyComplete();
	}

	@Test
	void aStreamedAnswerHasTheFixturesShapeAndTheSameText() {
		RawHttp.Reply reply = RawHttp.post(chatUrl, user("How do breakers work?", ",\"stream\":true"));

		assertThat(reply.status()).isEqualTo(200);
		assertThat(reply.headers().get("content-type")).isEqualTo("text/event-stream");
		List<JsonNode> events = reply.jsonEvents();
		JsonNode first = events.get(0);
		assertThat(first.path("object").asString()).isEqualTo("chat.completion.chunk");
		assertThat(first.path("choices").path(0).path("delta").path("role").asString()).isEqualTo("assistant");
		assertThat(first.path("choices").path(0).path("delta").path("content").asString("x")).isEmpty();
		JsonNode last = events.get(events.size() - 1);
		assertThat(last.path("choices").path(0).path("delta").size()).isZero();
		assertThat(last.path("choices").path(0).path("finish_reason").asString()).isEqualTo("stop");
		assertThat(events).allSatisfy(e -> assertThat(e.path("id").asString()).isEqualTo(first.path("id").asString()));
		assertThat(streamedText(events)).isEqualTo(MockAnswers.text("How do breakers work?"));
		assertThat(reply.events()).last().isEqualTo("[DONE]");
	}

	@Test
	void theUsageChunkComesOnlyWhenIncludeUsageIsTrue() {
		RawHttp.Reply without = RawHttp.post(chatUrl, user("Hi", ",\"stream\":true"));
		RawHttp.Reply off = RawHttp.post(chatUrl,
				user("Hi", ",\"stream\":true,\"stream_options\":{\"include_usage\":false}"));
		RawHttp.Reply on = RawHttp.post(chatUrl,
				user("Hi", ",\"stream\":true,\"stream_options\":{\"include_usage\":true}"));

		for (RawHttp.Reply reply : List.of(without, off)) {
			assertThat(reply.jsonEvents()).noneMatch(e -> e.has("usage"));
			assertThat(reply.events()).last().isEqualTo("[DONE]");
		}
		List<JsonNode> events = on.jsonEvents();
		JsonNode usageChunk = events.get(events.size() - 1);
		assertThat(usageChunk.path("choices").isArray()).isTrue();
		assertThat(usageChunk.path("choices").size()).isZero();
		assertThat(usageChunk.path("usage").path("completion_tokens").asInt()).isEqualTo(MockAnswers.tokens("Hi").size());
		// the chunks before it carry the field too, as null
		assertThat(events.subList(0, events.size() - 1)).allMatch(e -> e.has("usage") && e.get("usage").isNull());
		assertThat(on.events()).last().isEqualTo("[DONE]");
	}

	@Test
	void theLibrarysClientAsksForUsageAndGetsItUnlessSwitchedOff() {
		ChatRequest request = ChatRequest.of(null, List.of(ChatMessage.user("Hi")));
		OpenAiCompatibleClient asking = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
		OpenAiCompatibleClient notAsking = OpenAiCompatibleClient.builder(mock.baseUrl())
			.model(MockModelServer.MODEL)
			.includeUsage(false)
			.build();

		List<ChatChunk> withUsage = asking.stream(request).collectList().block(WAIT);
		assertThat(mock.lastRequest().json().path("stream_options").path("include_usage").asBoolean()).isTrue();
		List<ChatChunk> withoutUsage = notAsking.stream(request).collectList().block(WAIT);
		assertThat(mock.lastRequest().json().has("stream_options")).isFalse();

		assertThat(withUsage).filteredOn(c -> c.usage() != null).singleElement()
			.satisfies(c -> assertThat(c.usage().completionTokens()).isEqualTo(MockAnswers.tokens("Hi").size()));
		assertThat(withoutUsage).noneMatch(c -> c.usage() != null);
		assertThat(withoutUsage).last().satisfies(c -> assertThat(c.terminal()).isTrue());
	}

	@Test
	void theDeveloperRoleIsReadAsSystem() {
		RawHttp.Reply reply = RawHttp.post(chatUrl, "{\"model\":\"mock-1\",\"messages\":["
				+ "{\"role\":\"developer\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Why?\"}]}");

		assertThat(reply.status()).isEqualTo(200);
		assertThat(reply.json().path("choices").path(0).path("message").path("content").asString())
			.isEqualTo(MockAnswers.text("Why?"));
		assertThat(mock.lastRequest().messages()).extracting(ChatMessage::role)
			.containsExactly(ChatMessage.Role.SYSTEM, ChatMessage.Role.USER);
	}

	@Test
	void arrayContentIsTheConcatenationOfItsTextParts() {
		RawHttp.Reply reply = RawHttp.post(chatUrl, "{\"model\":\"mock-1\",\"stream\":true,\"messages\":["
				+ "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"Be brief.\"}]},"
				+ "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"Why do \"},"
				+ "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://example.com/a.png\"}},"
				+ "{\"type\":\"text\",\"text\":\"streams stall?\"}]},"
				+ "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[]}]}");

		assertThat(reply.status()).isEqualTo(200);
		assertThat(streamedText(reply.jsonEvents())).isEqualTo(MockAnswers.text("Why do streams stall?"));
		assertThat(mock.lastRequest().messages()).extracting(ChatMessage::content)
			.containsExactly("Be brief.", "Why do streams stall?", "");
	}

	@Test
	void maxTokensCutsTheAnswerWithFinishReasonLength() {
		List<String> tokens = MockAnswers.tokens("Tell me everything");
		RawHttp.Reply whole = RawHttp.post(chatUrl, user("Tell me everything", ",\"max_tokens\":3"));
		assertThat(whole.json().path("choices").path(0).path("message").path("content").asString())
			.isEqualTo(String.join("", tokens.subList(0, 3)));
		assertThat(whole.json().path("choices").path(0).path("finish_reason").asString()).isEqualTo("length");
		assertThat(whole.json().path("usage").path("completion_tokens").asInt()).isEqualTo(3);

		OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
		List<ChatChunk> streamed = client.stream(ChatRequest.of(null, List.of(ChatMessage.user("Tell me everything")))
			.withMaxTokens(2)).collectList().block(WAIT);
		assertThat(streamed).filteredOn(ChatChunk::hasContent).extracting(ChatChunk::text)
			.containsExactlyElementsOf(tokens.subList(0, 2));
		assertThat(streamed).anyMatch(c -> "length".equals(c.finishReason()));
	}

	@Test
	void modelsListsTheMocksModelInOpenAisFormat() {
		RawHttp.Reply reply = RawHttp.get(mock.baseUrl() + "/models");

		assertThat(reply.status()).isEqualTo(200);
		assertThat(reply.headers().get("content-type")).isEqualTo("application/json");
		JsonNode list = reply.json();
		assertThat(list.path("object").asString()).isEqualTo("list");
		assertThat(list.path("data")).singleElement().satisfies(model -> {
			assertThat(model.path("id").asString()).isEqualTo(MockModelServer.MODEL);
			assertThat(model.path("object").asString()).isEqualTo("model");
			assertThat(model.path("created").asLong()).isPositive();
			assertThat(model.path("owned_by").asString()).isNotBlank();
		});
		assertThat(mock.stats().requests()).as("listing models is not a chat request").isZero();
	}

	@Test
	void unknownRoutesGetOpenAisNotFoundError() {
		RawHttp.Reply get = RawHttp.get(mock.baseUrl() + "/nothing/here?x=1");
		RawHttp.Reply wrongMethod = RawHttp.get(chatUrl);
		RawHttp.Reply post = RawHttp.post("http://127.0.0.1:" + mock.port() + "/v2/chat/completions", user("Hi", ""));

		for (RawHttp.Reply reply : List.of(get, wrongMethod, post)) {
			assertThat(reply.status()).isEqualTo(404);
			assertThat(reply.headers().get("content-type")).isEqualTo("application/json");
			JsonNode error = reply.json().path("error");
			assertThat(error.path("type").asString()).isEqualTo("invalid_request_error");
			assertThat(error.path("code").asString()).isEqualTo("unknown_url");
			assertThat(error.has("param")).isTrue();
		}
		assertThat(get.json().path("error").path("message").asString()).contains("GET /v1/nothing/here?x=1");
		assertThat(post.json().path("error").path("message").asString()).contains("POST /v2/chat/completions");
	}

	@ParameterizedTest(name = "{0}")
	@CsvSource(delimiter = '|', quoteCharacter = '`', value = {
		"not JSON                         | {\"model\": | ",
		"not an object                    | [1,2] | ",
		"no messages                      | {\"model\":\"mock-1\"} | messages",
		"empty messages                   | {\"messages\":[]} | messages",
		"unknown role                     | {\"messages\":[{\"role\":\"wizard\",\"content\":\"Hi\"}]} | messages[0].role",
		"content of the wrong type        | {\"messages\":[{\"role\":\"user\",\"content\":42}]} | messages[0].content",
		"text part without text           | {\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\"}]}]} | messages[0].content[0].text",
		"stream not a boolean             | {\"stream\":\"yes\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]} | stream",
		"stream_options without streaming | {\"stream_options\":{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]} | stream_options",
		"max_tokens zero                  | {\"max_tokens\":0,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]} | max_tokens",
	})
	void requestsOpenAiWouldRefuseGetA400NamingTheParameter(String what, String body, String param) {
		RawHttp.Reply reply = RawHttp.post(chatUrl, body);

		assertThat(reply.status()).isEqualTo(400);
		JsonNode error = reply.json().path("error");
		assertThat(error.path("type").asString()).isEqualTo("invalid_request_error");
		assertThat(error.path("message").asString()).isNotBlank();
		if (param == null) {
			assertThat(error.path("param").isNull()).isTrue();
		}
		else {
			assertThat(error.path("param").asString()).isEqualTo(param);
		}
	}

	@Test
	void aWholeAnswerStallsByHoldingTheResponseBack() {
		mock.faults(mock.faults().withStallAfter(2));

		StepVerifier.create(RawHttp.postLater(chatUrl, user("Hello", "")))
			.expectSubscription()
			.expectNoEvent(Duration.ofMillis(300))
			.thenCancel()
			.verify(WAIT);

		StepVerifier.create(until(() -> mock.stats().cancelled(), 1)).expectNextCount(1).verifyComplete();
		assertThat(mock.stats().stalled()).isEqualTo(1);
		assertThat(mock.stats().completed()).isZero();
	}

	@Test
	void aWholeAnswerDropsByClosingTheConnectionBeforeAnyResponse() {
		mock.faults(mock.faults().withDropAfter(1));

		StepVerifier.create(RawHttp.postLater(chatUrl, user("Hello", "")))
			.expectError(PrematureCloseException.class)
			.verify(WAIT);
		assertThat(mock.stats().dropped()).isEqualTo(1);
	}

	@Test
	void aWholeAnswerWithAnInBandErrorIsAServerError() {
		mock.faults(mock.faults().withInBandError(2, "overloaded_error"));

		RawHttp.Reply reply = RawHttp.post(chatUrl, user("Hello", ""));

		assertThat(reply.status()).isEqualTo(500);
		assertThat(reply.json().path("error").path("type").asString()).isEqualTo("overloaded_error");
		assertThat(mock.stats().inBandErrors()).isEqualTo(1);
	}

	/** Emits once {@code counter} reaches {@code n}. */
	private static Mono<Long> until(LongSupplier counter, long n) {
		return Flux.interval(Duration.ofMillis(10)).map(i -> counter.getAsLong())
			.filter(c -> c >= n).next().timeout(WAIT);
	}

	@Test
	void aCarelessProviderEchoesTheKeyInTheErrorBodyTheInBandEventAndAHeader() {
		mock.faults(mock.faults().withErrors(1.0, 401, 0)
			.withErrorBody("{\"error\":{\"message\":\"Incorrect API key provided: {api_key}.\",\"type\":\"invalid_request_error\"}}"));
		RawHttp.Reply refused = RawHttp.post(chatUrl, user("hi", ",\"stream\":true"), "Bearer sk-echo-123456");
		assertThat(refused.status()).isEqualTo(401);
		assertThat(refused.body()).contains("Incorrect API key provided: sk-echo-123456.");
		assertThat(refused.headers().get("x-echo-api-key")).isEqualTo("sk-echo-123456");

		mock.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)).withInBandError(1, "invalid_api_key"));
		RawHttp.Reply streamed = RawHttp.post(chatUrl, user("hi", ",\"stream\":true"), "Bearer sk-echo-654321");
		assertThat(streamed.status()).isEqualTo(200);
		assertThat(streamed.body()).contains("Incorrect API key provided: sk-echo-654321.");
		assertThat(streamed.headers().get("x-echo-api-key")).isEqualTo("sk-echo-654321");

		mock.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)));
		RawHttp.Reply plain = RawHttp.post(chatUrl, user("hi", ""), "Bearer sk-echo-654321");
		assertThat(plain.body()).doesNotContain("sk-echo");
		assertThat(plain.headers().get("x-echo-api-key")).isNull();
	}
}
