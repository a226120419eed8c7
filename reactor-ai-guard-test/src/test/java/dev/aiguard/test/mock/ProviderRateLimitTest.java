package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.provider.RateLimits;
import dev.aiguard.truncation.TokenCounter;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static dev.aiguard.test.mock.RawHttp.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ProviderRateLimitTest {

	private static final String QUESTION = "How do budgets work?";
	/** The prompt's estimate (the library's, characters / 4) plus the answer's content tokens. */
	private static final long COST = TokenCounter.estimate().count(List.of(ChatMessage.user(QUESTION)))
			+ MockAnswers.tokens(QUESTION).size();

	private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
	private MockModelServer mock;
	private String chatUrl;

	@BeforeEach
	void start() {
		mock = MockModelServer.builder().nanoClock(nanos::get).start();
		chatUrl = mock.baseUrl() + "/chat/completions";
	}

	@AfterEach
	void stop() {
		mock.stop();
	}

	private static String body(boolean stream) {
		return "{\"model\":\"mock-1\",\"messages\":[{\"role\":\"user\",\"content\":\"" + QUESTION + "\"}]"
				+ (stream ? ",\"stream\":true" : "") + "}";
	}

	private void limit(int requests, int tokens, Duration window) {
		mock.faults(mock.faults().withProviderRateLimit(new ProviderRateLimit(requests, tokens, window)));
	}

	private void advance(Duration d) {
		nanos.addAndGet(d.toNanos());
	}

	@Test
	void everyAnswerCarriesTheWindowsLiveHeaders() {
		limit(3, 10_000, Duration.ofMinutes(1));

		RawHttp.Reply first = RawHttp.post(chatUrl, body(true));
		advance(Duration.ofMillis(1_500));
		RawHttp.Reply second = RawHttp.post(chatUrl, body(false));

		assertThat(first.status()).isEqualTo(200);
		assertThat(first.headers().get("x-ratelimit-limit-requests")).isEqualTo("3");
		assertThat(first.headers().get("x-ratelimit-remaining-requests")).isEqualTo("2");
		assertThat(first.headers().get("x-ratelimit-reset-requests")).isEqualTo("1m0s");
		assertThat(first.headers().get("x-ratelimit-limit-tokens")).isEqualTo("10000");
		assertThat(first.headers().get("x-ratelimit-remaining-tokens")).isEqualTo(Long.toString(10_000 - COST));
		assertThat(first.headers().get("x-ratelimit-reset-tokens")).isEqualTo("1m0s");
		assertThat(second.status()).isEqualTo(200);
		assertThat(second.headers().get("x-ratelimit-remaining-requests")).isEqualTo("1");
		assertThat(second.headers().get("x-ratelimit-remaining-tokens")).isEqualTo(Long.toString(10_000 - 2 * COST));
		assertThat(second.headers().get("x-ratelimit-reset-requests")).isEqualTo("58.5s");
	}

	@Test
	void aRequestOverTheWindowGetsA429WithRetryAfterRoundedUpAndTheHeaders() {
		limit(2, 10_000, Duration.ofSeconds(4));
		assertThat(RawHttp.post(chatUrl, body(true)).status()).isEqualTo(200);
		assertThat(RawHttp.post(chatUrl, body(true)).status()).isEqualTo(200);
		advance(Duration.ofMillis(1_500));

		RawHttp.Reply refused = RawHttp.post(chatUrl, body(true));

		assertThat(refused.status()).isEqualTo(429);
		assertThat(refused.headers().get("retry-after")).isEqualTo("3");
		assertThat(refused.headers().get("x-ratelimit-remaining-requests")).isEqualTo("0");
		assertThat(refused.headers().get("x-ratelimit-reset-requests")).isEqualTo("2.5s");
		assertThat(refused.headers().get("x-ratelimit-remaining-tokens")).isEqualTo(Long.toString(10_000 - 2 * COST));
		assertThat(refused.json().path("error").path("code").asText()).isEqualTo("rate_limit_exceeded");
		assertThat(refused.json().path("error").path("type").asText()).isEqualTo("requests");
		assertThat(mock.stats().rateLimitRefusals()).isEqualTo(1);
		assertThat(mock.stats().injectedErrors()).isZero();
	}

	@Test
	void aNewWindowServesAgain() {
		limit(1, 10_000, Duration.ofSeconds(4));
		assertThat(RawHttp.post(chatUrl, body(false)).status()).isEqualTo(200);
		assertThat(RawHttp.post(chatUrl, body(false)).status()).isEqualTo(429);
		advance(Duration.ofSeconds(4));

		RawHttp.Reply next = RawHttp.post(chatUrl, body(false));

		assertThat(next.status()).isEqualTo(200);
		assertThat(next.headers().get("x-ratelimit-remaining-requests")).isEqualTo("0");
		assertThat(next.headers().get("x-ratelimit-reset-requests")).isEqualTo("4s");
	}

	@Test
	void tokensCountTooARefusedRequestChargesNothing() {
		limit(100, (int) (2 * COST + COST / 2), Duration.ofSeconds(10));
		assertThat(RawHttp.post(chatUrl, body(true)).status()).isEqualTo(200);
		assertThat(RawHttp.post(chatUrl, body(true)).status()).isEqualTo(200);

		RawHttp.Reply refused = RawHttp.post(chatUrl, body(true));

		assertThat(refused.status()).isEqualTo(429);
		assertThat(refused.headers().get("x-ratelimit-remaining-requests")).isEqualTo("98");
		assertThat(refused.headers().get("x-ratelimit-remaining-tokens")).isEqualTo(Long.toString(COST / 2));
		// a request the answer's max_tokens makes cheap enough still fits
		String small = "{\"model\":\"mock-1\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}";
		assertThat(RawHttp.post(chatUrl, small).status()).isEqualTo(200);
	}

	@Test
	void theLibrarysClientReadsTheRefusalAndTheHeaders() {
		limit(1, 10_000, Duration.ofSeconds(2));
		OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
		ChatRequest request = ChatRequest.of(null, List.of(ChatMessage.user(QUESTION)));
		StepVerifier.create(client.stream(request).then()).verifyComplete();

		StepVerifier.create(client.stream(request))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class, r -> {
				assertThat(r.retryAfter()).contains(Duration.ofSeconds(2));
				RateLimits limits = r.rateLimits();
				assertThat(limits.limitRequests()).isEqualTo(1);
				assertThat(limits.remainingRequests()).isZero();
				assertThat(limits.resetRequests()).isEqualTo(Duration.ofSeconds(2));
				assertThat(limits.remainingTokens()).isEqualTo(10_000 - COST);
			}))
			.verify(WAIT);
	}

	@Test
	void concurrentRequestsAreNeverOverAdmitted() {
		limit(5, 1_000_000, Duration.ofMinutes(1));

		List<Integer> statuses = Flux.range(0, 24)
			.flatMap(i -> RawHttp.postLater(chatUrl, body(i % 2 == 0)), 24)
			.map(RawHttp.Reply::status)
			.collectList()
			.block(WAIT);

		assertThat(statuses).filteredOn(s -> s == 200).hasSize(5);
		assertThat(statuses).filteredOn(s -> s == 429).hasSize(19);
		assertThat(mock.stats().rateLimitRefusals()).isEqualTo(19);
	}

	@Test
	void resetAndANewLimitStartANewWindow() {
		limit(1, 10_000, Duration.ofMinutes(1));
		assertThat(RawHttp.post(chatUrl, body(false)).status()).isEqualTo(200);
		assertThat(RawHttp.post(chatUrl, body(false)).status()).isEqualTo(429);

		mock.resetProviderWindow();
		assertThat(RawHttp.post(chatUrl, body(false)).status()).isEqualTo(200);

		limit(2, 10_000, Duration.ofMinutes(1));
		RawHttp.Reply underNewLimit = RawHttp.post(chatUrl, body(false));
		assertThat(underNewLimit.status()).isEqualTo(200);
		assertThat(underNewLimit.headers().get("x-ratelimit-remaining-requests")).isEqualTo("1");

		mock.reset();
		RawHttp.Reply unlimited = RawHttp.post(chatUrl, body(false));
		assertThat(unlimited.status()).isEqualTo(200);
		assertThat(unlimited.headers().get("x-ratelimit-limit-requests")).isNull();
	}

	@Test
	void theLimitRefusesBadValuesNamingThem() {
		assertThatThrownBy(() -> new ProviderRateLimit(0, 10, Duration.ofSeconds(1)))
			.isInstanceOf(IllegalArgumentException.class).hasMessage("requests must be at least 1, was 0");
		assertThatThrownBy(() -> new ProviderRateLimit(1, -1, Duration.ofSeconds(1)))
			.isInstanceOf(IllegalArgumentException.class).hasMessage("tokens must be at least 1, was -1");
		assertThatThrownBy(() -> new ProviderRateLimit(1, 1, Duration.ofHours(2)))
			.isInstanceOf(IllegalArgumentException.class).hasMessage("window must be between 1ms and 1h, was PT2H");
		assertThatThrownBy(() -> new ProviderRateLimit(1, 1, Duration.ZERO))
			.isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("window must be");
	}

	@Test
	void otherOptionsKeepTheLimitAndTheOlderConstructorsHaveNone() {
		ProviderRateLimit limit = new ProviderRateLimit(2, 20_000, Duration.ofSeconds(4));
		FaultProfile limited = FaultProfile.defaults(Duration.ZERO, Duration.ZERO).withProviderRateLimit(limit);

		assertThat(limited.withStallAfter(3).withErrors(0.5, 500, 0).withFailingModels("x").providerRateLimit())
			.isEqualTo(limit);
		assertThat(limited.withProviderRateLimit(null).providerRateLimit()).isNull();
		FaultProfile older = new FaultProfile(0, 0, null, null, 0, 500, 0, null, false, null, null,
				FaultProfile.SERVER_ERROR, null, null, false, null, false, java.util.Set.of());
		assertThat(older.providerRateLimit()).isNull();
	}
}
