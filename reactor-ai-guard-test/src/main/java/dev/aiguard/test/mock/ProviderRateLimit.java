package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.Objects;

/**
 * The rate limit of the mock's provider key, the way OpenAI enforces one: a fixed window in which
 * at most {@code requests} chat requests and {@code tokens} tokens are served. Immutable; a bad
 * value fails with an {@link IllegalArgumentException} naming the field and the value.
 *
 * <pre>{@code
 * // 2 requests and 20 000 tokens every 4 seconds; the third request in a window gets a 429
 * mock.faults(mock.faults().withProviderRateLimit(new ProviderRateLimit(2, 20_000, Duration.ofSeconds(4))));
 * }</pre>
 *
 * A window starts with the first chat request after the previous one ended. Each request admitted
 * is charged one request and its tokens: the prompt, estimated as characters / 4 (the library's
 * {@code TokenCounter.estimate()}), plus the content tokens of the answer it is about to send,
 * charged in full when it is admitted. A request that does not fit what is left of the window is
 * refused with 429, OpenAI's {@code rate_limit_exceeded} body and {@code Retry-After} (the seconds
 * until the window ends, rounded up), and charges nothing. Every OpenAI chat answer (refused or not)
 * carries the window's {@code x-ratelimit-limit-*}, {@code x-ratelimit-remaining-*} and
 * {@code x-ratelimit-reset-*} headers for requests and tokens, the resets written as OpenAI writes
 * them ({@code 1s}, {@code 6m0s}, {@code 250ms}).
 *
 * @param requests chat requests served per window, at least 1
 * @param tokens prompt and answer tokens served per window, at least 1
 * @param window the length of a window, 1 ms to 1 hour
 */
public record ProviderRateLimit(int requests, int tokens, Duration window) {

	/** The longest window accepted. */
	static final Duration MAX_WINDOW = Duration.ofHours(1);

	public ProviderRateLimit {
		if (requests < 1) {
			throw new IllegalArgumentException("requests must be at least 1, was " + requests);
		}
		if (tokens < 1) {
			throw new IllegalArgumentException("tokens must be at least 1, was " + tokens);
		}
		Objects.requireNonNull(window, "window");
		if (window.toMillis() < 1 || window.compareTo(MAX_WINDOW) > 0) {
			throw new IllegalArgumentException("window must be between 1ms and 1h, was " + window);
		}
	}
}
