package dev.aiguard.validation;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import dev.aiguard.core.OutputLimits;
import org.jspecify.annotations.Nullable;

/**
 * The output validators the library ships.
 *
 * <pre>{@code
 * GuardPolicy.builder("chat")
 *     .validate(Validators.emptyAnswer(),
 *         Validators.finishReason("content_filter", "length"),
 *         Validators.refusal(Pattern.compile("^I('m| am) (sorry|unable)", Pattern.CASE_INSENSITIVE)),
 *         Validators.jsonSchema())
 *     .build();
 * }</pre>
 */
public final class Validators {

	private static final OutputValidator EMPTY = new EmptyAnswer();
	private static final OutputValidator CONTENT_FILTER = new FinishReason(Set.of("content_filter"));

	private Validators() {
	}

	/**
	 * Rejects an answer with no content (no text, or whitespace only, and no tool call) and one
	 * whose tool calls lack arguments. Named {@code empty}; retryable; reads no text, so the guard
	 * keeps none for it. It {@linkplain OutputValidator#holdsLeadingWhitespace() holds leading
	 * whitespace}: an answer of whitespace chunks reaches nobody, so its rejection is retried.
	 */
	public static OutputValidator emptyAnswer() {
		return EMPTY;
	}

	/** @return {@link #finishReason(String...)} with {@code content_filter} only */
	public static OutputValidator finishReason() {
		return CONTENT_FILTER;
	}

	/**
	 * Rejects an answer whose finish reason is one of {@code reasons} (any letter case). A
	 * truncation reason ({@code length}, {@code max_tokens}) counts only when the caller did not
	 * ask for a cap: the request has no {@code maxTokens} (or the guard does not own it, in the
	 * transform form). Named {@code finish-reason}; not retryable.
	 *
	 * @param reasons finish reasons that make an answer invalid, e.g. {@code content_filter}, {@code length}
	 */
	public static OutputValidator finishReason(String... reasons) {
		Objects.requireNonNull(reasons, "reasons");
		if (reasons.length == 0) {
			throw new IllegalArgumentException("reasons must name at least one finish reason, was none");
		}
		Set<String> set = new TreeSet<>();
		for (String r : reasons) {
			if (r == null || r.isBlank()) {
				throw new IllegalArgumentException("reasons must not contain a blank reason, was '" + r + "'");
			}
			set.add(r.toLowerCase(Locale.ROOT));
		}
		return new FinishReason(set);
	}

	/**
	 * Rejects an answer whose text matches one of {@code patterns} ({@link java.util.regex.Matcher#find()}):
	 * a refusal the application does not want to pass on. Opt-in, since what counts as a refusal
	 * depends on the application. Named {@code refusal}; not retryable.
	 */
	public static OutputValidator refusal(Pattern... patterns) {
		Objects.requireNonNull(patterns, "patterns");
		if (patterns.length == 0) {
			throw new IllegalArgumentException("patterns must hold at least one pattern, was none");
		}
		for (Pattern p : patterns) {
			if (p == null) {
				throw new IllegalArgumentException("patterns must not contain null");
			}
		}
		return new Refusal(List.of(patterns));
	}

	/**
	 * Validates the answer as JSON against the schema of the request's
	 * {@link dev.aiguard.chat.ResponseFormat} (requests without one pass), with
	 * {@code com.networknt:json-schema-validator}. The guard holds such an answer back until it
	 * passed, so a rejected one is retried once with the validation errors appended to the prompt.
	 * Named {@code json-schema}.
	 *
	 * @throws IllegalStateException when {@code com.networknt:json-schema-validator} is not on the classpath
	 */
	public static OutputValidator jsonSchema() {
		requireSchemaLibrary();
		return new JsonSchemaValidator(null);
	}

	/**
	 * As {@link #jsonSchema()}, against a fixed schema whatever the request says: usable in the
	 * transform form too.
	 *
	 * @param schema the JSON Schema, as JSON text
	 * @throws IllegalStateException when {@code com.networknt:json-schema-validator} is not on the classpath
	 */
	public static OutputValidator jsonSchema(String schema) {
		if (schema == null || schema.isBlank()) {
			throw new IllegalArgumentException("schema must not be blank, was '" + schema + "'");
		}
		requireSchemaLibrary();
		JsonSchemaValidator validator = new JsonSchemaValidator(schema);
		validator.compile(schema);
		return validator;
	}

	private static void requireSchemaLibrary() {
		try {
			Class.forName("com.networknt.schema.SchemaRegistry", false, Validators.class.getClassLoader());
		}
		catch (ClassNotFoundException | LinkageError absent) {
			throw new IllegalStateException("Validators.jsonSchema() needs com.networknt:json-schema-validator "
					+ "on the classpath; add it, or implement OutputValidator", absent);
		}
	}

	static final class EmptyAnswer implements OutputValidator {

		@Override
		public String name() {
			return "empty";
		}

		@Override
		@Nullable
		public String check(Answer answer) {
			List<ToolCall> calls = answer.toolCalls();
			for (ToolCall call : calls) {
				if (call.arguments().isBlank()) {
					return "tool call '" + call.name() + "' has no arguments";
				}
			}
			if (calls.isEmpty() && answer.blank()) {
				return "the answer has no content (no text but whitespace, no tool call)";
			}
			return null;
		}

		@Override
		public boolean needsText() {
			return false;
		}

		@Override
		public boolean retryable() {
			return true;
		}

		@Override
		public boolean holdsLeadingWhitespace() {
			return true;
		}

		@Override
		public String toString() {
			return "Validators.emptyAnswer()";
		}
	}

	static final class FinishReason implements OutputValidator {

		private final Set<String> reasons;

		FinishReason(Set<String> reasons) {
			this.reasons = reasons;
		}

		@Override
		public String name() {
			return "finish-reason";
		}

		@Override
		@Nullable
		public String check(Answer answer) {
			String reason = answer.finishReason();
			if (reason == null || !reasons.contains(reason.toLowerCase(Locale.ROOT))) {
				return null;
			}
			if (OutputLimits.isTruncation(reason)) {
				ChatRequest request = answer.request();
				if (request != null && request.maxTokens() != null) {
					return null; // the caller asked for the cap that cut it
				}
				return "the answer was cut by the output limit (finish reason '" + reason
						+ "') though the request set no maxTokens";
			}
			return "finish reason '" + reason + "'";
		}

		@Override
		public boolean needsText() {
			return false;
		}

		@Override
		public String toString() {
			return "Validators.finishReason(" + reasons + ")";
		}
	}

	static final class Refusal implements OutputValidator {

		private final List<Pattern> patterns;

		Refusal(List<Pattern> patterns) {
			this.patterns = new ArrayList<>(patterns);
		}

		@Override
		public String name() {
			return "refusal";
		}

		@Override
		@Nullable
		public String check(Answer answer) {
			String text = answer.text();
			for (Pattern p : patterns) {
				if (p.matcher(text).find()) {
					return "the answer matches the refusal pattern '" + p.pattern() + "'";
				}
			}
			return null;
		}

		@Override
		public String toString() {
			return "Validators.refusal(" + patterns + ")";
		}
	}
}
