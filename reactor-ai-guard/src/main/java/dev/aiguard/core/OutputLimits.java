package dev.aiguard.core;

/**
 * Recognises finish reasons that mean the answer was cut by the output token limit: OpenAI's
 * {@code length}, Anthropic's {@code max_tokens}, in any letter case (Spring AI and LangChain4j
 * report them upper-case).
 *
 * <pre>{@code
 * boolean cut = OutputLimits.isTruncation(report.finishReason());
 * }</pre>
 */
public final class OutputLimits {

	private OutputLimits() {
	}

	/** @return whether the finish reason says the output limit cut the answer; {@code false} for {@code null} */
	public static boolean isTruncation(String finishReason) {
		return "length".equalsIgnoreCase(finishReason) || "max_tokens".equalsIgnoreCase(finishReason);
	}
}
