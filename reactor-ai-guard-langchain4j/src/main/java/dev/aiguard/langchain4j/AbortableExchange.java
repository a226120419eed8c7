package dev.aiguard.langchain4j;

import java.io.Closeable;
import java.io.IOException;
import java.net.http.HttpHeaders;
import java.net.http.HttpResponse;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

import com.fasterxml.jackson.databind.JsonNode;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.http.client.sse.ServerSentEvent;
import dev.langchain4j.model.chat.response.StreamingHandle;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Schedulers;
import reactor.util.context.Context;

/**
 * One attempt's HTTP exchange, as far as the bridge can reach it: the JDK client's response future
 * (before the response headers), the response and its body (after them), LangChain4j's
 * {@link StreamingHandle} (after the first event), the status and headers of the response, and
 * the last two events of the stream.
 *
 * <p>The bridge creates one per subscription and hands it to the HTTP layer through
 * {@link #CLAIMS}: LangChain4j sends a streaming request from the thread that calls
 * {@code StreamingChatModel.chat}, so the {@link ObservingJdkHttpClient} that runs inside that call
 * takes the exchange off the thread and fills it in.
 *
 * <p>{@link #abort()} and the methods that fill the exchange in may run on different threads in
 * either order: each side writes its own volatile field, then reads the other's, so at least one
 * of them sees both and ends the exchange (ending it twice does nothing more).
 */
final class AbortableExchange {

	/** The exchange of the {@code chat} call running on this thread, until the HTTP layer takes it. */
	static final ThreadLocal<AbortableExchange> CLAIMS = new ThreadLocal<>();

	private volatile boolean aborted;
	@Nullable
	private volatile CompletableFuture<? extends HttpResponse<?>> response;
	@Nullable
	private volatile StreamingHandle handle;
	@Nullable
	private volatile Head head;

	/**
	 * The data of the last two events of the stream (the last before {@code [DONE]} may be the usage
	 * chunk, the one before it the finish). Written and read on LangChain4j's reading thread only:
	 * the events, then the completion that reads them, arrive there in order.
	 */
	@Nullable
	private String lastEvent;
	@Nullable
	private String eventBefore;

	/** The status line and headers of the response, as the JDK client saw them. */
	private record Head(int status, HttpHeaders headers) {
	}

	/** @return the exchange of the {@code chat} call on this thread, taken off it; {@code null} when none */
	@Nullable
	static AbortableExchange claim() {
		AbortableExchange exchange = CLAIMS.get();
		if (exchange != null) {
			CLAIMS.remove();
		}
		return exchange;
	}

	/** The JDK client sent the request; {@code future} completes with the response headers. */
	void attach(CompletableFuture<? extends HttpResponse<?>> future) {
		response = future;
		if (aborted) {
			end(future);
		}
	}

	/** LangChain4j handed out its own way of stopping the stream (with the first event). */
	void handle(StreamingHandle streamingHandle) {
		if (handle == streamingHandle) {
			return;
		}
		handle = streamingHandle;
		if (aborted) {
			cancelQuietly(streamingHandle);
		}
	}

	/** LangChain4j's HTTP client read an event of the stream; {@code [DONE]} is not kept. */
	void event(ServerSentEvent event) {
		String data = event.data();
		if (data != null && !"[DONE]".equals(data)) {
			eventBefore = lastEvent;
			lastEvent = data;
		}
	}

	/**
	 * @return the finish reason (lower case) of the last two events of the stream, the later one
	 *         first; {@code null} when neither carries one or no events were observed
	 */
	@Nullable
	String finishReasonOfLastEvents() {
		String reason = finishReason(lastEvent);
		return reason != null ? reason : finishReason(eventBefore);
	}

	@Nullable
	private static String finishReason(@Nullable String data) {
		JsonNode root = RawEvents.object(data);
		return root == null ? null : RawEvents.finishReason(root);
	}

	/** The response headers arrived (any status). */
	void responded(int status, HttpHeaders headers) {
		head = new Head(status, headers);
	}

	/**
	 * Looks the response's headers up when the response had {@code status}: an error LangChain4j
	 * reports carries the status and the body but not the headers.
	 *
	 * @return a lookup by header name (case-insensitive), answering {@code null} when absent or unknown
	 */
	Function<String, String> headers(int status) {
		Head h = head;
		if (h == null || h.status() != status) {
			return name -> null;
		}
		HttpHeaders headers = h.headers();
		return name -> headers.firstValue(name).orElse(null);
	}

	/**
	 * Ends the exchange: the request is cancelled before the response headers, the response body is
	 * closed after them (the JDK client then closes an HTTP/1.1 connection or resets an HTTP/2
	 * stream), and LangChain4j's handle is cancelled. Closing goes through the JDK client's locks,
	 * so from a non-blocking thread it is handed to {@link Schedulers#boundedElastic()}.
	 */
	void abort() {
		aborted = true;
		if (Schedulers.isInNonBlockingThread()) {
			Schedulers.boundedElastic().schedule(this::endAll);
		}
		else {
			endAll();
		}
	}

	private void endAll() {
		CompletableFuture<? extends HttpResponse<?>> future = response;
		if (future != null) {
			end(future);
		}
		StreamingHandle h = handle;
		if (h != null) {
			cancelQuietly(h);
		}
	}

	private static void end(CompletableFuture<? extends HttpResponse<?>> future) {
		if (future.cancel(true) || future.isCompletedExceptionally()) {
			return;
		}
		HttpResponse<?> r = future.getNow(null);
		if (r != null && r.body() instanceof Closeable body) {
			try {
				body.close();
			}
			catch (IOException e) {
				// the body is being given up: a failure to close it says nothing the caller needs
				Operators.onErrorDropped(e, Context.empty());
			}
		}
	}

	private static void cancelQuietly(StreamingHandle h) {
		try {
			h.cancel();
		}
		catch (UnsupportedFeatureException e) {
			// some models' handles refuse cancellation: the bridge drops their callbacks all the same
		}
		catch (RuntimeException e) {
			Operators.onErrorDropped(e, Context.empty());
		}
	}
}
