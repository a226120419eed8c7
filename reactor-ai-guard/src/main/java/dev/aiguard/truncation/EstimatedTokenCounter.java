package dev.aiguard.truncation;

/** {@link TokenCounter#estimate()}: about four characters per token, as OpenAI's rule of thumb says. */
final class EstimatedTokenCounter implements TokenCounter {

	static final EstimatedTokenCounter INSTANCE = new EstimatedTokenCounter();

	private EstimatedTokenCounter() {
	}

	@Override
	public int count(String text) {
		if (text == null) {
			return 0;
		}
		// (n + 3) / 4 without overflow for the longest strings
		return (int) ((text.length() + 3L) / 4L);
	}

	@Override
	public String toString() {
		return "TokenCounter.estimate()";
	}
}
