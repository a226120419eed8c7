package dev.aiguard.langchain4j;

import java.io.IOException;
import java.net.Authenticator;
import java.net.CookieHandler;
import java.net.ProxySelector;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * A JDK {@link HttpClient} that does what the one it wraps does, and for a request sent inside the
 * bridge's {@code chat} call also fills in the bridge's {@link AbortableExchange}: the response
 * future (so the request can be cancelled before its headers arrive) and the response's status
 * and headers (which LangChain4j drops from its errors, {@code Retry-After} included).
 */
final class ObservingJdkHttpClient extends HttpClient {

	private final HttpClient delegate;

	ObservingJdkHttpClient(HttpClient delegate) {
		this.delegate = Objects.requireNonNull(delegate, "delegate");
	}

	@Override
	public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request,
			HttpResponse.BodyHandler<T> responseBodyHandler) {
		AbortableExchange exchange = AbortableExchange.claim();
		if (exchange == null) {
			return delegate.sendAsync(request, responseBodyHandler);
		}
		CompletableFuture<HttpResponse<T>> future = delegate.sendAsync(request, observe(exchange, responseBodyHandler));
		exchange.attach(future);
		return future;
	}

	@Override
	public <T> CompletableFuture<HttpResponse<T>> sendAsync(HttpRequest request,
			HttpResponse.BodyHandler<T> responseBodyHandler, HttpResponse.PushPromiseHandler<T> pushPromiseHandler) {
		AbortableExchange exchange = AbortableExchange.claim();
		if (exchange == null) {
			return delegate.sendAsync(request, responseBodyHandler, pushPromiseHandler);
		}
		CompletableFuture<HttpResponse<T>> future = delegate.sendAsync(request, observe(exchange, responseBodyHandler),
				pushPromiseHandler);
		exchange.attach(future);
		return future;
	}

	private static <T> HttpResponse.BodyHandler<T> observe(AbortableExchange exchange, HttpResponse.BodyHandler<T> handler) {
		return info -> {
			exchange.responded(info.statusCode(), info.headers());
			return handler.apply(info);
		};
	}

	@Override
	public <T> HttpResponse<T> send(HttpRequest request, HttpResponse.BodyHandler<T> responseBodyHandler)
			throws IOException, InterruptedException {
		return delegate.send(request, responseBodyHandler);
	}

	@Override
	public Optional<CookieHandler> cookieHandler() {
		return delegate.cookieHandler();
	}

	@Override
	public Optional<Duration> connectTimeout() {
		return delegate.connectTimeout();
	}

	@Override
	public Redirect followRedirects() {
		return delegate.followRedirects();
	}

	@Override
	public Optional<ProxySelector> proxy() {
		return delegate.proxy();
	}

	@Override
	public SSLContext sslContext() {
		return delegate.sslContext();
	}

	@Override
	public SSLParameters sslParameters() {
		return delegate.sslParameters();
	}

	@Override
	public Optional<Authenticator> authenticator() {
		return delegate.authenticator();
	}

	@Override
	public Version version() {
		return delegate.version();
	}

	@Override
	public Optional<Executor> executor() {
		return delegate.executor();
	}

	@Override
	public WebSocket.Builder newWebSocketBuilder() {
		return delegate.newWebSocketBuilder();
	}

	@Override
	public String toString() {
		return "ObservingJdkHttpClient[" + delegate + "]";
	}
}
