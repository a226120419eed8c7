package dev.aiguard.langchain4j;

import dev.langchain4j.http.client.HttpClient;
import dev.langchain4j.http.client.HttpRequest;
import dev.langchain4j.http.client.SuccessfulHttpResponse;
import dev.langchain4j.http.client.sse.ServerSentEvent;
import dev.langchain4j.http.client.sse.ServerSentEventContext;
import dev.langchain4j.http.client.sse.ServerSentEventListener;
import dev.langchain4j.http.client.sse.ServerSentEventParser;

/**
 * LangChain4j's HTTP client, with the server-sent events of a streaming request made inside the
 * bridge's {@code chat} call shown to that call's {@link AbortableExchange} before LangChain4j's
 * model reads them. The exchange keeps the last two (a reference each, nothing parsed), so that at
 * the end of the stream the bridge can read a finish reason the model dropped because it came with
 * the last token in a spelling LangChain4j does not know ({@code "STOP"}). Requests made outside
 * the bridge, and non-streaming requests, pass through untouched.
 */
final class EventObservingHttpClient implements HttpClient {

	private final HttpClient delegate;

	EventObservingHttpClient(HttpClient delegate) {
		this.delegate = delegate;
	}

	@Override
	public SuccessfulHttpResponse execute(HttpRequest request) {
		return delegate.execute(request);
	}

	@Override
	public void execute(HttpRequest request, ServerSentEventParser parser, ServerSentEventListener listener) {
		// peeked, not taken: the JDK client below takes the exchange when it sends the request
		AbortableExchange exchange = AbortableExchange.CLAIMS.get();
		delegate.execute(request, parser, exchange == null ? listener : new Observing(listener, exchange));
	}

	/** Passes every callback on, noting each event in the exchange first. */
	private static final class Observing implements ServerSentEventListener {

		private final ServerSentEventListener delegate;
		private final AbortableExchange exchange;

		Observing(ServerSentEventListener delegate, AbortableExchange exchange) {
			this.delegate = delegate;
			this.exchange = exchange;
		}

		@Override
		public void onOpen(SuccessfulHttpResponse response) {
			delegate.onOpen(response);
		}

		@Override
		public void onEvent(ServerSentEvent event, ServerSentEventContext context) {
			exchange.event(event);
			delegate.onEvent(event, context);
		}

		@Override
		public void onEvent(ServerSentEvent event) {
			exchange.event(event);
			delegate.onEvent(event);
		}

		@Override
		public void onError(Throwable error) {
			delegate.onError(error);
		}

		@Override
		public void onClose() {
			delegate.onClose();
		}
	}
}
