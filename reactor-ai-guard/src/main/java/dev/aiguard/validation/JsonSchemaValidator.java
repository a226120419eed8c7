package dev.aiguard.validation;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

import com.networknt.schema.Error;
import com.networknt.schema.InputFormat;
import com.networknt.schema.Schema;
import com.networknt.schema.SchemaRegistry;
import com.networknt.schema.SpecificationVersion;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ResponseFormat;
import org.jspecify.annotations.Nullable;

/**
 * {@link Validators#jsonSchema()}: the answer parsed as JSON and validated with
 * {@code com.networknt:json-schema-validator} (draft 2020-12 unless the schema names another).
 * Loaded only when asked for, so the library runs without that dependency.
 */
final class JsonSchemaValidator implements OutputValidator {

	/** Errors named in a rejection: enough to correct an answer, short enough for a prompt. */
	private static final int MAX_ERRORS = 5;
	/** Compiled schemas kept: requests of an application use a handful; past this, each is compiled per check. */
	private static final int MAX_CACHED = 64;

	@Nullable
	private final String fixedSchema;
	private final SchemaRegistry registry = SchemaRegistry.withDefaultDialect(SpecificationVersion.DRAFT_2020_12);
	private final ConcurrentHashMap<String, Schema> compiled = new ConcurrentHashMap<>();

	JsonSchemaValidator(@Nullable String fixedSchema) {
		this.fixedSchema = fixedSchema;
	}

	Schema compile(String schema) {
		Schema s = compiled.get(schema);
		if (s != null) {
			return s;
		}
		try {
			s = registry.getSchema(schema, InputFormat.JSON);
		}
		catch (RuntimeException unreadable) {
			throw new IllegalArgumentException("schema is not a readable JSON Schema: " + unreadable.getMessage(),
					unreadable);
		}
		if (compiled.size() < MAX_CACHED) {
			compiled.putIfAbsent(schema, s);
		}
		return s;
	}

	@Nullable
	private String schemaFor(@Nullable ChatRequest request) {
		if (fixedSchema != null) {
			return fixedSchema;
		}
		ResponseFormat format = request != null ? request.responseFormat() : null;
		return format != null ? format.schema() : null;
	}

	@Override
	public String name() {
		return "json-schema";
	}

	@Override
	@Nullable
	public String check(Answer answer) {
		String schemaText = schemaFor(answer.request());
		if (schemaText == null) {
			return null;
		}
		Schema schema = compile(schemaText);
		List<Error> errors;
		try {
			errors = schema.validate(answer.text(), InputFormat.JSON);
		}
		catch (RuntimeException notJson) {
			return "the answer is not JSON (" + firstLine(notJson.getMessage()) + ")";
		}
		if (errors.isEmpty()) {
			return null;
		}
		List<String> named = new ArrayList<>();
		for (int i = 0; i < errors.size() && i < MAX_ERRORS; i++) {
			Error e = errors.get(i);
			named.add(e.getInstanceLocation() + ": " + e.getMessage());
		}
		String more = errors.size() > MAX_ERRORS ? " (and " + (errors.size() - MAX_ERRORS) + " more)" : "";
		return "the answer does not match the schema: " + String.join("; ", named) + more;
	}

	private static String firstLine(@Nullable String message) {
		if (message == null) {
			return "unreadable";
		}
		int nl = message.indexOf('\n');
		return nl < 0 ? message : message.substring(0, nl);
	}

	@Override
	public boolean retryable() {
		return true;
	}

	/** The rejected answer and what was wrong with it follow the conversation: the model corrects itself. */
	@Override
	public ChatRequest retryRequest(ChatRequest request, Answer answer, String violation) {
		List<ChatMessage> messages = new ArrayList<>(request.messages());
		messages.add(ChatMessage.assistant(answer.text()));
		messages.add(ChatMessage.user("Your previous answer was rejected: " + violation
				+ ". Answer again with only a JSON value that matches the required schema."));
		return request.withMessages(messages);
	}

	@Override
	public boolean holdsAnswer(@Nullable ChatRequest request) {
		return schemaFor(request) != null;
	}

	@Override
	public String toString() {
		return fixedSchema != null ? "Validators.jsonSchema(<fixed schema>)" : "Validators.jsonSchema()";
	}
}
