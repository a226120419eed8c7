package dev.aiguard;

/** Recognises finish reasons that mean the answer was cut by the output token limit. */
final class OutputLimits {

	private OutputLimits() {
	}

	static boolean isTruncation(String finishReason) {
		return "length".equals(finishReason) || "max_tokens".equals(finishReason);
	}
}
