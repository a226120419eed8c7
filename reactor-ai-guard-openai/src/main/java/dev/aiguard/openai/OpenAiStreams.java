package dev.aiguard.openai;

import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

import com.openai.client.OpenAIClientAsync;
import com.openai.core.http.AsyncStreamResponse;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Secrets;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Streams of the official OpenAI Java SDK's async client as Reactor {@link Flux}es the guard can
 * watch, retry and truncate.
 *
 * <pre>{@code
 * OpenAIClientAsync client = OpenAIOkHttpClientAsync.builder().fromEnv()
 *     .maxRetries(0)                                  // the guard retries; the SDK must not as well
 *     .build();
 * ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
 *     .model(ChatModel.GPT_4O_MINI).addUserMessage("Hello").build();
 *
 * Flux<ChatChunk> answer = guard.call(OpenAiRequests.toChatRequest(params), OpenAiStreams.of(client, params));
 * }</pre>
 *
 * <ul>
 * <li>{@link #of(OpenAIClientAsync, ChatCompletionCreateParams)} / {@link #calls}: the call form's
 * function. Each call turns the guard's {@link ChatRequest} (the original, or a truncated copy)
 * into params with {@link OpenAiRequests#toParams} and starts one SDK stream per subscription.</li>
 * <li>{@link #stream}: the library's {@link ChatChunk}s of one params, for
 * {@code flux.transform(guard)}.</li>
 * <li>{@link #rawStream}: the SDK's own {@link ChatCompletionChunk}s, for a guard built with
 * {@link OpenAiChunks#INSPECTOR}.</li>
 * </ul>
 *
 * <p><b>Subscription.</b> Every subscription calls {@code createStreaming} again: a retry is a new
 * HTTP request. Errors reach the subscriber as the library's typed exceptions
 * ({@link OpenAiSdkErrors#map}).
 *
 * <p><b>Backpressure.</b> The SDK pushes chunks from its stream-reading thread. Up to
 * {@link #bufferSize(int)} chunks (default {@value #DEFAULT_BUFFER_SIZE}) wait for demand; beyond
 * that the SDK's thread waits, so a slow subscriber slows the reading of the socket. (Only when the
 * SDK is configured to run its handler on a Reactor non-blocking thread does a full buffer fail
 * the stream with an overflow error instead.)
 *
 * <p><b>Cancellation.</b> Cancelling closes the SDK stream, which closes the HTTP response. The
 * close runs on {@link #closeOn(Scheduler)}, never on the cancelling thread, so a subscriber
 * cancelling from an event loop, or the guard cancelling a stalled stream, never blocks. The
 * default is a scheduler of this module's own ({@code aiguard-openai-close} threads, daemon, up to
 * {@value #CLOSE_THREADS}), not {@link Schedulers#boundedElastic()}: in openai-java 4.49 closing a
 * stream whose read is blocked on a silent socket waits until that read returns, which can take
 * as long as the SDK's read timeout, and such waits must not take the shared pool's threads. Set
 * the SDK's read timeout ({@code Timeout.builder().read(..)}) a little above the guard's longest
 * stall deadline so a stalled connection is released soon after the guard gives up on it. The
 * next chunk the SDK delivers after a cancel ends its read loop too.
 *
 * <p>Instances are immutable; the setters return copies.
 */
public final class OpenAiStreams {

	/** Chunks buffered for a subscriber without demand before the SDK's thread waits. */
	public static final int DEFAULT_BUFFER_SIZE = 256;

	/** The most threads of the default close scheduler; closes beyond that wait their turn. */
	public static final int CLOSE_THREADS = 256;

	private final OpenAIClientAsync client;
	private final int bufferSize;
	@Nullable
	private final Scheduler closeOn;
	private final String[] secrets;

	private OpenAiStreams(OpenAIClientAsync client, int bufferSize, @Nullable Scheduler closeOn, String[] secrets) {
		this.client = client;
		this.bufferSize = bufferSize;
		this.closeOn = closeOn;
		this.secrets = secrets;
	}

	/**
	 * @param client the SDK's async client; build it with {@code maxRetries(0)} when a guard retries
	 * @return streams of that client with the default buffer and close scheduler
	 */
	public static OpenAiStreams create(OpenAIClientAsync client) {
		return new OpenAiStreams(Objects.requireNonNull(client, "client"), DEFAULT_BUFFER_SIZE, null, new String[0]);
	}

	/**
	 * The call form's function in one line: {@code guard.call(request, OpenAiStreams.of(client, template))}.
	 *
	 * @param client the SDK's async client
	 * @param template model, tools and options of every call; its messages are replaced by the request's
	 * @return a function that streams a {@link ChatRequest} with the template's settings
	 */
	public static Function<ChatRequest, Flux<ChatChunk>> of(OpenAIClientAsync client,
			ChatCompletionCreateParams template) {
		return create(client).calls(template);
	}

	/**
	 * @param chunks how many chunks wait for demand before the SDK's stream thread waits (at least 1)
	 * @return a copy with that buffer
	 * @throws IllegalArgumentException naming the value when it is below 1
	 */
	public OpenAiStreams bufferSize(int chunks) {
		if (chunks < 1) {
			throw new IllegalArgumentException("bufferSize must be at least 1, was " + chunks);
		}
		return new OpenAiStreams(client, chunks, closeOn, secrets);
	}

	/**
	 * @param scheduler where a cancelled SDK stream is closed (it may wait there, see the class
	 *        documentation); {@link Schedulers#immediate()} closes it on the cancelling thread, which
	 *        then may wait
	 * @return a copy closing on that scheduler
	 */
	public OpenAiStreams closeOn(Scheduler scheduler) {
		return new OpenAiStreams(client, bufferSize, Objects.requireNonNull(scheduler, "closeOn"), secrets);
	}

	/**
	 * Secrets no error of these streams ever shows: the API key the client was built with, the
	 * password of its base URL or proxy. The SDK does not tell them, so pass them here. Provider
	 * texts (error bodies, in-band error events, transport messages) have each of them, and anything
	 * shaped like a key ({@code sk-...}, {@code Bearer ...}, {@code api_key=...}, a URL's user-info),
	 * replaced by {@value Secrets#REDACTED} before they become an exception message; the shaped ones
	 * are replaced also when no secret is given.
	 *
	 * <pre>{@code
	 * Function<ChatRequest, Flux<ChatChunk>> calls = OpenAiStreams.create(client).secrets(apiKey).calls(params);
	 * }</pre>
	 *
	 * @return a copy that scrubs {@code secrets} from its errors
	 * @throws IllegalArgumentException when a secret is null
	 */
	public OpenAiStreams secrets(String... secrets) {
		return new OpenAiStreams(client, bufferSize, closeOn, Secrets.checked(secrets));
	}

	/** @return the buffer size */
	public int bufferSize() {
		return bufferSize;
	}

	/**
	 * @param template model, tools and options of every call; its messages are replaced by the request's
	 * @return the call form's function: each application maps the request with
	 *         {@link OpenAiRequests#toParams} and returns {@link #stream(ChatCompletionCreateParams)}
	 */
	public Function<ChatRequest, Flux<ChatChunk>> calls(ChatCompletionCreateParams template) {
		Objects.requireNonNull(template, "template");
		return request -> stream(OpenAiRequests.toParams(template, request));
	}

	/** @return the answer to {@code params} as the library's chunks; one SDK stream per subscription */
	public Flux<ChatChunk> stream(ChatCompletionCreateParams params) {
		Objects.requireNonNull(params, "params");
		return toChatChunks(rawStream(params), this::mapError);
	}

	/**
	 * @param start starts one SDK stream, e.g. {@code () -> client.chat().completions().createStreaming(params, options)};
	 *        called once per subscription
	 * @return that stream as the library's chunks
	 */
	public Flux<ChatChunk> stream(Supplier<? extends AsyncStreamResponse<ChatCompletionChunk>> start) {
		return toChatChunks(rawStream(start), this::mapError);
	}

	/** @return the answer to {@code params} as the SDK's chunks; one SDK stream per subscription */
	public Flux<ChatCompletionChunk> rawStream(ChatCompletionCreateParams params) {
		Objects.requireNonNull(params, "params");
		return rawStream(() -> client.chat().completions().createStreaming(params));
	}

	/**
	 * @param start starts one SDK stream; called once per subscription
	 * @return that stream's chunks, errors mapped by {@link OpenAiSdkErrors#map(Throwable, String...)}
	 *         with these streams' {@link #secrets}
	 */
	public Flux<ChatCompletionChunk> rawStream(Supplier<? extends AsyncStreamResponse<ChatCompletionChunk>> start) {
		Objects.requireNonNull(start, "start");
		Scheduler scheduler = closeOn;
		return new FluxAsyncStream<>(start, bufferSize, scheduler != null ? scheduler : Closer.SCHEDULER, this::mapError);
	}

	private Throwable mapError(Throwable error) {
		return OpenAiSdkErrors.map(error, secrets);
	}

	/**
	 * The default close scheduler: daemon threads that may wait on the SDK, apart from the shared
	 * pools. Created when first used.
	 */
	private static final class Closer {
		static final Scheduler SCHEDULER = Schedulers.newBoundedElastic(CLOSE_THREADS, Integer.MAX_VALUE,
				"aiguard-openai-close", 60, true);
	}

	/**
	 * The SDK's chunks as the library's: {@link OpenAiChunks#toChatChunk} for each, chunks that carry
	 * nothing dropped, and {@link ChatChunk#done()} after a stream that carried a finish reason ended
	 * normally (the SDK consumes {@code [DONE]} itself; a stream cut before its finish reason ends
	 * without one, so the guard sees it incomplete).
	 */
	public static Flux<ChatChunk> toChatChunks(Flux<ChatCompletionChunk> chunks) {
		return toChatChunks(chunks, OpenAiSdkErrors::map);
	}

	private static Flux<ChatChunk> toChatChunks(Flux<ChatCompletionChunk> chunks, UnaryOperator<Throwable> errors) {
		Objects.requireNonNull(chunks, "chunks");
		return Flux.defer(() -> {
			FinishSeen finish = new FinishSeen();
			return chunks.<ChatChunk>handle((chunk, sink) -> {
				ChatChunk c = OpenAiChunks.toChatChunk(chunk);
				if (c != null) {
					if (c.finishReason() != null) {
						finish.seen = true;
					}
					sink.next(c);
				}
			})
				.concatWith(Mono.fromSupplier(() -> finish.seen ? ChatChunk.done() : null))
				.onErrorMap(errors);
		});
	}

	/** Per subscription: whether a finish reason went by. Written and read in signal order. */
	private static final class FinishSeen {
		boolean seen;
	}
}
