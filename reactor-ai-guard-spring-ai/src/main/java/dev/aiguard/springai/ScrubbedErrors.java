package dev.aiguard.springai;

import dev.aiguard.core.Secrets;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.provider.ProviderFormatException;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.provider.RateLimitedException;
import org.jspecify.annotations.Nullable;

/**
 * Errors without credentials: an error whose message, or any cause's message, holds a known secret
 * or text shaped like a credential ({@link Secrets#scrub}) is replaced by a copy that says the same
 * with the secret {@value Secrets#REDACTED}. The library's typed errors are copied as their own type
 * with every field kept; any other error becomes a {@link RedactedException} naming its class.
 * An error with nothing to hide is returned as it is, so the common path allocates nothing.
 */
final class ScrubbedErrors {

	/** How many causes are looked at; a cause cycle cannot loop. */
	private static final int MAX_DEPTH = 8;

	private ScrubbedErrors() {
	}

	static Throwable scrub(Throwable error, String... knownSecrets) {
		return holdsSecret(error, knownSecrets) ? copy(error, knownSecrets, 0) : error;
	}

	private static boolean holdsSecret(Throwable error, String... knownSecrets) {
		Throwable c = error;
		for (int depth = 0; c != null && depth < MAX_DEPTH; depth++, c = c.getCause()) {
			if (Secrets.containsSecret(c.getMessage(), knownSecrets)) {
				return true;
			}
			if (c instanceof ProviderException p && (Secrets.containsSecret(p.errorType(), knownSecrets)
					|| Secrets.containsSecret(p.errorCode(), knownSecrets))) {
				return true;
			}
		}
		return false;
	}

	private static Throwable copy(Throwable e, String[] secrets, int depth) {
		String message = scrubbed(e.getMessage(), secrets);
		Throwable cause = e.getCause() == null || e.getCause() == e || depth + 1 >= MAX_DEPTH ? null
				: copy(e.getCause(), secrets, depth + 1);
		if (e instanceof ProviderException p) {
			ProviderException typed = copy(p, message, cause, secrets);
			if (typed != null) {
				return typed;
			}
		}
		return new RedactedException(e, message, cause);
	}

	private static @Nullable ProviderException copy(ProviderException p, String message, @Nullable Throwable cause,
			String[] secrets) {
		String provider = p.provider();
		String type = scrubbed(p.errorType(), secrets);
		String code = scrubbed(p.errorCode(), secrets);
		if (p instanceof RateLimitedException r) {
			return new RateLimitedException(provider, p.status(), type, code, message, p.retryAfter().orElse(null),
					r.rateLimits());
		}
		if (p instanceof ContextLengthExceededException c) {
			return new ContextLengthExceededException(provider, p.status(), type, code, message, c.limit().orElse(-1),
					c.actual().orElse(-1));
		}
		if (p instanceof ProviderOverloadedException) {
			return new ProviderOverloadedException(provider, p.status(), type, message, p.retryAfter().orElse(null));
		}
		if (p instanceof ProviderServerException) {
			return new ProviderServerException(provider, p.status(), type, code, message, p.retryAfter().orElse(null));
		}
		if (p instanceof ProviderClientException) {
			return new ProviderClientException(provider, p.status(), type, code, message);
		}
		if (p instanceof ProviderStreamException) {
			return new ProviderStreamException(provider, type, code, message);
		}
		if (p instanceof ProviderConnectionException) {
			return new ProviderConnectionException(provider, message, cause);
		}
		if (p instanceof ProviderFormatException) {
			return new ProviderFormatException(provider, message, cause);
		}
		return null;
	}

	private static @Nullable String scrubbed(@Nullable String text, String[] secrets) {
		return text == null ? null : Secrets.scrub(text, secrets);
	}

	/**
	 * Stands in for an error whose message held a secret: the original's class name and scrubbed
	 * message as its message, the original's stack trace, a scrubbed copy of its cause.
	 */
	static final class RedactedException extends RuntimeException {

		private static final long serialVersionUID = 1L;

		RedactedException(Throwable original, @Nullable String message, @Nullable Throwable cause) {
			super(original.getClass().getName() + (message == null ? "" : ": " + message), cause);
			setStackTrace(original.getStackTrace());
		}
	}
}
