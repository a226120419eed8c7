package dev.aiguard.openai;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

import com.openai.models.chat.completions.ChatCompletionAssistantMessageParam;
import com.openai.models.chat.completions.ChatCompletionContentPart;
import com.openai.models.chat.completions.ChatCompletionContentPartText;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionMessageFunctionToolCall;
import com.openai.models.chat.completions.ChatCompletionMessageParam;
import com.openai.models.chat.completions.ChatCompletionMessageToolCall;
import com.openai.models.chat.completions.ChatCompletionSystemMessageParam;
import com.openai.models.chat.completions.ChatCompletionToolMessageParam;
import com.openai.models.chat.completions.ChatCompletionUserMessageParam;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;

/**
 * Converts between the library's {@link ChatRequest} (what the guard retries, truncates and
 * continues) and the SDK's {@link ChatCompletionCreateParams} (what the SDK sends).
 *
 * <pre>{@code
 * ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
 *     .model(ChatModel.GPT_4O_MINI).addSystemMessage("Be brief.").addUserMessage("Hello").build();
 * ChatRequest request = OpenAiRequests.toChatRequest(params);       // for guard.call(request, ...)
 * ChatCompletionCreateParams smaller = OpenAiRequests.toParams(params, truncatedRequest);
 * }</pre>
 *
 * <p>What a {@code ChatRequest} carries is text: system, user, assistant and tool messages, the
 * assistant's function tool calls, the model, the output limit and the temperature. Everything
 * else (tools, tool choice, response format, stream options, seed, user, reasoning effort...)
 * stays in the params used as the template. A {@code developer} message becomes a system
 * message; images, audio, files and custom tool calls cannot be carried and are refused with an
 * {@link IllegalArgumentException} naming the message.
 */
public final class OpenAiRequests {

	private OpenAiRequests() {
	}

	/**
	 * The template with the request's conversation. The request's model, output limit and
	 * temperature replace the template's when they are set; every other setting is the
	 * template's.
	 *
	 * @param template the params to start from (model, tools, options); its messages are replaced
	 * @param request the conversation to send, e.g. a truncated copy of the original
	 * @return params for {@code client.chat().completions().createStreaming(..)}
	 */
	// the deprecated max_tokens is cleared so that only max_completion_tokens is sent
	@SuppressWarnings("deprecation")
	public static ChatCompletionCreateParams toParams(ChatCompletionCreateParams template, ChatRequest request) {
		Objects.requireNonNull(template, "template");
		Objects.requireNonNull(request, "request");
		ChatCompletionCreateParams.Builder builder = template.toBuilder().messages(toMessages(request.messages()));
		if (request.model() != null && !request.model().isBlank()) {
			builder.model(request.model());
		}
		Integer maxTokens = request.maxTokens();
		if (maxTokens != null && !maxTokens.equals(outputLimit(template))) {
			// one limit only: the API refuses max_tokens and max_completion_tokens together
			builder.maxCompletionTokens(maxTokens.longValue()).maxTokens(Optional.empty());
		}
		if (request.temperature() != null) {
			builder.temperature(request.temperature());
		}
		return builder.build();
	}

	/**
	 * The params' conversation as a {@link ChatRequest}: model, messages, output limit
	 * ({@code max_completion_tokens}, else {@code max_tokens}) and temperature.
	 *
	 * @throws IllegalArgumentException naming the message when it holds what a {@code ChatRequest}
	 *         cannot carry (an image, audio or file part, a custom tool call, a deprecated function message)
	 */
	public static ChatRequest toChatRequest(ChatCompletionCreateParams params) {
		Objects.requireNonNull(params, "params");
		List<ChatCompletionMessageParam> source = params.messages();
		List<ChatMessage> messages = new ArrayList<>(source.size());
		for (int i = 0; i < source.size(); i++) {
			messages.add(toChatMessage(source.get(i), i));
		}
		return new ChatRequest(params.model().asString(), messages, outputLimit(params),
				params.temperature().orElse(null));
	}

	/** @return the library's messages as the SDK's message params */
	public static List<ChatCompletionMessageParam> toMessages(List<ChatMessage> messages) {
		Objects.requireNonNull(messages, "messages");
		List<ChatCompletionMessageParam> out = new ArrayList<>(messages.size());
		for (ChatMessage m : messages) {
			out.add(toMessage(m));
		}
		return out;
	}

