package dev.aiguard.fallback;

import java.util.List;
import java.util.Objects;

import reactor.core.publisher.Mono;

import org.jspecify.annotations.Nullable;

/**
 * Where complete realtime answers are kept so the ladder can replay them
 * ({@link Fallback#cache(ResponseCache)}). Keys come from {@link CacheKeys} or a function of your
 * own; values are the answer's chunks in order.
 *
 * <pre>{@code
 * ResponseCache<ChatChunk> cache = ResponseCache.caffeine(ResponseCacheSpec.defaults()
 *     .maximumEntries(10_000)
 *     .timeToLive(Duration.ofMinutes(30))
 *     .maxChunksPerEntry(4_096));
 * }</pre>
 *
 * An implementation backed by a remote or blocking store returns {@code true} from
 * {@link #mayBlock()}; the ladder then calls it on the blocking scheduler. A lookup that errors or
 * never completes is a failing step (give the chain a step timeout), never a failed request.
 *
 * @param <T> the chunk type
 */
public interface ResponseCache<T> {

	/**
	 * @param key a key from the request's {@link FallbackRequest#cacheKey()}
	 * @return the stored chunks, or empty when nothing is stored under {@code key}
	 */
	Mono<List<T>> lookup(Object key);

	/**
	 * Stores a complete answer, replacing any earlier one. An implementation may decline (for
	 * example an answer longer than {@link #maxChunksPerEntry()}).
	 *
	 * @param key the request's key
	 * @param chunks the answer's chunks, in order; the caller does not change them afterwards
	 */
	void store(Object key, List<T> chunks);

	/** @return the most chunks one stored answer may have; longer answers are not stored */
	default int maxChunksPerEntry() {
		return Integer.MAX_VALUE;
	}

	/**
	 * @return the class of the chunks stored, when known ({@code Object.class} when not): the guard
	 *         refuses, when it is built, a cache whose known type does not fit its own chunk type
	 */
	default Class<?> chunkType() {
		return Object.class;
	}

	/** @return whether {@link #lookup} or {@link #store} may block the calling thread */
	default boolean mayBlock() {
		return false;
	}

	/** @return an in-memory cache on Caffeine with {@link ResponseCacheSpec#defaults()} */
	static <T> ResponseCache<T> caffeine() {
		return caffeine(ResponseCacheSpec.defaults());
	}

	/**
	 * An in-memory cache on Caffeine, bounded in entries, time to live and chunks per entry.
	 * Caffeine is an optional dependency of this library: add
	 * {@code com.github.ben-manes.caffeine:caffeine} to use this.
	 *
	 * @throws IllegalStateException when Caffeine is not on the classpath
	 */
	static <T> ResponseCache<T> caffeine(ResponseCacheSpec spec) {
		return caffeine(null, spec);
	}

	/**
	 * As {@link #caffeine(ResponseCacheSpec)}, for chunks of {@code chunkType}, which the guard checks
	 * against its inspector's.
	 *
	 * @throws IllegalStateException when Caffeine is not on the classpath
	 */
	static <T> ResponseCache<T> caffeine(@Nullable Class<T> chunkType, ResponseCacheSpec spec) {
		Objects.requireNonNull(spec, "spec");
		try {
			Class.forName("com.github.benmanes.caffeine.cache.Caffeine", false, ResponseCache.class.getClassLoader());
		}
		catch (ClassNotFoundException | LinkageError absent) {
			throw new IllegalStateException("ResponseCache.caffeine() needs com.github.ben-manes.caffeine:caffeine "
					+ "on the classpath; add it, or implement ResponseCache", absent);
		}
		// only now is the class that links against Caffeine loaded
		return new CaffeineResponseCache<>(spec, chunkType != null ? chunkType : Object.class);
	}
}
