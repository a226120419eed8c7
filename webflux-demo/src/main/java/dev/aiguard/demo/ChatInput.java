package dev.aiguard.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatMessage;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A checked {@code POST /api/chat} body:
 * {@code {"messages":[{"role","content"}...],"priority","client"}}.
 *
 * @param messages the conversation, never empty
 * @param priority from the body, else the {@code X-Priority} header, else P1
 * @param client from the body, else the {@code client} query parameter, else {@code aiguard.chat.client}
 */
record ChatInput(List<ChatMessage> messages, Priority priority, AnswerClient client) {

	/**
	 * @param body the request body
	 * @param priorityHeader the {@code X-Priority} header, or {@code null}
	 * @param clientParam the {@code client} query parameter, or {@code null}
	 * @param defaultClient the client of a request that names none
	 * @throws BadRequestException saying what is wrong, for a 400
	 */
	static ChatInput parse(JsonMapper json, String body, @Nullable String priorityHeader, @Nullable String clientParam,
			AnswerClient defaultClient) {
		if (body.isBlank()) {
			throw BadRequestException.of("malformed_json", "the request body is empty; expected a JSON object");
		}
		JsonNode root;
		try {
			root = json.readTree(body);
		}
		catch (JacksonException e) {
			throw BadRequestException.of("malformed_json", "the request body is not valid JSON: " + e.getOriginalMessage());
		}
		if (root == null || !root.isObject()) {
			throw BadRequestException.of("malformed_json", "the request body must be a JSON object");
		}
		JsonNode array = root.get("messages");
		if (array == null || array.isNull()) {
			throw BadRequestException.of("empty_messages", "messages is missing; expected a non-empty array");
		}
		if (!array.isArray()) {
			throw BadRequestException.of("invalid_messages", "messages must be an array");
		}
		if (array.isEmpty()) {
			throw BadRequestException.of("empty_messages", "messages must not be empty");
		}
		List<ChatMessage> messages = new ArrayList<>(array.size());
		for (int i = 0; i < array.size(); i++) {
			messages.add(message(array.get(i), i));
		}
		return new ChatInput(List.copyOf(messages), priority(root.get("priority"), priorityHeader),
				client(root.get("client"), clientParam, defaultClient));
	}

	private static ChatMessage message(JsonNode node, int index) {
		if (!node.isObject()) {
			throw BadRequestException.of("invalid_messages", "messages[" + index + "] must be an object");
		}
		JsonNode role = node.get("role");
		if (role == null || !role.isString()) {
			throw BadRequestException.of("invalid_messages", "messages[" + index + "].role must be a string");
		}
		JsonNode content = node.get("content");
		if (content == null || !content.isString()) {
			throw BadRequestException.of("invalid_messages", "messages[" + index + "].content must be a string");
		}
		return switch (role.stringValue().toLowerCase(Locale.ROOT)) {
			case "system" -> ChatMessage.system(content.stringValue());
			case "user" -> ChatMessage.user(content.stringValue());
			case "assistant" -> ChatMessage.assistant(content.stringValue());
			default -> throw BadRequestException.of("unknown_role", "messages[" + index + "].role '"
					+ role.stringValue() + "' is not one of system, user, assistant");
		};
	}

	private static Priority priority(@Nullable JsonNode fromBody, @Nullable String fromHeader) {
		String text;
		String where;
		if (fromBody != null && !fromBody.isNull()) {
			if (!fromBody.isString()) {
				throw BadRequestException.of("unknown_priority", "priority must be a string: P0, P1 or P2");
			}
			text = fromBody.stringValue();
			where = "priority";
		}
		else if (fromHeader != null) {
			text = fromHeader;
			where = "X-Priority";
		}
		else {
			return Priority.P1;
		}
		try {
			return Priority.parse(text);
		}
		catch (IllegalArgumentException e) {
			throw BadRequestException.of("unknown_priority", where + " '" + text + "' is not one of P0, P1, P2");
		}
	}

	private static AnswerClient client(@Nullable JsonNode fromBody, @Nullable String fromQuery, AnswerClient fallback) {
		String text;
		String where;
		if (fromBody != null && !fromBody.isNull()) {
			if (!fromBody.isString()) {
				throw BadRequestException.of("unknown_client", "client must be a string: library or spring-ai");
			}
			text = fromBody.stringValue();
			where = "client";
		}
		else if (fromQuery != null) {
			text = fromQuery;
			where = "query parameter client";
		}
		else {
			return fallback;
		}
		try {
			return AnswerClient.parse(text);
		}
		catch (IllegalArgumentException e) {
			throw BadRequestException.of("unknown_client", where + " " + e.getMessage());
		}
	}
}