	private static ChatCompletionMessageParam toMessage(ChatMessage m) {
		switch (m.role()) {
			case SYSTEM:
				return ChatCompletionMessageParam.ofSystem(
						ChatCompletionSystemMessageParam.builder().content(m.content()).build());
			case USER:
				return ChatCompletionMessageParam.ofUser(
						ChatCompletionUserMessageParam.builder().content(m.content()).build());
			case TOOL:
				return ChatCompletionMessageParam.ofTool(ChatCompletionToolMessageParam.builder()
					.toolCallId(m.toolCallId())
					.content(m.content())
					.build());
			case ASSISTANT:
			default:
				ChatCompletionAssistantMessageParam.Builder assistant = ChatCompletionAssistantMessageParam.builder();
				if (!m.content().isEmpty() || m.toolCalls().isEmpty()) {
					assistant.content(m.content());
				}
				for (ToolCall call : m.toolCalls()) {
					assistant.addToolCall(ChatCompletionMessageFunctionToolCall.builder()
						.id(call.id())
						.function(ChatCompletionMessageFunctionToolCall.Function.builder()
							.name(call.name())
							.arguments(call.arguments())
							.build())
						.build());
				}
				return ChatCompletionMessageParam.ofAssistant(assistant.build());
		}
	}

	private static ChatMessage toChatMessage(ChatCompletionMessageParam p, int index) {
		if (p.isSystem()) {
			ChatCompletionSystemMessageParam.Content c = p.asSystem().content();
			return ChatMessage.system(c.isText() ? c.asText() : texts(c.asArrayOfContentParts()));
		}
		if (p.isDeveloper()) {
			var c = p.asDeveloper().content();
			return ChatMessage.system(c.isText() ? c.asText() : texts(c.asArrayOfContentParts()));
		}
		if (p.isUser()) {
			ChatCompletionUserMessageParam.Content c = p.asUser().content();
			return ChatMessage.user(c.isText() ? c.asText() : userTexts(c.asArrayOfContentParts(), index));
		}
		if (p.isTool()) {
			ChatCompletionToolMessageParam tool = p.asTool();
			ChatCompletionToolMessageParam.Content c = tool.content();
			return ChatMessage.tool(tool.toolCallId(), c.isText() ? c.asText() : texts(c.asArrayOfContentParts()));
		}
		if (p.isAssistant()) {
			return assistant(p.asAssistant(), index);
		}
		throw new IllegalArgumentException("messages[" + index + "]: a " + role(p)
				+ " message cannot be carried by a ChatRequest; use OpenAiStreams.stream(params) for it");
	}

	private static ChatMessage assistant(ChatCompletionAssistantMessageParam a, int index) {
		String text = "";
		Optional<ChatCompletionAssistantMessageParam.Content> content = a.content();
		if (content.isPresent()) {
			ChatCompletionAssistantMessageParam.Content c = content.get();
			if (c.isText()) {
				text = c.asText();
			}
			else {
				StringBuilder sb = new StringBuilder();
				for (var part : c.asArrayOfContentParts()) {
					part.text().ifPresent(t -> sb.append(t.text()));
					part.refusal().ifPresent(r -> sb.append(r.refusal()));
				}
				text = sb.toString();
			}
		}
		List<ToolCall> calls = new ArrayList<>();
		for (ChatCompletionMessageToolCall call : a.toolCalls().orElse(List.of())) {
			if (!call.isFunction()) {
				throw new IllegalArgumentException("messages[" + index
						+ "]: a custom tool call cannot be carried by a ChatRequest; use OpenAiStreams.stream(params) for it");
			}
			ChatCompletionMessageFunctionToolCall f = call.asFunction();
			calls.add(new ToolCall(f.id(), f.function().name(), f.function().arguments()));
		}
		return new ChatMessage(ChatMessage.Role.ASSISTANT, text, calls, null);
	}

	private static String texts(List<ChatCompletionContentPartText> parts) {
		StringBuilder sb = new StringBuilder();
		for (ChatCompletionContentPartText part : parts) {
			sb.append(part.text());
		}
		return sb.toString();
	}

	private static String userTexts(List<ChatCompletionContentPart> parts, int index) {
		StringBuilder sb = new StringBuilder();
		for (int i = 0; i < parts.size(); i++) {
			ChatCompletionContentPart part = parts.get(i);
			if (!part.isText()) {
				String kind = part.isImageUrl() ? "image_url" : part.isInputAudio() ? "input_audio" : "file";
				throw new IllegalArgumentException("messages[" + index + "].content[" + i + "]: the " + kind
						+ " part cannot be carried by a ChatRequest; use OpenAiStreams.stream(params) for it");
			}
			sb.append(part.asText().text());
		}
		return sb.toString();
	}

	// function messages are deprecated by OpenAI; one still names its role in the refusal
	@SuppressWarnings("deprecation")
	private static String role(ChatCompletionMessageParam p) {
		return p.isFunction() ? "function" : "unknown";
	}

	/** The template's output limit: {@code max_completion_tokens}, else the older {@code max_tokens}. */
	// a template may still carry the deprecated max_tokens: it is read, never written
	@SuppressWarnings("deprecation")
	private static Integer outputLimit(ChatCompletionCreateParams params) {
		Optional<Long> limit = params.maxCompletionTokens().or(params::maxTokens);
		return limit.map(n -> (int) Math.min(Integer.MAX_VALUE, n)).orElse(null);
	}
}
