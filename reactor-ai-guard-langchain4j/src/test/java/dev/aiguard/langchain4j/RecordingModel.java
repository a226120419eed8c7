package dev.aiguard.langchain4j;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntConsumer;

import dev.langchain4j.model.ModelProvider;
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

/**
 * A real model seen from the outside: every {@code chat} call (its request and when it started)
 * and every callback LangChain4j makes, recorded after the bridge's handler has returned from it.
 */
final class RecordingModel implements StreamingChatModel {

	/** One callback LangChain4j made. */
	record Callback(int call, String name, Object argument, long nanos) {
	}

	/** One {@code chat} call. */
	record Call(ChatRequest request, long nanos) {
	}

	private final StreamingChatModel delegate;
	private final IntConsumer beforeCall;
	final List<Call> calls = new CopyOnWriteArrayList<>();
	final List<Callback> callbacks = new CopyOnWriteArrayList<>();

	RecordingModel(StreamingChatModel delegate) {
		this(delegate, n -> {
		});
	}

	/** @param beforeCall runs before call {@code n} (1-based) reaches the real model */
	RecordingModel(StreamingChatModel delegate, IntConsumer beforeCall) {
		this.delegate = delegate;
		this.beforeCall = beforeCall;
	}

	@Override
	public ModelProvider provider() {
		return delegate.provider();
	}

	@Override
	public void chat(ChatRequest request, StreamingChatResponseHandler handler) {
		calls.add(new Call(request, System.nanoTime()));
		int call = calls.size();
		beforeCall.accept(call);
		delegate.chat(request, new Recorder(call, handler));
	}

	/** @return whether LangChain4j ended call {@code n} (1-based) with onError or onCompleteResponse */
	boolean ended(int n) {
		return callbacks.stream()
			.anyMatch(c -> c.call() == n && (c.name().equals("onError") || c.name().equals("onCompleteResponse")));
	}

	private final class Recorder implements StreamingChatResponseHandler {

		private final int call;
		private final StreamingChatResponseHandler handler;

		Recorder(int call, StreamingChatResponseHandler handler) {
			this.call = call;
			this.handler = handler;
		}

		private void record(String name, Object argument) {
			callbacks.add(new Callback(call, name, argument, System.nanoTime()));
		}

		@Override
		public void onPartialResponse(String partialResponse) {
			handler.onPartialResponse(partialResponse);
			record("onPartialResponse", partialResponse);
		}

		@Override
		public void onPartialResponse(PartialResponse partialResponse, PartialResponseContext context) {
			handler.onPartialResponse(partialResponse, context);
			record("onPartialResponse", partialResponse.text());
		}

		@Override
		public void onPartialThinking(PartialThinking partialThinking) {
			handler.onPartialThinking(partialThinking);
			record("onPartialThinking", partialThinking.text());
		}

		@Override
		public void onPartialThinking(PartialThinking partialThinking, PartialThinkingContext context) {
			handler.onPartialThinking(partialThinking, context);
			record("onPartialThinking", partialThinking.text());
		}

		@Override
		public void onPartialToolCall(PartialToolCall partialToolCall) {
			handler.onPartialToolCall(partialToolCall);
			record("onPartialToolCall", partialToolCall);
		}

		@Override
		public void onPartialToolCall(PartialToolCall partialToolCall, PartialToolCallContext context) {
			handler.onPartialToolCall(partialToolCall, context);
			record("onPartialToolCall", partialToolCall);
		}

		@Override
		public void onCompleteToolCall(CompleteToolCall completeToolCall) {
			handler.onCompleteToolCall(completeToolCall);
			record("onCompleteToolCall", completeToolCall);
		}

		@Override
		public void onCompleteResponse(ChatResponse completeResponse) {
			handler.onCompleteResponse(completeResponse);
			record("onCompleteResponse", completeResponse);
		}

		@Override
		public void onError(Throwable error) {
			handler.onError(error);
			record("onError", error);
		}
	}
}
