package dev.aiguard.langchain4j;

import java.util.BitSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

import com.fasterxml.jackson.databind.JsonNode;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.chat.Usage;
import dev.aiguard.provider.ProviderException;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.http.client.sse.ServerSentEvent;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.PartialThinking;
import dev.langchain4j.model.chat.response.PartialThinkingContext;
import dev.langchain4j.model.chat.response.PartialToolCall;
import dev.langchain4j.model.chat.response.PartialToolCallContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.chat.response.StreamingHandle;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;
import org.jspecify.annotations.Nullable;
import reactor.core.Exceptions;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Operators;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * One subscription's LangChain4j call: the model's callbacks become chunks in a {@link FluxSink}.
 *
 * <ul>
 * <li>A partial response is a token; partial thinking a keep-alive (a sign of life, not content);
 * a partial tool call a {@link ToolCallDelta} (id and name on the first delta of each call only);
 * a complete tool call whose pieces never streamed one delta with all its arguments.</li>
 * <li>{@code onCompleteResponse} with a finish reason: a chunk with the finish reason (lower-case
 * wire name) and the usage, then {@link ChatChunk#done()}, then completion. Without one (LangChain4j
 * completes a stream cut short too): the usage, if any, then completion without a terminal, which
 * the guard reports as INCOMPLETE.</li>
 * <li>{@code onError}: the error translated by {@link LangChain4jErrors}.</li>
 * <li>{@code onUnmappedRawEvent} with an error object ({@code data: {"error":{...}}}, which
 * LangChain4j's OpenAI model parses as an empty chunk): the typed in-band error, as the library's
 * own codec gives it; with a finish reason: kept for the completion, which LangChain4j gives no
 * finish reason when the server spelled it in a case LangChain4j does not know ({@code STOP}).
 * A finish reason in the same event as the last token is mapped with the token and never reaches
 * {@code onUnmappedRawEvent}: the {@link AbortableExchange} has the stream's last events for it
 * (with {@link AbortableHttpClientBuilder}).</li>
 * </ul>
 * LangChain4j calls the handler from its HTTP client's threads; the sink serializes what reaches the
 * subscriber. The first terminal callback wins; LangChain4j may follow an error with a completion
 * (it closes every stream that way), which is ignored, and nothing after a cancellation reaches the
 * subscriber.
 */
final class StreamBridge implements StreamingChatResponseHandler {

	private static final int OPEN = 0;
	private static final int ENDED = 1;
	private static final int CANCELLED = 2;

	private final FluxSink<ChatChunk> sink;
	private final StreamingChatModel model;
	private final ChatRequest request;
	private final LangChain4jErrors errors;
	private final AbortableExchange exchange = new AbortableExchange();

	private volatile int state;
	private static final AtomicIntegerFieldUpdater<StreamBridge> STATE =
			AtomicIntegerFieldUpdater.newUpdater(StreamBridge.class, "state");

	/** Tool calls that streamed at least one delta; LangChain4j calls a handler from one thread at a time. */
	private final BitSet streamedCalls = new BitSet();

	/** The finish reason of an unmapped event, in lower case; read at completion, on the same thread. */
	@Nullable
	private String rawFinishReason;

	private StreamBridge(FluxSink<ChatChunk> sink, StreamingChatModel model, ChatRequest request,
			LangChain4jErrors errors) {
		this.sink = sink;
		this.model = model;
		this.request = request;
		this.errors = errors;
	}

	/**
	 * Wires a new subscription: the call starts on {@code scheduler}, a cancel ends the exchange. A
	 * cancel does not dispose the scheduled call: interrupting {@code model.chat} half-way would
	 * leave LangChain4j's request in an unknown state, and a call that has not started finds the
	 * bridge cancelled and returns at once.
	 */
	static void start(FluxSink<ChatChunk> sink, StreamingChatModel model, ChatRequest request,
			LangChain4jErrors errors, Scheduler scheduler) {
		StreamBridge bridge = new StreamBridge(sink, model, request, errors);
		sink.onCancel(() -> {
			if (STATE.compareAndSet(bridge, OPEN, CANCELLED)) {
				bridge.exchange.abort();
			}
		});
		try {
			scheduler.schedule(bridge::send);
		}
		catch (RuntimeException rejected) {
			bridge.onError(Operators.onRejectedExecution(rejected, Context.of(sink.contextView())));
		}
	}

	/** Calls the model, with the exchange on this thread for the HTTP layer to take. */
	private void send() {
		if (state != OPEN) {
			return;
		}
		AbortableExchange.CLAIMS.set(exchange);
		try {
			model.chat(request, this);
		}
		catch (Throwable e) {
			// a model that throws instead of calling onError
			Exceptions.throwIfJvmFatal(e);
			onError(e);
		}
		finally {
			AbortableExchange.CLAIMS.remove();
		}
	}

	@Override
	public void onPartialResponse(String partialResponse) {
		if (state == OPEN && partialResponse != null && !partialResponse.isEmpty()) {
			sink.next(ChatChunk.token(partialResponse));
		}
	}

	@Override
	public void onPartialResponse(PartialResponse partialResponse, PartialResponseContext context) {
		keep(context == null ? null : context.streamingHandle());
		onPartialResponse(partialResponse.text());
	}

	@Override
	public void onPartialThinking(PartialThinking partialThinking) {
		if (state == OPEN) {
			sink.next(ChatChunk.keepAlive());
		}
	}

	@Override
	public void onPartialThinking(PartialThinking partialThinking, PartialThinkingContext context) {
		keep(context == null ? null : context.streamingHandle());
		onPartialThinking(partialThinking);
	}

	@Override
	public void onPartialToolCall(PartialToolCall call) {
		if (state != OPEN) {
			return;
		}
		int index = call.index();
		boolean first = !streamedCalls.get(index);
		streamedCalls.set(index);
		String arguments = call.partialArguments() == null ? "" : call.partialArguments();
		ToolCallDelta delta = new ToolCallDelta(index, first ? call.id() : null, first ? call.name() : null, arguments);
		sink.next(new ChatChunk("", null, null, null, List.of(delta), false, false));
	}

	@Override
	public void onPartialToolCall(PartialToolCall call, PartialToolCallContext context) {
		keep(context == null ? null : context.streamingHandle());
		onPartialToolCall(call);
	}

	@Override
	public void onCompleteToolCall(CompleteToolCall call) {
		if (state != OPEN || streamedCalls.get(call.index())) {
			return;
		}
		// a model that does not stream tool calls: the whole call as one delta
		ToolExecutionRequest r = call.toolExecutionRequest();
		streamedCalls.set(call.index());
		ToolCallDelta delta = new ToolCallDelta(call.index(), r.id(), r.name(), r.arguments() == null ? "" : r.arguments());
		sink.next(new ChatChunk("", null, null, null, List.of(delta), false, false));
	}

	@Override
	public void onCompleteResponse(ChatResponse response) {
		if (!STATE.compareAndSet(this, OPEN, ENDED)) {
			return;
		}
		Usage usage = usage(response == null ? null : response.tokenUsage());
		FinishReason reason = response == null ? null : response.finishReason();
		String finishReason = wireName(reason);
		if (reason == null || reason == FinishReason.OTHER) {
			// LangChain4j knows only some spellings: what it could not read, the raw event still says
			String raw = rawFinishReason != null ? rawFinishReason : exchange.finishReasonOfLastEvents();
			if (raw != null) {
				finishReason = raw;
			}
		}
		if (finishReason != null) {
			sink.next(new ChatChunk("", null, finishReason, usage, List.of(), false, false));
			sink.next(ChatChunk.done());
		}
		else if (usage != null) {
			sink.next(ChatChunk.usage(usage));
		}
		sink.complete();
	}

	@Override
	public void onError(Throwable error) {
		int s = state;
		if (s == OPEN && STATE.compareAndSet(this, OPEN, ENDED)) {
			sink.error(errors.translate(error, exchange));
		}
		else if (s == ENDED) {
			// an error after LangChain4j completed the stream has no one left to tell; the hook logs
			// it, so it goes there typed and scrubbed like an error the subscriber would have seen
			Operators.onErrorDropped(errors.translate(error, exchange), Context.of(sink.contextView()));
		}
		// after a cancel: the error is the end of the exchange the bridge aborted
	}

	/**
	 * An event LangChain4j did not map to a callback (the role chunk, the finish chunk, the usage
	 * chunk, an error object): an error ends the stream with its typed exception, a finish reason is
	 * kept for the completion.
	 */
	@Override
	public void onUnmappedRawEvent(Object rawEvent) {
		if (state != OPEN || !(rawEvent instanceof ServerSentEvent event)) {
			return;
		}
		JsonNode root = RawEvents.object(event.data());
		if (root == null) {
			return;
		}
		ProviderException inBand = errors.inBand(root);
		if (inBand != null) {
			if (STATE.compareAndSet(this, OPEN, ENDED)) {
				sink.error(inBand);
			}
			return;
		}
		String reason = RawEvents.finishReason(root);
		if (reason != null) {
			rawFinishReason = reason;
		}
	}

	/** Keeps LangChain4j's handle for a cancel (what ends the stream when there is no HTTP exchange to end). */
	private void keep(@Nullable StreamingHandle handle) {
		if (handle != null) {
			exchange.handle(handle);
		}
	}

	/**
	 * @return LangChain4j's finish reason as the OpenAI wire name the library's chunks carry:
	 *         {@code stop}, {@code length}, {@code tool_calls}, {@code content_filter}, {@code other};
	 *         {@code null} for none
	 */
	@Nullable
	static String wireName(@Nullable FinishReason reason) {
		if (reason == null) {
			return null;
		}
		switch (reason) {
			case STOP:
				return "stop";
			case LENGTH:
				return "length";
			case TOOL_EXECUTION:
				return "tool_calls";
			case CONTENT_FILTER:
				return "content_filter";
			default:
				return "other";
		}
	}

	@Nullable
	static Usage usage(@Nullable TokenUsage usage) {
		if (usage == null || (usage.inputTokenCount() == null && usage.outputTokenCount() == null)) {
			return null;
		}
		return new Usage(count(usage.inputTokenCount()), count(usage.outputTokenCount()));
	}

	private static int count(@Nullable Integer n) {
		return n == null ? -1 : n;
	}
}
