package dev.aiguard.springai;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import okhttp3.Interceptor;
import okhttp3.MediaType;
import okhttp3.Response;
import okhttp3.ResponseBody;
import okio.Okio;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.openai.http.okhttp.OpenAiHttpClientBuilderCustomizer;
import org.springframework.ai.openai.http.okhttp.SpringAiOpenAiHttpClient;

/**
 * Fits the HTTP client of Spring AI's OpenAI models to a guard: finish reasons in any letter case,
 * and a read timeout of its own beside Spring AI's one {@code timeout}.
 *
 * <pre>{@code
 * OpenAiChatModel model = OpenAiChatModel.builder()
 *     .options(OpenAiChatOptions.builder()
 *         .model("gpt-4o-mini")
 *         .maxRetries(0)                          // the guard retries
 *         .timeout(Duration.ofMinutes(10))        // the whole call: above the longest answer
 *         .build())
 *     .httpClientBuilderCustomizer(OpenAiHttpCustomizer.builder()
 *         .readTimeout(Duration.ofSeconds(12))    // one read: a little above the guard's deadlines
 *         .build())
 *     .build();
 * }</pre>
 *
 * (In a Spring Boot application, the same customizer as a bean of type
 * {@code OpenAiHttpClientBuilderCustomizer}.)
 *
 * <h2>Finish reasons</h2>
 * The OpenAI SDK knows the finish reasons {@code stop}, {@code length}, {@code tool_calls},
 * {@code content_filter} and {@code function_call} in lower case only, and Spring AI's
 * {@code OpenAiChatModel} reports any other spelling as no finish reason at all: a complete answer
 * that ends with {@code "STOP"} looks cut short to the guard. The customizer's interceptor rewrites
 * those five, in any letter case, to lower case in the chat completion answers (whole and
 * streamed) before the SDK reads them. Finish reasons it does not know pass unchanged.
 *
 * <h2>Timeouts</h2>
 * Spring AI sets its {@code timeout} on every request as both OkHttp's read timeout and its cap on
 * the whole call. {@link Builder#readTimeout} and {@link Builder#connectTimeout} replace the first
 * two for each call, so {@code timeout} can cap the whole answer while a silent socket is given up
 * soon after the guard's deadlines (which frees the connection and the threads of an abandoned
 * answer).
 */
public final class OpenAiHttpCustomizer implements OpenAiHttpClientBuilderCustomizer {

	private static final MediaType EVENT_STREAM = MediaType.get("text/event-stream");

	private final @Nullable Duration connectTimeout;
	private final @Nullable Duration readTimeout;
	private final Interceptor interceptor = this::intercept;

	private OpenAiHttpCustomizer(Builder b) {
		this.connectTimeout = b.connectTimeout;
		this.readTimeout = b.readTimeout;
	}

	/** @return a customizer that reads finish reasons in any case and leaves the timeouts to Spring AI */
	public static OpenAiHttpCustomizer defaults() {
		return builder().build();
	}

	/** @return a builder; nothing set = {@link #defaults()} */
	public static Builder builder() {
		return new Builder();
	}

	@Override
	public void customize(SpringAiOpenAiHttpClient.Builder builder) {
		builder.interceptor(interceptor);
	}

	/** @return the read timeout of each call, or {@code null} when Spring AI's {@code timeout} applies */
	public @Nullable Duration readTimeout() {
		return readTimeout;
	}

	/** @return the connect timeout of each call, or {@code null} when the SDK's applies */
	public @Nullable Duration connectTimeout() {
		return connectTimeout;
	}

	private Response intercept(Interceptor.Chain chain) throws IOException {
		Interceptor.Chain c = chain;
		if (connectTimeout != null) {
			c = c.withConnectTimeout((int) connectTimeout.toMillis(), TimeUnit.MILLISECONDS);
		}
		if (readTimeout != null) {
			c = c.withReadTimeout((int) readTimeout.toMillis(), TimeUnit.MILLISECONDS);
		}
		Response response = c.proceed(c.request());
		ResponseBody body = response.body();
		if (body == null || !response.isSuccessful() || !isChatAnswer(response, body.contentType())) {
			return response;
		}
		// the body's length cannot change: only the letter case of ASCII values is rewritten
		ResponseBody normalised = ResponseBody.create(Okio.buffer(new FinishReasonSource(body.source())),
				body.contentType(), body.contentLength());
		return response.newBuilder().body(normalised).build();
	}

	/** Only chat completions, JSON or server-sent events: other models' bodies (audio) pass untouched. */
	private static boolean isChatAnswer(Response response, @Nullable MediaType type) {
		if (type == null || !response.request().url().encodedPath().endsWith("/chat/completions")) {
			return false;
		}
		return "json".equals(type.subtype()) || (EVENT_STREAM.type().equals(type.type())
				&& EVENT_STREAM.subtype().equals(type.subtype()));
	}

	@Override
	public String toString() {
		return "OpenAiHttpCustomizer[connectTimeout=" + connectTimeout + ", readTimeout=" + readTimeout + "]";
	}

	/** Settings of an {@link OpenAiHttpCustomizer}; each setter checks its value. */
	public static final class Builder {

		private @Nullable Duration connectTimeout;
		private @Nullable Duration readTimeout;

		private Builder() {
		}

		/**
		 * @param timeout the longest wait for one read of the answer (the gap between two bytes), in
		 *        place of Spring AI's {@code timeout}: a little above the guard's idle and first-token
		 *        deadlines. Positive, whole milliseconds up to {@code Integer.MAX_VALUE}
		 */
		public Builder readTimeout(Duration timeout) {
			this.readTimeout = check("readTimeout", timeout);
			return this;
		}

		/** @param timeout the longest wait for a connection; positive, up to {@code Integer.MAX_VALUE} ms */
		public Builder connectTimeout(Duration timeout) {
			this.connectTimeout = check("connectTimeout", timeout);
			return this;
		}

		private static Duration check(String field, @Nullable Duration timeout) {
			if (timeout == null || timeout.compareTo(Duration.ofMillis(1)) < 0
					|| timeout.compareTo(Duration.ofMillis(Integer.MAX_VALUE)) > 0) {
				throw new IllegalArgumentException(field + " must be between 1 ms and " + Integer.MAX_VALUE
						+ " ms, was " + timeout);
			}
			return timeout;
		}

		/** @return the customizer */
		public OpenAiHttpCustomizer build() {
			return new OpenAiHttpCustomizer(this);
		}
	}
}
