package dev.aiguard.springai;

import dev.aiguard.provider.ProviderException;
import org.springframework.ai.retry.NonTransientAiException;
import org.springframework.ai.retry.TransientAiException;

/**
 * Spring AI's {@code TransientAiException} and {@code NonTransientAiException}. Loaded only when
 * {@code spring-ai-retry} is on the class path ({@link SpringAiErrors} checks first).
 */
final class SpringAiRetryErrors {

	private SpringAiRetryErrors() {
	}

	/**
	 * @return the typed error for the first of Spring AI's retry exceptions in {@code e}'s cause chain,
	 *         read from its message; {@code null} when there is none
	 */
	static ProviderException fromMessage(Throwable e, String provider) {
		Throwable c = e;
		for (int depth = 0; c != null && depth < 8; depth++, c = c.getCause()) {
			if (c instanceof TransientAiException) {
				return SpringAiErrors.fromMessage(provider, c.getMessage(), true);
			}
			if (c instanceof NonTransientAiException) {
				return SpringAiErrors.fromMessage(provider, c.getMessage(), false);
			}
		}
		return null;
	}
}
