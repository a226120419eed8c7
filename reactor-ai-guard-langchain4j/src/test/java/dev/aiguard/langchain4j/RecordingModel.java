package dev.aiguard.langchain4j;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntConsumer;

import dev.langchain4j.model.ModelProvider;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialThinking;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;

/**
 * A real model seen from the outside: every {@code chat} call (its request and when it started)
 * and every callback LangChain4j makes. A callback is recorded before the bridge's handler sees it,
 * so a test that has seen a stream end finds the callback that ended it; a call counts as
 * {@linkplain #ended(int) ended} once the handler has returned from that callback, so whatever the
 * handler did for it has happened.
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
	private final Set<Integer> ended = ConcurrentHashMap.newKeySet();

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
		delegate.chat(request, recorder(call, handler));
	}

	/**
	 * @return whether LangChain4j ended call {@code n} (1-based) with onError or onCompleteResponse and
	 *         the bridge's handler has returned from it
	 */
	boolean ended(int n) {
		return ended.contains(n);
	}

	/**
	 * The handler LangChain4j is given for call {@code call}: each of its callbacks is recorded, then
	 * goes to {@code handler}. A proxy rather than an override of each callback, so that every
	 * callback of the interface is recorded, overloads and all, under its own name.
	 */
	private StreamingChatResponseHandler recorder(int call, StreamingChatResponseHandler handler) {
		return (StreamingChatResponseHandler) Proxy.newProxyInstance(StreamingChatResponseHandler.class.getClassLoader(),
				new Class<?>[] { StreamingChatResponseHandler.class }, (proxy, method, args) -> {
					if (method.getDeclaringClass() == Object.class) {
						return switch (method.getName()) {
							case "equals" -> proxy == args[0];
							case "hashCode" -> System.identityHashCode(proxy);
							default -> "recording " + handler;
						};
					}
					callbacks.add(new Callback(call, method.getName(), argument(args[0]), System.nanoTime()));
					try {
						method.invoke(handler, args);
					}
					catch (InvocationTargetException e) {
						throw e.getCause();
					}
					if (method.getName().equals("onError") || method.getName().equals("onCompleteResponse")) {
						ended.add(call);
					}
					return null;
				});
	}

	/** @return what a callback is recorded with: the text of a partial response or thinking, else its argument */
	private static Object argument(Object argument) {
		if (argument instanceof PartialResponse partial) {
			return partial.text();
		}
		if (argument instanceof PartialThinking thinking) {
			return thinking.text();
		}
		return argument;
	}
}
