package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.IntStream;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.provider.RateLimits;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.test.ChatSteps;
import dev.aiguard.test.ReportRecorder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.util.RaceTestUtils;
import tools.jackson.databind.JsonNode;

import static dev.aiguard.test.mock.RawHttp.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Fault scripts: any error status with OpenAI's body or a custom one, {@code Retry-After},
 * in-band errors, rate-limit headers, and profiles queued one per request (also under concurrent
 * requests).
 */
class FaultScriptTest {

	private MockModelServer mock;
	private OpenAiCompatibleClient client;
	private String chatUrl;

	@BeforeEach
	void start() {
		mock = MockModelServer.builder().faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1))).start();
		client = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
		chatUrl = mock.baseUrl() + "/chat/completions";
	}

	@AfterEach
	void stop() {
		mock.close();
	}

	private static ChatRequest ask(String question) {
		return ChatRequest.of(null, List.of(ChatMessage.user(question)));
	}

	private FaultProfile failing(int status) {
		return mock.faults().withErrors(1, status, 0);
	}

	@ParameterizedTest(name = "{0} -> {1}")
	@CsvSource({
		"400, ProviderClientException,     invalid_request_error, ",
		"401, ProviderClientException,     invalid_request_error, invalid_api_key",
		"403, ProviderClientException,     invalid_request_error, ",
		"404, ProviderClientException,     invalid_request_error, model_not_found",
		"408, ProviderClientException,     invalid_request_error, ",
		"418, ProviderClientException,     invalid_request_error, ",
		"429, RateLimitedException,        requests,              rate_limit_exceeded",
		"500, ProviderServerException,     server_error,          ",
		"502, ProviderServerException,     server_error,          ",
		"503, ProviderServerException,     server_error,          ",
		"504, ProviderServerException,     server_error,          ",
		"529, ProviderOverloadedException, overloaded_error,      ",
		"599, ProviderServerException,     server_error,          ",
	})
	void anyStatusFrom400To599ComesWithOpenAisBodyForIt(int status, String exception, String type, String code) {
		mock.faults(failing(status));

		StepVerifier.create(client.stream(ask("Hello")))
			.expectErrorSatisfies(e -> {
				assertThat(e.getClass().getSimpleName()).isEqualTo(exception);
				ProviderException p = (ProviderException) e;
				assertThat(p.status()).isEqualTo(status);
				assertThat(p.errorType()).isEqualTo(type);
				assertThat(p.errorCode()).isEqualTo(code);
			})
			.verify(WAIT);
		RawHttp.Reply raw = RawHttp.post(chatUrl, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");
		assertThat(raw.status()).isEqualTo(status);
		assertThat(raw.headers().get("content-type")).isEqualTo("application/json");
		assertThat(raw.json().path("error").path("message").asString()).isNotBlank();
		assertThat(mock.stats().injectedErrors()).isEqualTo(2);
	}

	@Test
	void aCustomErrorBodyIsSentAsItIs() {
		String quota = "{\"error\":{\"message\":\"You exceeded your current quota.\",\"type\":\"insufficient_quota\","
				+ "\"param\":null,\"code\":\"insufficient_quota\"}}";
		mock.faults(failing(429).withErrorBody(quota));

		StepVerifier.create(client.stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderClientException.class,
					c -> assertThat(c.errorCode()).isEqualTo("insufficient_quota")))
			.verify(WAIT);
		assertThat(RawHttp.post(chatUrl, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}").body())
			.isEqualTo(quota);

		mock.faults(mock.faults().withErrorBody(null));
		StepVerifier.create(client.stream(ask("Hello"))).expectError(RateLimitedException.class).verify(WAIT);
	}

	@Test
	void retryAfterComesWithAnyErrorStatus() {
		mock.faults(mock.faults().withErrors(1, 503, 3));

		StepVerifier.create(client.stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderServerException.class,
					s -> assertThat(s.retryAfter()).contains(Duration.ofSeconds(3))))
			.verify(WAIT);
		assertThat(RawHttp.post(chatUrl, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}").headers()
			.get("retry-after")).isEqualTo("3");
	}

	@Test
	void anInBandErrorEndsATwoHundredStreamAfterTheTokens() {
		mock.faults(mock.faults().withInBandError(3));

		StepVerifier.create(client.stream(ask("Hello")).filter(ChatChunk::hasContent).map(ChatChunk::text))
			.expectNextSequence(MockAnswers.tokens("Hello").subList(0, 3))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderStreamException.class, s -> {
				assertThat(s.inBand()).isTrue();
				assertThat(s.errorType()).isEqualTo("server_error");
			}))
			.verify(WAIT);

		RawHttp.Reply raw = RawHttp.post(chatUrl,
				"{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}");
		assertThat(raw.status()).isEqualTo(200);
		List<JsonNode> events = raw.jsonEvents();
		assertThat(raw.events()).doesNotContain("[DONE]");
		assertThat(events.get(events.size() - 1).path("error").path("type").asString()).isEqualTo("server_error");
		assertThat(events).noneMatch(e -> e.path("choices").path(0).path("finish_reason").isString());
		assertThat(mock.stats().inBandErrors()).isEqualTo(2);
	}

	@Test
	void anInBandErrorOfAnotherTypeBeforeAnyTokenOrAfterTheWholeAnswer() {
		mock.faults(mock.faults().withInBandError(0, "overloaded_error"));
		StepVerifier.create(client.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.expectError(ProviderOverloadedException.class)
			.verify(WAIT);

		mock.faults(mock.faults().withInBandError(10_000));
		StepVerifier.create(client.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.expectNextCount(MockAnswers.tokens("Hello").size())
			.expectError(ProviderStreamException.class)
			.verify(WAIT);
	}

	@Test
	void whenFaultsCutTheSameAnswerTheEarliestWins() {
		mock.faults(mock.faults().withStallAfter(5).withInBandError(2));
		StepVerifier.create(client.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.expectNextCount(2).expectError(ProviderStreamException.class).verify(WAIT);

		mock.faults(mock.faults().withStallAfter(null).withDropAfter(2).withInBandError(2));
		StepVerifier.create(client.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.expectNextCount(2).expectError(ProviderConnectionException.class).verify(WAIT);

		mock.faults(mock.faults().withStallAfter(1).withDropAfter(1).withInBandError(null));
		StepVerifier.create(client.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.expectNextCount(1).expectNoEvent(Duration.ofMillis(200)).thenCancel().verify(WAIT);
		assertThat(mock.stats().stalled()).isEqualTo(1);
		assertThat(mock.stats().dropped()).isEqualTo(1);
	}

	@Test
	void rateLimitHeadersComeWithEveryChatAnswerAndTheClientReadsThemBack() {
		RateLimits limits = new RateLimits(60, 0, Duration.ofSeconds(1), 150_000, 149_500, Duration.ofMinutes(6));
		mock.faults(mock.faults().withRateLimits(limits));

		RawHttp.Reply streamed = RawHttp.post(chatUrl,
				"{\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");
		assertThat(streamed.status()).isEqualTo(200);
		assertThat(streamed.headers().get("x-ratelimit-limit-requests")).isEqualTo("60");
		assertThat(streamed.headers().get("x-ratelimit-remaining-requests")).isEqualTo("0");
		assertThat(streamed.headers().get("x-ratelimit-reset-requests")).isEqualTo("1s");
		assertThat(streamed.headers().get("x-ratelimit-limit-tokens")).isEqualTo("150000");
		assertThat(streamed.headers().get("x-ratelimit-remaining-tokens")).isEqualTo("149500");
		assertThat(streamed.headers().get("x-ratelimit-reset-tokens")).isEqualTo("6m0s");
		assertThat(RawHttp.get(mock.baseUrl() + "/models").headers().contains("x-ratelimit-limit-requests")).isFalse();

		mock.faults(mock.faults().withErrors(1, 429, 1));
		StepVerifier.create(client.stream(ask("Hi")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class,
					r -> assertThat(r.rateLimits()).isEqualTo(limits)))
			.verify(WAIT);

		mock.faults(mock.faults().withRateLimits(new RateLimits(-1, 7, null, -1, -1, Duration.ofMillis(1500))));
		RawHttp.Reply partial = RawHttp.post(chatUrl, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");
		assertThat(partial.headers().names()).filteredOn(n -> n.startsWith("x-ratelimit"))
			.containsExactlyInAnyOrder("x-ratelimit-remaining-requests", "x-ratelimit-reset-tokens");
		assertThat(partial.headers().get("x-ratelimit-reset-tokens")).isEqualTo("1.5s");
	}

	@Test
	void resetsAreWrittenAsGoDurations() {
		assertThat(OpenAiErrors.goDuration(Duration.ZERO)).isEqualTo("0s");
		assertThat(OpenAiErrors.goDuration(Duration.ofMillis(20))).isEqualTo("20ms");
		assertThat(OpenAiErrors.goDuration(Duration.ofMillis(8640))).isEqualTo("8.64s");
		assertThat(OpenAiErrors.goDuration(Duration.ofSeconds(90))).isEqualTo("1m30s");
		assertThat(OpenAiErrors.goDuration(Duration.ofHours(1).plusSeconds(5))).isEqualTo("1h0m5s");
	}

	@Test
	void queuedProfilesApplyToOneRequestEachInOrderThenTheCurrentOneAgain() {
		FaultProfile now = mock.faults();
		mock.enqueue(now.withErrors(1, 429, 0), now.withErrors(1, 500, 0));
		assertThat(mock.queued()).isEqualTo(2);

		StepVerifier.create(client.stream(ask("Hi"))).expectError(RateLimitedException.class).verify(WAIT);
		StepVerifier.create(client.stream(ask("Hi"))).expectError(ProviderServerException.class).verify(WAIT);
		assertThat(ChatSteps.text(client.stream(ask("Hi"))).block(WAIT)).isEqualTo(MockAnswers.text("Hi"));
		assertThat(ChatSteps.text(client.stream(ask("Hi"))).block(WAIT)).isEqualTo(MockAnswers.text("Hi"));
		assertThat(mock.queued()).isZero();
		assertThat(mock.faults()).isEqualTo(now);
	}

	@Test
	void aGuardRetriesThroughAScriptOf429Then500ThenAnAnswer() {
		ReportRecorder reports = new ReportRecorder();
		GuardPolicy policy = GuardPolicy.builder("scripted")
			.retry(RetryRules.backoff(3, Duration.ofMillis(5)))
			.onReport(reports)
			.build();
		FaultProfile now = mock.faults();
		mock.enqueue(now.withErrors(1, 429, 0), now.withErrors(1, 500, 0));

		StepVerifier.create(AiGuard.of(policy).call(ask("Hi"), client::stream).filter(ChatChunk::hasContent))
			.expectNextCount(MockAnswers.tokens("Hi").size())
			.verifyComplete();

		GuardReport report = reports.expectOutcome(Outcome.SUCCESS);
		assertThat(report.attempts()).extracting(a -> a.error() == null ? "none" : a.error().getClass().getSimpleName())
			.containsExactly("RateLimitedException", "ProviderServerException", "none");
		assertThat(mock.requests()).hasSize(3);
	}

	@Test
	void concurrentRequestsEachTakeADistinctQueuedProfile() {
		int racers = 6;
		for (int round = 0; round < 8; round++) {
			List<FaultProfile> script = new ArrayList<>();
			for (int i = 0; i < racers; i++) {
				script.add(failing(500 + i));
			}
			mock.enqueue(script.toArray(FaultProfile[]::new));
			Queue<Integer> statuses = new ConcurrentLinkedQueue<>();
			Runnable[] requests = new Runnable[racers];
			for (int i = 0; i < racers; i++) {
				requests[i] = () -> RawHttp.postLater(chatUrl, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}")
					.subscribe(reply -> statuses.add(reply.status()));
			}

			RaceTestUtils.race(requests);

			Flux.interval(Duration.ofMillis(5)).filter(tick -> statuses.size() == racers).next().timeout(WAIT).block();
			assertThat(statuses).containsExactlyInAnyOrderElementsOf(IntStream.range(500, 500 + racers).boxed().toList());
			assertThat(mock.queued()).isZero();
		}
		assertThat(RawHttp.post(chatUrl, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}").status())
			.isEqualTo(200);
	}

	@Test
	void racingTakersNeverShareAQueuedProfile() {
		for (int round = 0; round < 500; round++) {
			FaultProfile a = failing(501);
			FaultProfile b = failing(502);
			mock.enqueue(a, b);
			Queue<FaultProfile> taken = new ConcurrentLinkedQueue<>();

			RaceTestUtils.race(() -> taken.add(mock.takeProfile()), () -> taken.add(mock.takeProfile()),
					() -> taken.add(mock.takeProfile()));

			assertThat(taken).containsExactlyInAnyOrder(a, b, mock.faults());
		}
	}

	@Test
	void concurrentUpdatesOfTheProfileAreNeverLost() {
		for (int round = 0; round < 200; round++) {
			mock.resetFaults();
			RaceTestUtils.race(() -> mock.updateFaults(p -> p.withStallAfter(3)),
					() -> mock.updateFaults(p -> p.withErrors(0.5, 503, 2)),
					() -> mock.updateFaults(p -> p.withOmitTerminal(true)));
			FaultProfile now = mock.faults();
			assertThat(now.stallAfterTokens()).isEqualTo(3);
			assertThat(now.errorStatus()).isEqualTo(503);
			assertThat(now.omitTerminal()).isTrue();
		}
		assertThatThrownBy(() -> mock.updateFaults(p -> null)).isInstanceOf(NullPointerException.class)
			.hasMessageContaining("the changed profile");
	}

	@Test
	void badScriptsNameTheFieldAndTheValue() {
		FaultProfile ok = mock.faults();
		assertThatThrownBy(() -> ok.withErrors(0.5, 600, 0)).isInstanceOf(IllegalArgumentException.class)
			.hasMessage("errorStatus must be between 400 and 599, was 600");
		assertThatThrownBy(() -> ok.withErrors(0.5, 399, 0)).hasMessage("errorStatus must be between 400 and 599, was 399");
		assertThatThrownBy(() -> ok.withErrors(0.5, 500, -1)).hasMessage("retryAfterSeconds must be between 0 and 3600, was -1");
		assertThatThrownBy(() -> ok.withInBandError(-1))
			.hasMessage("inBandErrorAfterTokens must be between 0 and 2147483647, was -1");
		assertThatThrownBy(() -> ok.withInBandError(1, "has space"))
			.hasMessage("inBandErrorType must be 1 to 64 letters, digits, '_', '.' or '-', was 'has space'");
		assertThatThrownBy(() -> ok.withInBandError(1, null))
			.hasMessage("inBandErrorType must be 1 to 64 letters, digits, '_', '.' or '-', was null");
		assertThatThrownBy(() -> mock.enqueue(ok, null)).isInstanceOf(IllegalArgumentException.class)
			.hasMessage("next[1] must not be null");
		assertThat(mock.queued()).as("a refused script queues nothing").isZero();
	}
}
