package dev.aiguard.langchain4j;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import dev.langchain4j.model.ModelProvider;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;

/** A model that plays a script of callbacks on the handler it is given, on the calling thread. */
final class ScriptedModel implements StreamingChatModel {

	private final ModelProvider provider;
	private final Consumer<StreamingChatResponseHandler> script;
	/** The thread each {@code chat} call ran on. */
	final List<String> threads = new CopyOnWriteArrayList<>();

	ScriptedModel(Consumer<StreamingChatResponseHandler> script) {
		this(ModelProvider.OPEN_AI, script);
	}

	ScriptedModel(ModelProvider provider, Consumer<StreamingChatResponseHandler> script) {
		this.provider = provider;
		this.script = script;
	}

	@Override
	public ModelProvider provider() {
		return provider;
	}

	@Override
	public void chat(ChatRequest request, StreamingChatResponseHandler handler) {
		threads.add(Thread.currentThread().getName());
		script.accept(handler);
	}
}
