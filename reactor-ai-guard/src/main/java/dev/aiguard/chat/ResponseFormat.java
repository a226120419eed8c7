package dev.aiguard.chat;

import java.util.Objects;

/**
 * Asks the model for structured output: an answer that is JSON matching {@code schema}. The
 * {@code OpenAiCompatibleClient} sends it as {@code response_format: {type: json_schema, ...}};
 * the guard's JSON Schema output validator checks the assembled answer against it.
 *
 * <pre>{@code
 * ChatRequest request = ChatRequest.of("gpt-4o-mini", messages)
 *     .withResponseFormat(ResponseFormat.jsonSchema("weather",
 *         "{\"type\":\"object\",\"required\":[\"city\"],\"properties\":{\"city\":{\"type\":\"string\"}}}"));
 * }</pre>
 *
 * @param name the schema's name, as providers ask for one: letters, digits, {@code _} and {@code -}
 * @param schema the JSON Schema, as JSON text
 * @param strict whether the provider is asked to follow the schema strictly
 */
public record ResponseFormat(String name, String schema, boolean strict) {

	public ResponseFormat {
		Objects.requireNonNull(name, "name");
		Objects.requireNonNull(schema, "schema");
		if (!name.matches("[A-Za-z0-9_-]{1,64}")) {
			throw new IllegalArgumentException("name must be 1 to 64 letters, digits, '_' or '-', was '" + name + "'");
		}
		if (schema.isBlank()) {
			throw new IllegalArgumentException("schema must not be blank, was '" + schema + "'");
		}
	}

	/** @return a strict JSON Schema format */
	public static ResponseFormat jsonSchema(String name, String schema) {
		return new ResponseFormat(name, schema, true);
	}
}
