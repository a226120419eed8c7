package dev.aiguard.provider;

import java.util.Objects;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

import org.jspecify.annotations.Nullable;

/** Reads the error object out of either provider's error body. Kept apart: it needs Jackson. */
final class ErrorBodies {

	/**
	 * @param message the provider's message, or the body's text when it is not JSON
	 * @param type the error type, or {@code null}
	 * @param code the error code, or {@code null}
	 */
	record Parsed(String message, @Nullable String type, @Nullable String code) {
	}

	private ErrorBodies() {
	}

	static Parsed parse(String body) {
		String trimmed = body.strip();
		if (!trimmed.startsWith("{")) {
			return new Parsed(trimmed, null, null);
		}
		try {
			JsonNode root = Json.MAPPER.readTree(trimmed);
			return fromErrorNode(root.path("error"), trimmed);
		}
		catch (JacksonException notJson) {
			return new Parsed(trimmed, null, null);
		}
	}

	/**
	 * Both shapes: OpenAI {@code {"error":{"message","type","code"}}}, Anthropic
	 * {@code {"type":"error","error":{"type","message"}}}; some servers send {@code "error":"text"}.
	 */
	static Parsed fromErrorNode(JsonNode error, String fallback) {
		if (error.isString()) {
			return new Parsed(error.stringValue(), null, null);
		}
		if (!error.isObject()) {
			return new Parsed(fallback, null, null);
		}
		return new Parsed(Objects.requireNonNullElse(text(error.get("message"), fallback), fallback),
				text(error.get("type"), null),
				text(error.get("code"), null));
	}

	private static @Nullable String text(@Nullable JsonNode node, @Nullable String otherwise) {
		if (node == null || node.isNull() || node.isMissingNode() || node.isContainer()) {
			return otherwise;
		}
		return node.asString();
	}
}
