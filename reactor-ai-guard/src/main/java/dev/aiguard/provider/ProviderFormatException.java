package dev.aiguard.provider;

import org.jspecify.annotations.Nullable;

/**
 * An event of a {@code 200} stream could not be understood: its data is not JSON, or not a JSON
 * object. The message names the event (its position, type and id, and the start of its data).
 * Not retryable: a server that speaks another format will not start speaking ours.
 *
 * <pre>{@code
 * catch (ProviderFormatException e) {
 *     log.error("incompatible model server: {}", e.getMessage());
 * }
 * }</pre>
 */
public final class ProviderFormatException extends ProviderException {

	private static final long serialVersionUID = 1L;

	public ProviderFormatException(String provider, String message, @Nullable Throwable cause) {
		super(provider, -1, null, null, message, null, cause);
	}

	@Override
	public boolean retryable() {
		return false;
	}
}
