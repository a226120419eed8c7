package dev.aiguard.fallback;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * {@link ResponseCache} on a Caffeine cache. Lookups and stores never block: Caffeine does its
 * eviction work on its own executor (which is also why its size settles asynchronously).
 */
final class CaffeineResponseCache<T> implements ResponseCache<T> {

	private final Cache<Object, List<T>> cache;
	private final ResponseCacheSpec spec;

	private final Class<?> chunkType;

	CaffeineResponseCache(ResponseCacheSpec spec, Class<?> chunkType) {
		this.chunkType = chunkType;
		this.spec = spec;
		Caffeine<Object, Object> builder = Caffeine.newBuilder()
				.maximumSize(spec.maximumEntries())
				.expireAfterWrite(spec.timeToLive());
		Scheduler clock = spec.clock();
		if (clock != null) {
			builder.ticker(() -> clock.now(TimeUnit.NANOSECONDS));
		}
		this.cache = builder.build();
	}

	@Override
	public Mono<List<T>> lookup(Object key) {
		Objects.requireNonNull(key, "key");
		return Mono.fromSupplier(() -> cache.getIfPresent(key));
	}

	@Override
	public void store(Object key, List<T> chunks) {
		Objects.requireNonNull(key, "key");
		Objects.requireNonNull(chunks, "chunks");
		if (chunks.isEmpty() || chunks.size() > spec.maxChunksPerEntry()) {
			return;
		}
		// one compact copy per stored answer; also makes the value immune to the caller's list
		cache.put(key, List.copyOf(chunks));
	}

	@Override
	public int maxChunksPerEntry() {
		return spec.maxChunksPerEntry();
	}

	/** Runs Caffeine's pending maintenance (eviction) now. */
	void cleanUp() {
		cache.cleanUp();
	}

	long estimatedSize() {
		return cache.estimatedSize();
	}

	@Override
	public String toString() {
		return "CaffeineResponseCache" + spec;
	}

	@Override
	public Class<?> chunkType() {
		return chunkType;
	}
}
