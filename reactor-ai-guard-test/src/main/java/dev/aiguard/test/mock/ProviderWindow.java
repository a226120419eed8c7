package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;

import dev.aiguard.provider.RateLimits;
import org.jspecify.annotations.Nullable;

/**
 * The fixed window of {@link ProviderRateLimit}: what the chat requests of the current window took.
 * Lock-free: the window is an immutable value, replaced by compare-and-set, so requests arriving at
 * once on different event loops are each counted once and never over-admitted.
 */
final class ProviderWindow {

	private final LongSupplier nanoClock;
	private final AtomicReference<@Nullable Used> used = new AtomicReference<>();

	ProviderWindow(LongSupplier nanoClock) {
		this.nanoClock = nanoClock;
	}

	/**
	 * Admits one request costing {@code tokens} into the window of {@code limit}, or refuses it.
	 *
	 * @return the verdict, with the headers the answer carries
	 */
	Verdict take(ProviderRateLimit limit, long tokens) {
		long windowNanos = limit.window().toNanos();
		while (true) {
			Used current = used.get();
			long now = nanoClock.getAsLong();
			Used base = current == null || !current.limit.equals(limit) || now - current.start >= windowNanos
					? new Used(limit, now, 0, 0L) : current;
			long resetNanos = Math.max(0L, base.start + windowNanos - now);
			if (base.requests + 1 > limit.requests() || base.tokens + tokens > limit.tokens()) {
				return new Verdict(false, base.headers(resetNanos), retryAfterSeconds(resetNanos));
			}
			Used next = new Used(limit, base.start, base.requests + 1, base.tokens + tokens);
			if (used.compareAndSet(current, next)) {
				return new Verdict(true, next.headers(resetNanos), 0);
			}
		}
	}

	/** Forgets the current window: the next request starts a new one. */
	void reset() {
		used.set(null);
	}

	/** @return whole seconds until the window ends, rounded up, at least 1 */
	static int retryAfterSeconds(long resetNanos) {
		long seconds = (resetNanos + 999_999_999L) / 1_000_000_000L;
		return (int) Math.max(1L, Math.min(seconds, 3_600L));
	}

	/**
	 * @param admitted whether the request is served
	 * @param headers the {@code x-ratelimit-*} values after the request
	 * @param retryAfterSeconds the {@code Retry-After} of a refusal, 0 when admitted
	 */
	record Verdict(boolean admitted, RateLimits headers, int retryAfterSeconds) {
	}

	/** What the requests of the window starting at {@code start} took. */
	private record Used(ProviderRateLimit limit, long start, int requests, long tokens) {

		RateLimits headers(long resetNanos) {
			// a reset in whole milliseconds, never 0 while the window lasts
			Duration reset = Duration.ofMillis(Math.max(1L, (resetNanos + 999_999L) / 1_000_000L));
			return new RateLimits(limit.requests(), Math.max(0, limit.requests() - requests), reset, limit.tokens(),
					Math.max(0L, limit.tokens() - tokens), reset);
		}
	}
}
