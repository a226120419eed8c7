package dev.aiguard.provider;

import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * The prompt (plus requested output) is larger than the model's context window. Sending it again
 * cannot help; shrinking it can, and {@link #limit()} and {@link #actual()} say by how much when
 * the provider's message told (OpenAI: <i>maximum context length is 8192 tokens. However, your
 * messages resulted in 9013 tokens</i>; Anthropic: <i>prompt is too long: 208310 tokens &gt;
 * 200000 maximum</i>; vLLM: <i>... However, you requested 5000 tokens ...</i>).
 *
 * <pre>{@code
 * catch (ContextLengthExceededException e) {
 *     int excess = e.actual().orElse(0) - e.limit().orElse(0);
 *     retryWith(truncator.drop(request, excess));
 * }
 * }</pre>
 */
public final class ContextLengthExceededException extends ProviderException {

	private static final long serialVersionUID = 1L;

	private static final Pattern OPENAI_LIMIT = Pattern.compile("maximum context length is (\\d+) tokens");
	private static final Pattern OPENAI_ACTUAL = Pattern.compile("(?:resulted in|you requested) (\\d+) tokens");
	private static final Pattern ANTHROPIC = Pattern.compile("prompt is too long: (\\d+) tokens > (\\d+) maximum");

	private final int limit;
	private final int actual;

	/**
	 * @param limit the context window in tokens, or -1 when unknown
	 * @param actual the size of the request in tokens, or -1 when unknown
	 */
	public ContextLengthExceededException(String provider, int status, @Nullable String errorType,
			@Nullable String errorCode, String message, int limit, int actual) {
		super(provider, status, errorType, errorCode, message, null, null);
		this.limit = limit;
		this.actual = actual;
	}

	/**
	 * Builds the exception, reading the limit and the actual size out of the provider's message.
	 *
	 * @param message the exception's message
	 * @param providerMessage the provider's own wording, where the numbers are looked for
	 */
	static ContextLengthExceededException parse(String provider, int status, @Nullable String errorType, @Nullable String errorCode,
			String message, String providerMessage) {
		int limit = -1;
		int actual = -1;
		Matcher anthropic = ANTHROPIC.matcher(providerMessage);
		if (anthropic.find()) {
			actual = parseInt(anthropic.group(1));
			limit = parseInt(anthropic.group(2));
		}
		else {
			Matcher m = OPENAI_LIMIT.matcher(providerMessage);
			if (m.find()) {
				limit = parseInt(m.group(1));
			}
			m = OPENAI_ACTUAL.matcher(providerMessage);
			if (m.find()) {
				actual = parseInt(m.group(1));
			}
		}
		return new ContextLengthExceededException(provider, status, errorType, errorCode, message, limit, actual);
	}

	/** @return whether a message reads like a context-length error of a known provider */
	static boolean matches(@Nullable String errorCode, String message) {
		if ("context_length_exceeded".equals(errorCode)) {
			return true;
		}
		return message.contains("maximum context length") || message.contains("prompt is too long")
				|| message.contains("context_length_exceeded") || message.contains("exceeds the context window");
	}

	private static int parseInt(String digits) {
		try {
			return Integer.parseInt(digits);
		}
		catch (NumberFormatException tooLarge) {
			return -1;
		}
	}

	@Override
	public boolean retryable() {
		return false;
	}

	/** @return the model's context window in tokens, when the message said */
	public OptionalInt limit() {
		return limit < 0 ? OptionalInt.empty() : OptionalInt.of(limit);
	}

	/** @return how many tokens the request had, when the message said */
	public OptionalInt actual() {
		return actual < 0 ? OptionalInt.empty() : OptionalInt.of(actual);
	}
}
