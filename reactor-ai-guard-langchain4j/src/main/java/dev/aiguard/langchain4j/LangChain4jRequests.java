package dev.aiguard.langchain4j;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.Content;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequestParameters;

/**
 * The library's {@link ChatRequest} and LangChain4j's, one into the other.
 *
 * <p>Library to LangChain4j: roles map one to one; the model name, {@code maxTokens} (as
 * {@code maxOutputTokens}) and the temperature become request parameters, everything else is the
 * model's default.
 *
 * <p>LangChain4j to library ({@link #fromLangChain4j}): the texts of the messages, tool calls and
 * tool results. What the library cannot hold (images, audio, attributes, tool specifications,
 * response format...) stays in the original request: {@link Conversion#toLangChain4j} sends the
 * original request when the guard did not change it, the original message for every message the
 * guard kept as it was, and the original parameters with the guard's changes on top.
 */
final class LangChain4jRequests {

	private LangChain4jRequests() {
	}

	/** @return LangChain4j's request for the library's */
	static dev.langchain4j.model.chat.request.ChatRequest toLangChain4j(ChatRequest request) {
		List<dev.langchain4j.data.message.ChatMessage> messages = new ArrayList<>(request.messages().size());
		for (ChatMessage m : request.messages()) {
			messages.add(toLangChain4j(m, request.messages()));
		}
		dev.langchain4j.model.chat.request.ChatRequest.Builder builder = dev.langchain4j.model.chat.request.ChatRequest
			.builder()
			.messages(messages);
		if (request.model() != null) {
			builder.modelName(request.model());
		}
		if (request.maxTokens() != null) {
			builder.maxOutputTokens(request.maxTokens());
		}
		if (request.temperature() != null) {
			builder.temperature(request.temperature());
		}
		return builder.build();
	}

	private static dev.langchain4j.data.message.ChatMessage toLangChain4j(ChatMessage m, List<ChatMessage> conversation) {
		switch (m.role()) {
			case SYSTEM:
				return SystemMessage.from(m.content());
			case USER:
				return UserMessage.from(m.content());
			case ASSISTANT:
				if (m.toolCalls().isEmpty()) {
					return AiMessage.from(m.content());
				}
				List<ToolExecutionRequest> calls = new ArrayList<>(m.toolCalls().size());
				for (ToolCall call : m.toolCalls()) {
					calls.add(ToolExecutionRequest.builder().id(call.id()).name(call.name()).arguments(call.arguments())
						.build());
				}
				return AiMessage.from(m.content().isEmpty() ? null : m.content(), calls);
			case TOOL:
				return ToolExecutionResultMessage.from(m.toolCallId(), toolName(m.toolCallId(), conversation), m.content());
			default:
				throw new IllegalArgumentException("unknown role " + m.role());
		}
	}

	/** LangChain4j names the tool in a tool result; the library keeps only the call's id, so find the call. */
	private static String toolName(String callId, List<ChatMessage> conversation) {
		for (ChatMessage m : conversation) {
			for (ToolCall call : m.toolCalls()) {
				if (call.id().equals(callId)) {
					return call.name();
				}
			}
		}
		return null;
	}

	/**
	 * @return the library's view of {@code request}, remembering the original of each message
	 * @throws IllegalArgumentException naming the message when the library has no role for it
	 *         (LangChain4j's custom messages)
	 */
	static Conversion fromLangChain4j(dev.langchain4j.model.chat.request.ChatRequest request) {
		Objects.requireNonNull(request, "request");
		List<dev.langchain4j.data.message.ChatMessage> originals = request.messages();
		List<ChatMessage> messages = new ArrayList<>(originals.size());
		Map<ChatMessage, dev.langchain4j.data.message.ChatMessage> byMessage = new IdentityHashMap<>();
		for (int i = 0; i < originals.size(); i++) {
			ChatMessage m = fromLangChain4j(originals.get(i), i);
			messages.add(m);
			byMessage.put(m, originals.get(i));
		}
		ChatRequest converted = new ChatRequest(request.modelName(), messages, request.maxOutputTokens(),
				request.temperature());
		return new Conversion(request, converted, byMessage);
	}

