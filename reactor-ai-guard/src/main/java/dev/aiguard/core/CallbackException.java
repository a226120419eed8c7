package dev.aiguard.core;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A callback the application gave the guard failed: it threw, or returned {@code null} where it
 * must not. The message and {@link #callback()} name the callback; the cause is what it threw.
 * The guard never retries this error (the callback would most likely fail again): the attempt
 * fails with it, and the request ends with it — marked partial when tokens were delivered, or
 * answered by the fallback ladder when one is entered — so a bug in application code shows up as
 * a failed attempt, never as a hang.
 *
 * <pre>{@code
 * guard.call(request, client::stream)
 *     .doOnError(CallbackException.class, e -> log.error("bug in {}", e.callback(), e));
 * }</pre>
 *
 * <p>Callbacks that only observe (meters, report and breaker listeners, signals) never fail a
 * stream: what they throw is passed to {@code Hooks.onErrorDropped} and the stream goes on.
 */
public class CallbackException extends RuntimeException implements RetryHint {

	private static final long serialVersionUID = 1L;

	private final String callback;

	/**
	 * @param callback which callback failed, e.g. {@code "ChunkInspector.flags"}
	 * @param cause what it threw, or {@code null} when it broke its contract without throwing
	 * @param problem what went wrong, in words
	 */
	public CallbackException(String callback, String problem, @Nullable Throwable cause) {
		super(Objects.requireNonNull(callback, "callback") + " " + Objects.requireNonNull(problem, "problem"), cause);
		this.callback = callback;
	}

	/**
	 * @return {@code false}: the callback would most likely fail again, whatever it threw (the retry
	 *         rules stop at the first {@link RetryHint} in a cause chain, so an I/O error inside does
	 *         not make it retryable)
	 */
	@Override
	public boolean retryable() {
		return false;
	}

	/** @return which callback failed, e.g. {@code "ChunkInspector.flags"} or {@code "TruncationSpec.truncator"} */
	public String callback() {
		return callback;
	}

	/** Wraps what a callback threw, unless it already is a {@code CallbackException}. */
	public static CallbackException threw(String callback, Throwable cause) {
		if (cause instanceof CallbackException) {
			return (CallbackException) cause;
		}
		return new CallbackException(callback, "threw " + cause, cause);
	}

	/** For a callback that returned {@code null} where a value is required. */
	public static CallbackException returnedNull(String callback) {
		return new CallbackException(callback, "returned null", null);
	}
}
