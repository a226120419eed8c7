package dev.aiguard.springai;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.UndeclaredThrowableException;
import java.util.Objects;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.openai.errors.OpenAIException;
import dev.aiguard.core.Secrets;
import dev.aiguard.openai.OpenAiSdkErrors;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import org.springframework.util.ClassUtils;
import reactor.core.Exceptions;

/**
 * Turns the errors a Spring AI model throws into the library's typed {@link ProviderException}s, so
 * the guard's retry rules, {@code Retry-After} waits, breaker and prompt truncation work on them.
 * {@link AiGuardAdvisor} applies it to every attempt; call it yourself when you guard a model
 * without the advisor.
 *
 * <pre>{@code
 * Flux<ChatResponse> answer = chatModel.stream(prompt)
 *     .onErrorMap(SpringAiErrors::map)
 *     .transform(AiGuard.of(policy, SpringAiChunks.chatResponses()));
 * }</pre>
 *
 * <table>
 * <caption>Spring AI error to library error</caption>
 * <tr><th>error (anywhere in the cause chain, below {@code CompletionException},
 * {@code ExecutionException} and other wrappers)</th><th>becomes</th></tr>
 * <tr><td>the OpenAI SDK's errors ({@code RateLimitException}, {@code BadRequestException},
 * {@code InternalServerException}, {@code SseException}, {@code OpenAIIoException}), which Spring AI's
 * {@code OpenAiChatModel} lets through</td><td>{@link OpenAiSdkErrors#map}: the status, the headers
 * ({@code Retry-After}, {@code x-ratelimit-*}) and the body, provider {@code openai}</td></tr>
 * <tr><td>{@code WebClientResponseException}, {@code RestClientResponseException} (models built on Spring's
 * HTTP clients)</td><td>{@link ProviderErrors#fromHttp} with their status, headers and body</td></tr>
 * <tr><td>{@code TransientAiException}, {@code NonTransientAiException} whose message starts with the
 * status ({@code "429 - {...}"}, as Spring AI's response error handler writes it)</td><td>{@link ProviderErrors#fromHttp}
 * with that status and the body; there are no headers, so no {@code Retry-After}</td></tr>
 * <tr><td>{@code TransientAiException}, {@code NonTransientAiException} without a status</td><td>{@link ProviderErrors#inBand}
 * with type {@code server_error} (retryable) or {@code invalid_request_error} (not): a context-length message
 * still becomes a {@code ContextLengthExceededException}</td></tr>
 * <tr><td>{@code ResourceAccessException}, {@code WebClientRequestException}, {@link IOException}</td><td>{@link ProviderConnectionException}</td></tr>
 * <tr><td>a {@link ProviderException}</td><td>itself, unwrapped</td></tr>
 * <tr><td>anything else</td><td>unchanged</td></tr>
 * </table>
 *
 * Spring AI's retry exceptions and Spring's HTTP client exceptions are recognised when their
 * modules ({@code spring-ai-retry}, {@code spring-web}, {@code spring-webflux}) are on the class path.
 *
 * <p>What comes out holds no credential: a provider that echoes the key in its error ("Incorrect
 * API key provided: sk-...") has it replaced by {@value Secrets#REDACTED} in the message and in the
 * messages of the causes ({@link #scrub}).
 */
public final class SpringAiErrors {

	/** The provider name of errors that do not say which provider answered. */
	public static final String PROVIDER = "spring-ai";

	/** How many wrappers and causes are looked through; a cause cycle cannot loop. */
	private static final int MAX_DEPTH = 8;

	/** {@code "429 - {json}"}: the message of Spring AI's retry exceptions for an HTTP error. */
	private static final Pattern STATUS_MESSAGE = Pattern.compile("^\\s*(\\d{3})\\s*-\\s*(.*)$", Pattern.DOTALL);

	private static final ClassLoader LOADER = SpringAiErrors.class.getClassLoader();
	private static final boolean RETRY = ClassUtils.isPresent("org.springframework.ai.retry.TransientAiException", LOADER);
	private static final boolean WEB = ClassUtils.isPresent("org.springframework.web.client.RestClientException", LOADER);
	private static final boolean WEBFLUX = ClassUtils
		.isPresent("org.springframework.web.reactive.function.client.WebClientException", LOADER);

	private SpringAiErrors() {
	}

	/**
	 * Maps an error of a Spring AI model; see the class documentation for the table. Never throws.
	 *
	 * @param error what the model threw or signalled
	 * @return the library's typed exception, or {@code error} unchanged
	 */
	public static Throwable map(Throwable error) {
		return map(error, PROVIDER);
	}

