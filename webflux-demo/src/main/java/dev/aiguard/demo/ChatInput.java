package dev.aiguard.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.core.Tenant;
import org.jspecify.annotations.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A checked {@code POST /api/chat} body:
 * {@code {"messages":[{"role","content"}...],"priority","client","tenant"}}.
 *
 * @param messages the conversation, never empty
 * @param priority from the body, else the {@code X-Priority} header, else P1
 * @param client from the body, else the {@code client} query parameter, else {@code aiguard.chat.client}
 * @param tenant from the body, else the {@code X-Tenant} header, else {@code aiguard.budgets.default-tenant}
 */
record ChatInput(List<ChatMessage> messages, Priority priority, AnswerClient client, Tenant tenant) {

	/** A tenant id the demo accepts: 1 to 64 letters, digits, '.', '_' or '-' (it becomes a metric tag). */
	static final Pattern TENANT_ID = Pattern.compile("[A-Za-z0-9._-]{1,64}");

	/**
	 * @param body the request body
	 * @param priorityHeader the {@code X-Priority} header, or {@code null}
	 * @param clientParam the {@code client} query parameter, or {@code null}
	 * @param defaultClient the client of a request that names none
	 * @param tenantHeader the {@code X-Tenant} header, or {@code null}
	 * @param defaultTenant the tenant of a request that names none
	 * @throws BadRequestException saying what is wrong, for a 400
	 */
	static ChatInput parse(JsonMapper json, String body, @Nullable String priorityHeader, @Nullable String clientParam,
			AnswerClient defaultClient, @Nullable String tenantHeader, Tenant defaultTenant) {
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
				client(root.get("client"), clientParam, defaultClient),
				tenant(root.get("tenant"), tenantHeader, defaultTenant));
	}

	private static Tenant tenant(@Nullable JsonNode fromBody, @Nullable String fromHeader, Tenant fallback) {
		Named named = named(fromBody, "tenant", fromHeader, "X-Tenant", "invalid_tenant",
				"tenant must be a string of 1 to 64 letters, digits, '.', '_' or '-'");
		if (named == null) {
			return fallback;
		}
		if (!TENANT_ID.matcher(named.text).matches()) {
			String shown = named.text.length() > 64 ? named.text.substring(0, 64) + "..." : named.text;
			throw BadRequestException.of("invalid_tenant", named.where + " '" + shown.replaceAll("\\p{Cntrl}", "?")
					+ "' is not 1 to 64 letters, digits, '.', '_' or '-'");
		}
		return Tenant.of(named.text);
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
		Named named = named(fromBody, "priority", fromHeader, "X-Priority", "unknown_priority",
				"priority must be a string: P0, P1 or P2");
		if (named == null) {
			return Priority.P1;
		}
		try {
			return Priority.parse(named.text);
		}
		catch (IllegalArgumentException e) {
			throw BadRequestException.of("unknown_priority", named.where + " '" + named.text + "' is not one of P0, P1, P2");
		}
	}

	private static AnswerClient client(@Nullable JsonNode fromBody, @Nullable String fromQuery, AnswerClient fallback) {
		Named named = named(fromBody, "client", fromQuery, "query parameter client", "unknown_client",
				"client must be a string: library or spring-ai");
		if (named == null) {
			return fallback;
		}
		try {
			return AnswerClient.parse(named.text);
		}
		catch (IllegalArgumentException e) {
			throw BadRequestException.of("unknown_client", named.where + " " + e.getMessage());
		}
	}

	/** A value the request gave, and where it gave it (for the error message). */
	private record Named(String text, String where) {
	}

	/**
	 * @return the body's field when present and not null (it must be a string, else a 400 with
	 *         {@code code} and {@code notAString}), else the header or query value, else {@code null}
	 */
	private static @Nullable Named named(@Nullable JsonNode fromBody, String field, @Nullable String other,
			String otherName, String code, String notAString) {
		if (fromBody != null && !fromBody.isNull()) {
			if (!fromBody.isString()) {
				throw BadRequestException.of(code, notAString);
			}
			return new Named(fromBody.stringValue(), field);
		}
		return other == null ? null : new Named(other, otherName);
	}
}
