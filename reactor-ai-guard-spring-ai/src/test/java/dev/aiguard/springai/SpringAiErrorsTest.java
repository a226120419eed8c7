package dev.aiguard.springai;

import java.io.IOException;
import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletionException;

import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.core.StallPhase;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.retry.NonTransientAiException;
import org.springframework.ai.retry.TransientAiException;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpMethod;
import org.springframework.http.HttpStatus;
import org.springframework.web.client.HttpClientErrorException;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.reactive.function.client.WebClientRequestException;
import org.springframework.web.reactive.function.client.WebClientResponseException;
import reactor.test.StepVerifier;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

class SpringAiErrorsTest {

	private static final String RATE_LIMIT_BODY = "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\","
			+ "\"code\":\"rate_limit_exceeded\"}}";

	private static final String CONTEXT_BODY = "{\"error\":{\"message\":\"This model's maximum context length is 100 "
			+ "tokens. However, your messages resulted in 150 tokens.\",\"type\":\"invalid_request_error\","
			+ "\"code\":\"context_length_exceeded\"}}";

	@AutoClose
	private final SpringAiMock ai = new SpringAiMock();

	@Test
	void theSdksRateLimitInACompletionExceptionIsARateLimitedExceptionWithItsRetryAfter() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 429, 3));

		StepVerifier.create(ai.model.stream(new Prompt("Hello")))
			.expectErrorSatisfies(e -> {
				assertThat(e).isInstanceOf(CompletionException.class);
				assertThat(SpringAiErrors.map(e)).isInstanceOfSatisfying(RateLimitedException.class, r -> {
					assertThat(r.provider()).isEqualTo("openai");
					assertThat(r.retryAfter()).contains(Duration.ofSeconds(3));
				});
			})
			.verify(WAIT);
	}

	@Test
	void theSdksErrorsOfABlockingCallAreTypedToo() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 500, 0));

		Throwable thrown = catchThrowable(() -> ai.model.call(new Prompt("Hello")));

		assertThat(SpringAiErrors.map(thrown)).isInstanceOfSatisfying(ProviderServerException.class,
				s -> assertThat(s.status()).isEqualTo(500));
	}

	@Test
	void springAiRetryExceptionsAreReadFromTheirStatusAndBody() {
		assertThat(SpringAiErrors.map(new TransientAiException("503 - {\"error\":{\"message\":\"busy\"}}")))
			.isInstanceOfSatisfying(ProviderServerException.class, s -> {
				assertThat(s.status()).isEqualTo(503);
				assertThat(s.retryable()).isTrue();
				assertThat(s.provider()).isEqualTo(SpringAiErrors.PROVIDER);
			});
		assertThat(SpringAiErrors.map(new NonTransientAiException("429 - " + RATE_LIMIT_BODY)))
			.isInstanceOf(RateLimitedException.class);
		assertThat(SpringAiErrors.map(new NonTransientAiException("400 - " + CONTEXT_BODY), "anthropic"))
			.isInstanceOfSatisfying(ContextLengthExceededException.class, c -> {
				assertThat(c.limit()).hasValue(100);
				assertThat(c.actual()).hasValue(150);
				assertThat(c.provider()).isEqualTo("anthropic");
			});
		assertThat(SpringAiErrors.map(new NonTransientAiException("401 - {\"error\":{\"message\":\"bad key\"}}")))
			.isInstanceOfSatisfying(ProviderClientException.class, c -> assertThat(c.status()).isEqualTo(401));
	}

	@Test
	void springAiRetryExceptionsWithoutAStatusKeepTheirRetryability() {
		assertThat(SpringAiErrors.map(new TransientAiException("the model timed out")))
			.isInstanceOfSatisfying(ProviderStreamException.class, s -> assertThat(s.retryable()).isTrue());
		assertThat(SpringAiErrors.map(new NonTransientAiException("tool not found")))
			.isInstanceOfSatisfying(ProviderStreamException.class, s -> assertThat(s.retryable()).isFalse());
		assertThat(SpringAiErrors.map(new NonTransientAiException("This model's maximum context length is 8 tokens")))
			.isInstanceOf(ContextLengthExceededException.class);
		assertThat(SpringAiErrors.map(new RuntimeException("wrapped", new TransientAiException("busy"))))
			.isInstanceOf(ProviderStreamException.class);
	}

	@Test
	void webClientResponsesKeepTheirStatusHeadersAndBody() {
		HttpHeaders headers = new HttpHeaders();
		headers.set("Retry-After", "7");
		WebClientResponseException e = WebClientResponseException.create(429, "Too Many Requests", headers,
				RATE_LIMIT_BODY.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);

		assertThat(SpringAiErrors.map(new CompletionException(e)))
			.isInstanceOfSatisfying(RateLimitedException.class, r -> {
				assertThat(r.retryAfter()).contains(Duration.ofSeconds(7));
				assertThat(r.errorCode()).isEqualTo("rate_limit_exceeded");
			});
	}

	@Test
	void restClientResponsesKeepTheirStatusHeadersAndBody() {
		HttpHeaders headers = new HttpHeaders();
		headers.set("retry-after", "2");
		HttpClientErrorException e = HttpClientErrorException.create(HttpStatus.TOO_MANY_REQUESTS, "Too Many Requests",
				headers, RATE_LIMIT_BODY.getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8);

		assertThat(SpringAiErrors.map(e)).isInstanceOfSatisfying(RateLimitedException.class,
				r -> assertThat(r.retryAfter()).contains(Duration.ofSeconds(2)));
		// a Spring AI retry exception that wraps the response: the response says more
		assertThat(SpringAiErrors.map(new TransientAiException("rate limited", e)))
			.isInstanceOfSatisfying(RateLimitedException.class,
					r -> assertThat(r.retryAfter()).contains(Duration.ofSeconds(2)));
	}

	@Test
	void transportFailuresAreConnectionErrors() {
		ResourceAccessException refused = new ResourceAccessException("I/O error", new ConnectException("refused"));
		assertThat(SpringAiErrors.map(refused)).isInstanceOfSatisfying(ProviderConnectionException.class, c -> {
			assertThat(c.retryable()).isTrue();
			assertThat(c.getCause()).isSameAs(refused);
		});
		WebClientRequestException request = new WebClientRequestException(new IOException("reset"), HttpMethod.POST,
				java.net.URI.create("http://localhost/v1/chat/completions"), new HttpHeaders());
		assertThat(SpringAiErrors.map(request)).isInstanceOf(ProviderConnectionException.class);
		assertThat(SpringAiErrors.map(new CompletionException(new IOException("premature close"))))
			.isInstanceOf(ProviderConnectionException.class);
	}

	@Test
	void typedErrorsAreUnwrappedAndAnythingElseIsLeftAlone() {
		ProviderException typed = new ProviderServerException("openai", 502, null, null, "bad gateway", null);
		assertThat(SpringAiErrors.map(new CompletionException(typed))).isSameAs(typed);
		StreamStalledException stall = new StreamStalledException(StallPhase.IDLE, 3, Duration.ofMillis(400));
		assertThat(SpringAiErrors.map(stall)).isSameAs(stall);
		IllegalStateException other = new IllegalStateException("a bug");
		assertThat(SpringAiErrors.map(other)).isSameAs(other);
		CompletionException wrapped = new CompletionException(other);
		assertThat(SpringAiErrors.map(wrapped)).isSameAs(wrapped);
	}
}