	/**
	 * As {@link #map(Throwable)}, naming the provider in errors that do not say it themselves (all but
	 * the OpenAI SDK's).
	 *
	 * @param provider e.g. {@code anthropic}, {@code ollama}
	 */
	public static Throwable map(Throwable error, String provider) {
		Objects.requireNonNull(error, "error");
		Objects.requireNonNull(provider, "provider");
		return ScrubbedErrors.scrub(typed(error, provider));
	}

	/**
	 * Removes credentials from an error: when its message, or the message of one of its causes,
	 * holds one of {@code knownSecrets} or text shaped like a credential ({@link Secrets#scrub}), the
	 * error is replaced by a copy of the same type ({@link ProviderException}s) with the same fields
	 * and scrubbed messages; an error of another type by a {@code RuntimeException} whose message
	 * names its class. An error with nothing to hide is returned as it is. {@link #map} does this
	 * for credential-shaped text; {@link AiGuardAdvisor.Builder#secrets} adds the configured key.
	 *
	 * <pre>{@code
	 * chatModel.stream(prompt)
	 *     .onErrorMap(e -> SpringAiErrors.scrub(SpringAiErrors.map(e), apiKey))
	 * }</pre>
	 *
	 * @param error any error
	 * @param knownSecrets credentials to remove wherever they appear (the configured API key)
	 * @return {@code error}, or a copy of it without the secrets
	 */
	public static Throwable scrub(Throwable error, String... knownSecrets) {
		Objects.requireNonNull(error, "error");
		return ScrubbedErrors.scrub(error, knownSecrets);
	}

	private static Throwable typed(Throwable error, String provider) {
		Throwable e = unwrap(error);
		// an HTTP answer with its status (and headers) says most: look for one first, anywhere in the chain
		Throwable c = e;
		for (int depth = 0; c != null && depth < MAX_DEPTH; depth++, c = c.getCause()) {
			if (c instanceof ProviderException) {
				return c;
			}
			if (c instanceof OpenAIException) {
				Throwable mapped = OpenAiSdkErrors.map(c);
				if (mapped instanceof ProviderException) {
					return mapped;
				}
			}
			ProviderException http = WEBFLUX ? WebClientErrors.fromResponse(c, provider) : null;
			if (http == null && WEB) {
				http = RestClientErrors.fromResponse(c, provider);
			}
			if (http != null) {
				return http;
			}
		}
		ProviderException described = RETRY ? SpringAiRetryErrors.fromMessage(e, provider) : null;
		if (described != null) {
			return described;
		}
		c = e;
		for (int depth = 0; c != null && depth < MAX_DEPTH; depth++, c = c.getCause()) {
			boolean transport = c instanceof IOException || (WEB && RestClientErrors.isTransport(c))
					|| (WEBFLUX && WebClientErrors.isTransport(c));
			if (transport) {
				String detail = c.getMessage() == null ? "" : ": " + c.getMessage();
				return new ProviderConnectionException(provider,
						"transport failed (" + c.getClass().getSimpleName() + detail + ")", c);
			}
		}
		return error;
	}

	/** Looks through the wrappers futures, proxies and Reactor put around the real error. */
	private static Throwable unwrap(Throwable error) {
		Throwable e = Exceptions.unwrap(error);
		for (int depth = 0; depth < MAX_DEPTH; depth++) {
			boolean wrapper = e instanceof CompletionException || e instanceof ExecutionException
					|| e instanceof UndeclaredThrowableException || e instanceof UncheckedIOException;
			if (!wrapper || e.getCause() == null) {
				return e;
			}
			e = e.getCause();
		}
		return e;
	}

	/**
	 * @param message a message that may start with an HTTP status, {@code "503 - {...}"}
	 * @param retryable whether the error is known to be worth retrying when it has no status
	 */
	static ProviderException fromMessage(String provider, String message, boolean retryable) {
		String text = message == null ? "" : message;
		Matcher m = STATUS_MESSAGE.matcher(text);
		if (m.matches()) {
			int status = Integer.parseInt(m.group(1));
			if (status >= 400 && status < 600) {
				return ProviderErrors.fromHttp(provider, status, name -> null, m.group(2));
			}
		}
		return ProviderErrors.inBand(provider, retryable ? "server_error" : "invalid_request_error", null,
				text.isEmpty() ? "(no message)" : text);
	}
}