	private static ChatMessage fromLangChain4j(dev.langchain4j.data.message.ChatMessage m, int index) {
		if (m instanceof SystemMessage system) {
			return ChatMessage.system(system.text());
		}
		if (m instanceof UserMessage user) {
			return ChatMessage.user(user.hasSingleText() ? user.singleText() : texts(user.contents()));
		}
		if (m instanceof AiMessage ai) {
			if (!ai.hasToolExecutionRequests()) {
				return ChatMessage.assistant(ai.text());
			}
			List<ToolCall> calls = new ArrayList<>(ai.toolExecutionRequests().size());
			for (ToolExecutionRequest r : ai.toolExecutionRequests()) {
				calls.add(new ToolCall(orEmpty(r.id()), orEmpty(r.name()), r.arguments()));
			}
			return new ChatMessage(ChatMessage.Role.ASSISTANT, ai.text(), calls, null);
		}
		if (m instanceof ToolExecutionResultMessage result) {
			return ChatMessage.tool(orEmpty(result.id()), result.text());
		}
		throw new IllegalArgumentException("messages[" + index + "] is a " + m.type()
				+ " message, which the guard's call form cannot hold: guard stream(request) with transform instead");
	}

	private static String texts(List<Content> contents) {
		StringBuilder sb = new StringBuilder();
		for (Content c : contents) {
			if (c instanceof TextContent text) {
				if (sb.length() > 0) {
					sb.append('\n');
				}
				sb.append(text.text());
			}
		}
		return sb.toString();
	}

	private static String orEmpty(String s) {
		return s == null ? "" : s;
	}

	/**
	 * A LangChain4j request and the library's view of it.
	 *
	 * @param original the request as the caller wrote it
	 * @param request the library's view, which the guard may shrink or extend
	 * @param originals the original of each message of {@code request}, by identity
	 */
	record Conversion(dev.langchain4j.model.chat.request.ChatRequest original, ChatRequest request,
			Map<ChatMessage, dev.langchain4j.data.message.ChatMessage> originals) {

		/** @return the request to send for {@code changed}, which is {@link #request()} or one the guard derived from it */
		dev.langchain4j.model.chat.request.ChatRequest toLangChain4j(ChatRequest changed) {
			if (changed == request) {
				return original;
			}
			List<dev.langchain4j.data.message.ChatMessage> messages = new ArrayList<>(changed.messages().size());
			for (ChatMessage m : changed.messages()) {
				dev.langchain4j.data.message.ChatMessage kept = originals.get(m);
				messages.add(kept != null ? kept : LangChain4jRequests.toLangChain4j(m, changed.messages()));
			}
			ChatRequestParameters parameters = original.parameters();
			ChatRequestParameters changes = changes(changed);
			if (changes != null) {
				parameters = parameters == null ? changes : parameters.overrideWith(changes);
			}
			return dev.langchain4j.model.chat.request.ChatRequest.builder()
				.messages(messages)
				.parameters(parameters)
				.build();
		}

		private ChatRequestParameters changes(ChatRequest changed) {
			boolean model = !Objects.equals(changed.model(), request.model()) && changed.model() != null;
			boolean maxTokens = !Objects.equals(changed.maxTokens(), request.maxTokens()) && changed.maxTokens() != null;
			boolean temperature = !Objects.equals(changed.temperature(), request.temperature())
					&& changed.temperature() != null;
			if (!model && !maxTokens && !temperature) {
				return null;
			}
			return ChatRequestParameters.builder()
				.modelName(model ? changed.model() : null)
				.maxOutputTokens(maxTokens ? changed.maxTokens() : null)
				.temperature(temperature ? changed.temperature() : null)
				.build();
		}
	}
}
