package dev.aiguard.langchain4j;

import java.util.Locale;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.jspecify.annotations.Nullable;

/**
 * Reads what LangChain4j leaves unread in a server-sent event it could not map to a callback: an
 * error object ({@code {"error":{...}}}, which LangChain4j's OpenAI model parses as an empty chunk)
 * and a finish reason spelled in a case LangChain4j does not know ({@code "STOP"}, which it turns
 * into no finish reason at all). Such events are few per answer (the role chunk, the finish chunk,
 * the usage chunk, an error), never the tokens, so parsing them costs nothing per token.
 */
final class RawEvents {

	private static final ObjectMapper JSON = new ObjectMapper();

	private RawEvents() {
	}

	/**
	 * @param data an event's data
	 * @return its JSON object when it may hold an error or a finish reason, else {@code null}
	 *         (not JSON, not an object, or neither field named in it)
	 */
	@Nullable
	static JsonNode object(@Nullable String data) {
		if (data == null || data.isEmpty() || data.charAt(0) != '{'
				|| (!data.contains("\"error\"") && !data.contains("\"finish_reason\""))) {
			return null;
		}
		try {
			JsonNode root = JSON.readTree(data);
			return root != null && root.isObject() ? root : null;
		}
		catch (JacksonException notJson) {
			return null;
		}
	}

	/**
	 * @param root a chat-completion chunk
	 * @return the finish reason of its choice 0, in lower case, or {@code null} when it has none
	 */
	@Nullable
	static String finishReason(JsonNode root) {
		JsonNode choices = root.get("choices");
		if (choices == null || !choices.isArray()) {
			return null;
		}
		for (JsonNode choice : choices) {
			JsonNode index = choice.get("index");
			if (index == null || index.asInt(-1) == 0) {
				String reason = text(choice.get("finish_reason"));
				return reason == null || reason.isEmpty() ? null : reason.toLowerCase(Locale.ROOT);
			}
		}
		return null;
	}

	/** @return the node's text, or {@code null} when absent, null or not a scalar */
	@Nullable
	static String text(@Nullable JsonNode node) {
		if (node == null || node.isNull() || node.isMissingNode() || node.isContainerNode()) {
			return null;
		}
		return node.asText();
	}
}
