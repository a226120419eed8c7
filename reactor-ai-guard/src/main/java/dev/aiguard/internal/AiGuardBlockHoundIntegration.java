package dev.aiguard.internal;

import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * Tells BlockHound, when an application installs it, about the one wait the library knowingly
 * allows on a non-blocking thread: Caffeine's put, used by {@code ResponseCache.caffeine()} to
 * store a completed answer, spins ({@code Thread.onSpinWait}) when it meets an entry that eviction
 * has retired but not yet unlinked, until the evicting thread finishes unlinking it. That is a
 * lock-free retry of the same nature as a {@code ConcurrentHashMap} bin lock (which BlockHound
 * cannot see), not a wait for I/O or for another request.
 *
 * <p>Caffeine's write-buffer back-pressure is not allowed: when writers outrun its maintenance,
 * {@code afterWrite} spins and then takes the eviction lock, and BlockHound still reports that.
 * At one store per completed answer it does not happen.
 *
 * <p>Registered through {@code META-INF/services}; BlockHound is an optional dependency, so this
 * class is only loaded by {@code BlockHound.install()}.
 */
public final class AiGuardBlockHoundIntegration implements BlockHoundIntegration {

	static final String CAFFEINE_BOUNDED_CACHE = "com.github.benmanes.caffeine.cache.BoundedLocalCache";

	@Override
	public void applyTo(BlockHound.Builder builder) {
		builder.allowBlockingCallsInside(CAFFEINE_BOUNDED_CACHE, "put");
		builder.disallowBlockingCallsInside(CAFFEINE_BOUNDED_CACHE, "afterWrite");
	}
}
