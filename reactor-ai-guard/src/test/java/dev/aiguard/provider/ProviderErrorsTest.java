package dev.aiguard.provider;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;

import dev.aiguard.ErrorClassifier;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StreamStalledException;
import org.junit.jupiter.api.Test;
import reactor.core.Exceptions;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ProviderErrorsTest {

	static final String OPENAI_CONTEXT = "{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens. "
			+ "However, your messages resulted in 9013 tokens. Please reduce the length of the messages.\","
			+ "\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}";

	static final String ANTHROPIC_CONTEXT = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
			+ "\"message\":\"prompt is too long: 208310 tokens > 200000 maximum\"}}";

	static final String OPENAI_RATE_LIMIT = "{\"error\":{\"message\":\"Rate limit reached for requests\","
			+ "\"type\":\"requests\",\"param\":null,\"code\":\"rate_limit_exceeded\"}}";

	static final Clock CLOCK = Clock.fixed(Instant.parse("2025-06-01T12:00:00Z"), ZoneOffset.UTC);

	static Function<String, String> headers(String... pairs) {
		Map<String, String> map = new java.util.HashMap<>();
		for (int i = 0; i < pairs.length; i += 2) {
			map.put(pairs[i], pairs[i + 1]);
		}
		return map::get;
	}

	static ProviderException http(int status, Function<String, String> headers, String body) {
		return ProviderErrors.fromHttp("openai", status, headers, body, CLOCK);
	}

	@Test
	void openAiContextLengthCarriesLimitAndActualAndIsAClientError() {
		ProviderException e = http(400, headers(), OPENAI_CONTEXT);
		assertThat(e).isInstanceOf(ContextLengthExceededException.class);
		ContextLengthExceededException c = (ContextLengthExceededException) e;
		assertThat(c.limit()).hasValue(8192);
		assertThat(c.actual()).hasValue(9013);
		assertThat(c.status()).isEqualTo(400);
		assertThat(c.errorCode()).isEqualTo("context_length_exceeded");
		assertThat(c.errorType()).isEqualTo("invalid_request_error");
		assertThat(c.retryable()).isFalse();
		assertThat(ErrorClassifier.outcomeOf(c)).isEqualTo(Outcome.CLIENT_ERROR);
		assertThat(c.getMessage()).startsWith("HTTP 400: This model's maximum context length is 8192 tokens");
	}

	@Test
	void anthropicPromptTooLongCarriesLimitAndActual() {
		ContextLengthExceededException c = (ContextLengthExceededException) ProviderErrors.fromHttp("anthropic", 400,
				headers(), ANTHROPIC_CONTEXT);
		assertThat(c.limit()).hasValue(200000);
		assertThat(c.actual()).hasValue(208310);
		assertThat(c.provider()).isEqualTo("anthropic");
		assertThat(ProviderErrors.isRetryable(c)).isFalse();
	}

	@Test
	void vllmWordingGivesTheRequestedTotal() {
		ContextLengthExceededException c = (ContextLengthExceededException) http(400, headers(),
				"{\"object\":\"error\",\"message\":\"This model's maximum context length is 4096 tokens. However, you "
						+ "requested 5000 tokens (4000 in the messages, 1000 in the completion).\",\"type\":\"BadRequestError\",\"code\":400}");
		assertThat(c.limit()).hasValue(4096);
		assertThat(c.actual()).hasValue(5000);
	}

	@Test
	void contextLengthWithoutNumbersHasEmptyLimitAndActual() {
		ContextLengthExceededException c = (ContextLengthExceededException) http(400, headers(),
				"{\"error\":{\"message\":\"too long\",\"code\":\"context_length_exceeded\"}}");
		assertThat(c.limit()).isEmpty();
		assertThat(c.actual()).isEmpty();
	}

	@Test
	void rateLimitReadsRetryAfterSecondsAndTheRateLimitHeaders() {
		ProviderException e = http(429, headers("retry-after", "2", "x-ratelimit-limit-requests", "500",
				"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s", "x-ratelimit-limit-tokens",
				"30000", "x-ratelimit-remaining-tokens", "12", "x-ratelimit-reset-tokens", "6m0s"), OPENAI_RATE_LIMIT);
		assertThat(e).isInstanceOf(RateLimitedException.class);
		RateLimitedException r = (RateLimitedException) e;
		assertThat(r.retryAfter()).contains(Duration.ofSeconds(2));
		assertThat(r.rateLimits()).isEqualTo(new RateLimits(500, 0, Duration.ofSeconds(1), 30000, 12, Duration.ofMinutes(6)));
		assertThat(r.retryable()).isTrue();
		assertThat(r.errorCode()).isEqualTo("rate_limit_exceeded");
		assertThat(ErrorClassifier.outcomeOf(r)).isEqualTo(Outcome.FAILURE);
		assertThat(ProviderErrors.retryAfter(r)).contains(Duration.ofSeconds(2));
		assertThat(r.getStackTrace()).isEmpty();
	}

	@Test
	void retryAfterMsWinsOverRetryAfter() {
		RateLimitedException r = (RateLimitedException) http(429, headers("retry-after", "2", "retry-after-ms", "1500"),
				OPENAI_RATE_LIMIT);
		assertThat(r.retryAfter()).contains(Duration.ofMillis(1500));
	}

	@Test
	void retryAfterAsHttpDateIsMeasuredAgainstTheClock() {
		RateLimitedException r = (RateLimitedException) http(429, headers("retry-after", "Sun, 01 Jun 2025 12:00:30 GMT"),
				"");
		assertThat(r.retryAfter()).contains(Duration.ofSeconds(30));
		RateLimitedException past = (RateLimitedException) http(429,
				headers("retry-after", "Sun, 01 Jun 2025 11:00:00 GMT"), "");
		assertThat(past.retryAfter()).contains(Duration.ZERO);
		RateLimitedException garbage = (RateLimitedException) http(429, headers("retry-after", "soon"), "");
		assertThat(garbage.retryAfter()).isEmpty();
		assertThat(garbage.rateLimits()).isEqualTo(RateLimits.UNKNOWN);
		assertThat(garbage.rateLimits().isKnown()).isFalse();
	}

	@Test
	void anthropicRateLimitHeadersResetAtTimestamps() {
		RateLimitedException r = (RateLimitedException) ProviderErrors.fromHttp("anthropic", 429,
				headers("anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "0",
						"anthropic-ratelimit-requests-reset", "2025-06-01T12:00:05Z", "anthropic-ratelimit-tokens-limit",
						"40000", "anthropic-ratelimit-tokens-remaining", "100", "anthropic-ratelimit-tokens-reset",
						"2025-06-01T12:01:00Z"),
				"{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}", CLOCK);
		assertThat(r.rateLimits()).isEqualTo(new RateLimits(50, 0, Duration.ofSeconds(5), 40000, 100, Duration.ofMinutes(1)));
		assertThat(r.errorType()).isEqualTo("rate_limit_error");
	}

	@Test
	void goDurationsParse() {
		assertThat(RetryHeaders.goDuration("1h2m3.5s")).isEqualTo(Duration.ofMillis(3_723_500));
		assertThat(RetryHeaders.goDuration("20ms")).isEqualTo(Duration.ofMillis(20));
		assertThat(RetryHeaders.goDuration("0s")).isEqualTo(Duration.ZERO);
		assertThat(RetryHeaders.goDuration("6 minutes")).isNull();
		assertThat(RetryHeaders.goDuration("")).isNull();
	}

	@Test
	void insufficientQuotaIsAClientErrorNotARateLimit() {
		ProviderException e = http(429, headers("retry-after", "1"),
				"{\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}");
		assertThat(e).isInstanceOf(ProviderClientException.class);
		assertThat(e.retryable()).isFalse();
		assertThat(ErrorClassifier.outcomeOf(e)).isEqualTo(Outcome.CLIENT_ERROR);
	}

	@Test
	void status529AndOverloadedErrorAreRetryableOverload() {
		ProviderException e = ProviderErrors.fromHttp("anthropic", 529, headers("retry-after", "3"),
				"{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}");
		assertThat(e).isInstanceOf(ProviderOverloadedException.class);
		assertThat(e.retryable()).isTrue();
		assertThat(e.retryAfter()).contains(Duration.ofSeconds(3));
		assertThat(ErrorClassifier.outcomeOf(e)).isEqualTo(Outcome.FAILURE);
		assertThat(http(503, headers(), "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"x\"}}"))
				.isInstanceOf(ProviderOverloadedException.class);
	}

	@Test
	void serverErrorsAreRetryableFailures() {
		for (int status : new int[] { 500, 502, 503, 504 }) {
			ProviderException e = http(status, headers(), "<html>Bad Gateway</html>");
			assertThat(e).isInstanceOf(ProviderServerException.class);
			assertThat(e.retryable()).isTrue();
			assertThat(e.status()).isEqualTo(status);
			assertThat(e.getMessage()).isEqualTo("HTTP " + status + ": <html>Bad Gateway</html>");
			assertThat(ErrorClassifier.outcomeOf(e)).isEqualTo(Outcome.FAILURE);
		}
	}

	@Test
	void otherClientErrorsAreNotRetryableExceptTimeoutAndConflict() {
		ProviderException unauthorized = http(401, headers(),
				"{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}");
		assertThat(unauthorized).isInstanceOf(ProviderClientException.class);
		assertThat(unauthorized.retryable()).isFalse();
		assertThat(unauthorized.errorCode()).isEqualTo("invalid_api_key");
		assertThat(ErrorClassifier.outcomeOf(unauthorized)).isEqualTo(Outcome.CLIENT_ERROR);
		assertThat(http(404, headers(), "").getMessage()).isEqualTo("HTTP 404: (no message)");
		assertThat(http(408, headers(), "").retryable()).isTrue();
		assertThat(http(409, headers(), "").retryable()).isTrue();
		assertThat(http(422, headers(), "{\"error\":\"bad\"}").getMessage()).isEqualTo("HTTP 422: bad");
	}

	@Test
	void longBodiesAreCutInTheMessage() {
		ProviderException e = http(500, headers(), "x".repeat(10_000));
		assertThat(e.getMessage()).hasSize("HTTP 500: ".length() + ProviderErrors.MAX_MESSAGE_CHARS + 3);
	}

	@Test
	void inBandErrorsAreRetryableByType() {
		ProviderException server = ProviderErrors.inBand("openai", "server_error", null, "The server had an error");
		assertThat(server).isInstanceOf(ProviderStreamException.class);
		assertThat(server.retryable()).isTrue();
		assertThat(server.inBand()).isTrue();
		assertThat(server.status()).isEqualTo(-1);
		assertThat(server.getMessage()).isEqualTo("in-band error server_error: The server had an error");
		assertThat(ErrorClassifier.outcomeOf(server)).isEqualTo(Outcome.FAILURE);

		ProviderException invalid = ProviderErrors.inBand("openai", "invalid_request_error", null, "bad tool schema");
		assertThat(invalid.retryable()).isFalse();
		assertThat(ErrorClassifier.outcomeOf(invalid)).isEqualTo(Outcome.FAILURE);

		ProviderException overloaded = ProviderErrors.inBand("anthropic", "overloaded_error", null, "Overloaded");
		assertThat(overloaded).isInstanceOf(ProviderOverloadedException.class);
		assertThat(overloaded.retryable()).isTrue();
		assertThat(overloaded.inBand()).isTrue();

		assertThat(ProviderErrors.inBand("anthropic", "rate_limit_error", null, "slow"))
				.isInstanceOf(RateLimitedException.class);
	}

	@Test
	void outcomesOfNonProviderErrorsFollowTheTable() {
		assertThat(ErrorClassifier.outcomeOf(new StreamStalledException(StallPhase.IDLE, 3, Duration.ofSeconds(1))))
				.isEqualTo(Outcome.STALLED);
		assertThat(ErrorClassifier.outcomeOf(new IncompleteStreamException(3))).isEqualTo(Outcome.INCOMPLETE);
		assertThat(ErrorClassifier.outcomeOf(new AdmissionRejectedException(Priority.P2,
				AdmissionRejectedException.Reason.values()[0], "full"))).isEqualTo(Outcome.REJECTED);
		assertThat(ErrorClassifier.outcomeOf(new IllegalStateException())).isEqualTo(Outcome.FAILURE);
		assertThat(ErrorClassifier.outcomeOf(Exceptions.propagate(new ContextLengthExceededException("openai", 400,
				null, null, "m", -1, -1)))).isEqualTo(Outcome.CLIENT_ERROR);
	}

	@Test
	void transientNonProviderErrorsAreRetryable() {
		assertThat(ProviderErrors.isRetryable(new IOException("Connection reset by peer"))).isTrue();
		assertThat(ProviderErrors.isRetryable(new RuntimeException(new IOException("wrapped")))).isTrue();
		assertThat(ProviderErrors.isRetryable(new TimeoutException())).isTrue();
		assertThat(ProviderErrors.isRetryable(new StreamStalledException(StallPhase.FIRST_TOKEN, 0, Duration.ofSeconds(1))))
				.isTrue();
		assertThat(ProviderErrors.isRetryable(new IncompleteStreamException(0))).isTrue();
		assertThat(ProviderErrors.isRetryable(new IllegalArgumentException())).isFalse();
		assertThat(ProviderErrors.retryAfter(new IOException())).isEmpty();
	}

	@Test
	void rejectsMissingArguments() {
		assertThatThrownBy(() -> ProviderErrors.fromHttp(null, 400, headers(), "")).isInstanceOf(NullPointerException.class);
		assertThatThrownBy(() -> ErrorClassifier.outcomeOf(null)).isInstanceOf(NullPointerException.class);
	}

	@Test
	void outcomeAndRetryDecisionNeedNeitherJacksonNorNetty() throws Exception {
		ClassLoader hidden = new HidingLoader(getClass().getClassLoader());
		Class<?> probe = hidden.loadClass(WithoutJackson.class.getName());
		assertThat(probe.getClassLoader()).isSameAs(hidden);
		assertThat(probe.getMethod("run").invoke(null)).isEqualTo("CLIENT_ERROR false FAILURE true");
	}

	/** Runs inside {@link HidingLoader}, where Jackson and Netty cannot be loaded. */
	public static final class WithoutJackson {

		public static String run() {
			ProviderException context = new ContextLengthExceededException("openai", 400, null, null, "m", 1, 2);
			ProviderException overloaded = new ProviderOverloadedException("anthropic", 529, null, "m", null);
			return ErrorClassifier.outcomeOf(context) + " " + ProviderErrors.isRetryable(context) + " "
					+ ErrorClassifier.outcomeOf(overloaded) + " " + ProviderErrors.isRetryable(overloaded);
		}
	}

	/** Defines {@code dev.aiguard.provider} classes and the default classifier itself, and refuses Jackson and Netty. */
	static final class HidingLoader extends ClassLoader {

		HidingLoader(ClassLoader parent) {
			super(parent);
		}

		@Override
		protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
			synchronized (getClassLoadingLock(name)) {
				if (name.startsWith("com.fasterxml.") || name.startsWith("tools.jackson.") || name.startsWith("io.netty.") || name.startsWith("reactor.netty.")) {
					throw new ClassNotFoundException(name + " (hidden by the test)");
				}
				// the default classifier lives beside the policy; it must see this loader's provider classes
				if (!name.startsWith("dev.aiguard.provider.") && !name.equals("dev.aiguard.ErrorClassifier")) {
					return super.loadClass(name, resolve);
				}
				Class<?> c = findLoadedClass(name);
				if (c == null) {
					try (InputStream in = getParent().getResourceAsStream(name.replace('.', '/') + ".class")) {
						if (in == null) {
							throw new ClassNotFoundException(name);
						}
						ByteArrayOutputStream out = new ByteArrayOutputStream();
						in.transferTo(out);
						byte[] b = out.toByteArray();
						c = defineClass(name, b, 0, b.length);
					}
					catch (IOException e) {
						throw new ClassNotFoundException(name, e);
					}
				}
				if (resolve) {
					resolveClass(c);
				}
				return c;
			}
		}
	}
}
