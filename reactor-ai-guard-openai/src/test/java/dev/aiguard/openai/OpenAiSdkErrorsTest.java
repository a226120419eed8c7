package dev.aiguard.openai;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

import com.openai.core.JsonValue;
import com.openai.core.http.Headers;
import com.openai.errors.BadRequestException;
import com.openai.errors.InternalServerException;
import com.openai.errors.OpenAIIoException;
import com.openai.errors.RateLimitException;
import com.openai.errors.SseException;
import com.openai.errors.UnauthorizedException;
import com.openai.models.ErrorObject;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.provider.RateLimitedException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

class OpenAiSdkErrorsTest {

	private static ErrorObject error(String type, String code, String message) {
		ErrorObject.Builder b = ErrorObject.builder().type(type).message(message).param((String) null);
		return b.code(code).build();
	}

	@Test
	void rateLimitKeepsRetryAfterFromTheHeaders() {
		RateLimitException sdk = RateLimitException.builder()
			.headers(Headers.builder().put("Retry-After", "2").put("x-ratelimit-remaining-requests", "0").build())
			.error(error("requests", "rate_limit_exceeded", "Rate limit reached for requests"))
			.build();

		Throwable mapped = OpenAiSdkErrors.map(sdk);

		assertThat(mapped).isInstanceOfSatisfying(RateLimitedException.class, e -> {
			assertThat(e.provider()).isEqualTo("openai");
			assertThat(e.status()).isEqualTo(429);
			assertThat(e.retryAfter()).contains(Duration.ofSeconds(2));
			assertThat(e.errorCode()).isEqualTo("rate_limit_exceeded");
			assertThat(e.getMessage()).contains("Rate limit reached for requests");
			assertThat(e.retryable()).isTrue();
		});
	}

	@Test
	void insufficientQuotaIsAClientErrorNotARateLimit() {
		RateLimitException sdk = RateLimitException.builder()
			.headers(Headers.builder().build())
			.error(error("insufficient_quota", "insufficient_quota", "You exceeded your current quota"))
			.build();

		assertThat(OpenAiSdkErrors.map(sdk)).isInstanceOfSatisfying(ProviderClientException.class,
				e -> assertThat(e.retryable()).isFalse());
	}

	@Test
	void contextLengthBadRequestBecomesContextLengthExceeded() {
		BadRequestException sdk = BadRequestException.builder()
			.headers(Headers.builder().build())
			.error(error("invalid_request_error", "context_length_exceeded",
					"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."))
			.build();

		assertThat(OpenAiSdkErrors.map(sdk)).isInstanceOfSatisfying(ContextLengthExceededException.class, e -> {
			assertThat(e.status()).isEqualTo(400);
			assertThat(e.limit()).hasValue(8192);
			assertThat(e.actual()).hasValue(9000);
			assertThat(e.retryable()).isFalse();
		});
	}

	@Test
	void serverErrorKeepsStatusAndRetryAfter() {
		InternalServerException sdk = InternalServerException.builder()
			.statusCode(503)
			.headers(Headers.builder().put("retry-after-ms", "1500").build())
			.error(error("server_error", null, "The server had an error while processing your request."))
			.build();

		assertThat(OpenAiSdkErrors.map(sdk)).isInstanceOfSatisfying(ProviderServerException.class, e -> {
			assertThat(e.status()).isEqualTo(503);
			assertThat(e.retryAfter()).contains(Duration.ofMillis(1500));
			assertThat(e.retryable()).isTrue();
		});
	}

	@Test
	void overloadStatusBecomesOverloaded() {
		InternalServerException sdk = InternalServerException.builder()
			.statusCode(529)
			.headers(Headers.builder().build())
			.error(error("overloaded_error", null, "Overloaded"))
			.build();

		assertThat(OpenAiSdkErrors.map(sdk)).isInstanceOf(ProviderOverloadedException.class);
	}

	@Test
	void unauthorizedIsANonRetryableClientError() {
		UnauthorizedException sdk = UnauthorizedException.builder()
			.headers(Headers.builder().build())
			.error(error("invalid_request_error", "invalid_api_key", "Incorrect API key provided"))
			.build();

		assertThat(OpenAiSdkErrors.map(sdk)).isInstanceOfSatisfying(ProviderClientException.class, e -> {
			assertThat(e.status()).isEqualTo(401);
			assertThat(e.errorCode()).isEqualTo("invalid_api_key");
			assertThat(e.retryable()).isFalse();
		});
	}

