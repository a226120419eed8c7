package dev.aiguard.langchain4j;

import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Executor;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

import dev.langchain4j.http.client.HttpClient;
import dev.langchain4j.http.client.HttpClientBuilder;
import dev.langchain4j.http.client.jdk.JdkHttpClientBuilder;

/**
 * LangChain4j's JDK HTTP client, built so that {@link LangChain4jStreams} can end a streaming
 * request at any moment (also before its first token, when LangChain4j itself offers no handle)
 * and can read the headers of an error response (LangChain4j keeps only its status and body, so a
 * 429's {@code Retry-After} would be lost) and the last events of a stream (LangChain4j drops a
 * finish reason it cannot spell, such as {@code "STOP"}).
 *
 * <pre>{@code
 * StreamingChatModel model = OpenAiStreamingChatModel.builder()
 *     .httpClientBuilder(AbortableHttpClientBuilder.create())
 *     .baseUrl(baseUrl).apiKey(key).modelName("gpt-4o-mini")
 *     .build();
 * }</pre>
 *
 * The client is LangChain4j's own {@code JdkHttpClient} over a {@link java.net.http.HttpClient}
 * that passes every call through and, only for a request sent inside a {@link LangChain4jStreams}
 * subscription, keeps the response future and the response head for that subscription. Requests
 * made outside the bridge (a model used directly) are not observed at all.
 *
 * <p>Like LangChain4j's builders this one is mutable: the model's builder sets the timeouts on it.
 */
public final class AbortableHttpClientBuilder implements HttpClientBuilder {

	private final JdkHttpClientBuilder jdk;

	private AbortableHttpClientBuilder(java.net.http.HttpClient.Builder jdkBuilder) {
		this.jdk = new JdkHttpClientBuilder().httpClientBuilder(new ObservingBuilder(jdkBuilder));
	}

	/** @return a builder over a default {@link java.net.http.HttpClient#newBuilder()}, as LangChain4j's own */
	public static AbortableHttpClientBuilder create() {
		return wrapping(java.net.http.HttpClient.newBuilder());
	}

	/**
	 * @param jdkBuilder the JDK client settings to keep (proxy, TLS, executor, HTTP version...)
	 * @return a builder whose clients are built from {@code jdkBuilder}
	 */
	public static AbortableHttpClientBuilder wrapping(java.net.http.HttpClient.Builder jdkBuilder) {
		Objects.requireNonNull(jdkBuilder, "jdkBuilder");
		return new AbortableHttpClientBuilder(jdkBuilder);
	}

	/** @return the time allowed to open a connection, or {@code null} for the JDK client's default */
	@Override
	public Duration connectTimeout() {
		return jdk.connectTimeout();
	}

	/** Sets the time allowed to open a connection (the model's builder sets it from its timeout). */
	@Override
	public AbortableHttpClientBuilder connectTimeout(Duration timeout) {
		jdk.connectTimeout(timeout);
		return this;
	}

	/** @return the time allowed for the response headers (the JDK client's request timeout), or {@code null} for none */
	@Override
	public Duration readTimeout() {
		return jdk.readTimeout();
	}

	/** Sets the time allowed for the response headers (the model's builder sets it from its timeout). */
	@Override
	public AbortableHttpClientBuilder readTimeout(Duration timeout) {
		jdk.readTimeout(timeout);
		return this;
	}

	/**
	 * @return LangChain4j's JDK client over a new, observing {@link java.net.http.HttpClient}, its
	 *         streams' events shown to the bridge ({@link EventObservingHttpClient})
	 */
	@Override
	public HttpClient build() {
		return new EventObservingHttpClient(jdk.build());
	}

	/** Passes every setting to the JDK builder it wraps and wraps the client that builder builds. */
	static final class ObservingBuilder implements java.net.http.HttpClient.Builder {

		private final java.net.http.HttpClient.Builder delegate;

		ObservingBuilder(java.net.http.HttpClient.Builder delegate) {
			this.delegate = delegate;
		}

		@Override
		public ObservingBuilder cookieHandler(CookieHandler cookieHandler) {
			delegate.cookieHandler(cookieHandler);
			return this;
		}

		@Override
		public ObservingBuilder connectTimeout(Duration duration) {
			delegate.connectTimeout(duration);
			return this;
		}

		@Override
		public ObservingBuilder sslContext(SSLContext sslContext) {
			delegate.sslContext(sslContext);
			return this;
		}

		@Override
		public ObservingBuilder sslParameters(SSLParameters sslParameters) {
			delegate.sslParameters(sslParameters);
			return this;
		}

		@Override
		public ObservingBuilder executor(Executor executor) {
			delegate.executor(executor);
			return this;
		}

		@Override
		public ObservingBuilder followRedirects(java.net.http.HttpClient.Redirect policy) {
			delegate.followRedirects(policy);
			return this;
		}

		@Override
		public ObservingBuilder version(java.net.http.HttpClient.Version version) {
			delegate.version(version);
			return this;
		}

		@Override
		public ObservingBuilder priority(int priority) {
			delegate.priority(priority);
			return this;
		}

		@Override
		public ObservingBuilder proxy(ProxySelector proxySelector) {
			delegate.proxy(proxySelector);
			return this;
		}

		@Override
		public ObservingBuilder authenticator(Authenticator authenticator) {
			delegate.authenticator(authenticator);
			return this;
		}

		@Override
		public java.net.http.HttpClient build() {
			return new ObservingJdkHttpClient(delegate.build());
		}
	}
}
