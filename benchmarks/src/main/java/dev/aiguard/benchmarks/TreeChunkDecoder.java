package dev.aiguard.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.chat.Usage;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.sse.SseEvent;
import reactor.core.publisher.SynchronousSink;

/**
 * The baseline of {@link ChunkDecodeBenchmark}: the OpenAI codec as it read events before the
 * streaming parser, one Jackson 2 tree per event ({@code ObjectMapper.readTree}) and the same
 * rules, kept here to be measured on the same bytes.
 */
final class TreeChunkDecoder implements BiConsumer<SseEvent, SynchronousSink<ChatChunk>> {

	private static final ObjectMapper MAPPER = new ObjectMapper()
		.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);

	@Override
	public void accept(SseEvent event, SynchronousSink<ChatChunk> sink) {
		ChatChunk chunk = event.isComment() ? ChatChunk.keepAlive() : decode(event.data());
		if (chunk != null) {
			sink.next(chunk);
		}
	}

	private static ChatChunk decode(String data) {
		if (data.equals("[DONE]")) {
			return ChatChunk.done();
		}
		if (data.isBlank()) {
			return ChatChunk.keepAlive();
		}
		JsonNode root;
		try {
			root = MAPPER.readTree(data);
		}
		catch (JacksonException e) {
			throw new IllegalArgumentException("malformed JSON: " + e.getOriginalMessage(), e);
		}
		if (root == null || !root.isObject()) {
			throw new IllegalArgumentException("not a JSON object");
		}
		JsonNode error = root.get("error");
		if (error != null && !error.isNull()) {
			throw ProviderErrors.inBand("openai", text(error.get("type")), text(error.get("code")), error.toString());
		}
		String text = "";
		String role = null;
		String finishReason = null;
		List<ToolCallDelta> toolCalls = List.of();
		boolean reasoning = false;
		JsonNode choice = firstChoice(root.get("choices"));
		if (choice != null) {
			JsonNode delta = choice.path("delta");
			String content = text(delta.get("content"));
			String refusal = text(delta.get("refusal"));
			text = content != null ? content : refusal != null ? refusal : "";
			role = text(delta.get("role"));
			toolCalls = toolCalls(delta.get("tool_calls"));
			finishReason = text(choice.get("finish_reason"));
			reasoning = text(delta.get("reasoning_content")) != null || text(delta.get("reasoning")) != null;
		}
		Usage usage = usage(root.get("usage"));
		if (text.isEmpty() && role == null && finishReason == null && toolCalls.isEmpty() && usage == null) {
			return reasoning ? ChatChunk.keepAlive() : null;
		}
		return new ChatChunk(text, role, finishReason, usage, toolCalls, false, false);
	}

	private static JsonNode firstChoice(JsonNode choices) {
		if (choices == null || !choices.isArray()) {
			return null;
		}
		for (JsonNode c : choices) {
			JsonNode index = c.get("index");
			if (index == null || index.asInt(-1) == 0) {
				return c;
			}
		}
		return null;
	}

	private static List<ToolCallDelta> toolCalls(JsonNode calls) {
		if (calls == null || !calls.isArray() || calls.isEmpty()) {
			return List.of();
		}
		List<ToolCallDelta> out = new ArrayList<>(calls.size());
		int i = 0;
		for (JsonNode call : calls) {
			JsonNode index = call.get("index");
			JsonNode function = call.path("function");
			String arguments = text(function.get("arguments"));
			out.add(new ToolCallDelta(index != null && index.isInt() ? index.asInt() : i, text(call.get("id")),
					text(function.get("name")), arguments == null ? "" : arguments));
			i++;
		}
		return List.copyOf(out);
	}

	private static Usage usage(JsonNode usage) {
		if (usage == null || !usage.isObject()) {
			return null;
		}
		return new Usage(count(usage.get("prompt_tokens")), count(usage.get("completion_tokens")));
	}

	private static String text(JsonNode node) {
		if (node == null || node.isNull() || node.isMissingNode() || node.isContainerNode()) {
			return null;
		}
		return node.asText();
	}

	private static int count(JsonNode node) {
		return node != null && node.isNumber() ? node.asInt() : -1;
	}
}