	@Test
	@SuppressWarnings("unchecked") // the SDK's JsonValue is a raw JsonField to Java
	void aBodyThatIsNotAnErrorObjectStillGivesTheStatus() {
		InternalServerException sdk = InternalServerException.builder()
			.statusCode(502)
			.headers(Headers.builder().build())
			.error(JsonValue.from(Map.of("detail", "bad gateway")))
			.build();

		assertThat(OpenAiSdkErrors.map(sdk)).isInstanceOfSatisfying(ProviderServerException.class,
				e -> assertThat(e.status()).isEqualTo(502));
	}

	@Test
	void errorEventInsideAStreamIsInBand() {
		SseException sdk = SseException.builder()
			.statusCode(200)
			.headers(Headers.builder().build())
			.error(error("server_error", null, "The model crashed mid-answer"))
			.build();

		assertThat(OpenAiSdkErrors.map(sdk)).isInstanceOfSatisfying(ProviderStreamException.class, e -> {
			assertThat(e.inBand()).isTrue();
			assertThat(e.errorType()).isEqualTo("server_error");
			assertThat(e.getMessage()).contains("The model crashed mid-answer");
		});
	}

	@Test
	void rateLimitEventInsideAStreamIsARateLimit() {
		SseException sdk = SseException.builder()
			.statusCode(200)
			.headers(Headers.builder().build())
			.error(error("rate_limit_error", "rate_limit_exceeded", "slow down"))
			.build();

		assertThat(OpenAiSdkErrors.map(sdk)).isInstanceOfSatisfying(RateLimitedException.class,
				e -> assertThat(e.inBand()).isTrue());
	}

	@Test
	void errorEventWithoutAnErrorObjectStillMaps() {
		SseException sdk = SseException.builder().statusCode(200).headers(Headers.builder().build()).build();

		assertThat(OpenAiSdkErrors.map(sdk)).isInstanceOf(ProviderStreamException.class);
	}

	@Test
	void sdkIoErrorBecomesConnectionErrorWithTheTransportCause() {
		IOException reset = new IOException("Connection reset");
		OpenAIIoException sdk = new OpenAIIoException("Request failed", reset);

		Throwable mapped = OpenAiSdkErrors.map(sdk);

		assertThat(mapped).isInstanceOfSatisfying(ProviderConnectionException.class, e -> {
			assertThat(e.retryable()).isTrue();
			assertThat(e.getCause()).isSameAs(sdk);
			assertThat(e.getMessage()).contains("Connection reset");
		});
		assertThat(ProviderErrors.isRetryable(mapped)).isTrue();
	}

	@Test
	void plainIoErrorsBecomeConnectionErrors() {
		assertThat(OpenAiSdkErrors.map(new SocketTimeoutException("timeout")))
			.isInstanceOf(ProviderConnectionException.class)
			.hasMessageContaining("SocketTimeoutException");
		assertThat(OpenAiSdkErrors.map(new UncheckedIOException(new IOException("unexpected end of stream"))))
			.isInstanceOfSatisfying(ProviderConnectionException.class,
					e -> assertThat(e.getCause()).isInstanceOf(IOException.class).isNotInstanceOf(UncheckedIOException.class));
	}

	@Test
	void futureWrappersAreLookedThrough() {
		RateLimitException sdk = RateLimitException.builder()
			.headers(Headers.builder().put("Retry-After", "1").build())
			.error(error("requests", "rate_limit_exceeded", "Rate limit"))
			.build();

		assertThat(OpenAiSdkErrors.map(new CompletionException(sdk))).isInstanceOf(RateLimitedException.class);
		assertThat(OpenAiSdkErrors.map(new ExecutionException(new CompletionException(sdk))))
			.isInstanceOf(RateLimitedException.class);
		assertThat(OpenAiSdkErrors.map(new CompletionException(new OpenAIIoException("Request failed"))))
			.isInstanceOf(ProviderConnectionException.class);
	}

	@Test
	void libraryErrorsAndUnknownErrorsAreUnchanged() {
		ProviderException already = new ProviderConnectionException("openai", "reset", null);
		IllegalStateException unknown = new IllegalStateException("bug");
		CompletionException wrappedUnknown = new CompletionException(unknown);

		assertThat(OpenAiSdkErrors.map(already)).isSameAs(already);
		assertThat(OpenAiSdkErrors.map(new CompletionException(already))).isSameAs(already);
		assertThat(OpenAiSdkErrors.map(unknown)).isSameAs(unknown);
		assertThat(OpenAiSdkErrors.map(wrappedUnknown)).isSameAs(wrappedUnknown);
	}

	@Test
	void aWrapperWithoutCauseIsReturnedAsItIs() {
		CompletionException empty = new CompletionException("no cause", null);

		assertThat(OpenAiSdkErrors.map(empty)).isSameAs(empty);
	}

	@Test
	void nullIsRejectedByName() {
		assertThatNullPointerException().isThrownBy(() -> OpenAiSdkErrors.map(null)).withMessage("error");
	}
}
