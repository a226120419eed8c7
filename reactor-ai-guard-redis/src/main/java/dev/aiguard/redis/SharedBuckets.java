package dev.aiguard.redis;

import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.TokensInheritanceStrategy;
import io.github.bucket4j.distributed.AsyncBucketProxy;
import io.github.bucket4j.distributed.proxy.AsyncProxyManager;
import io.github.bucket4j.distributed.proxy.optimization.Optimizations;

import dev.aiguard.budget.Bucket4jSpecs;
import dev.aiguard.budget.BucketSpec;

/**
 * Bucket4j's proxies of a {@link RedisBucketStore}'s shared buckets: one per Redis key, built for the
 * spec it was last asked with, and carrying that spec's version so a redeploy with other limits moves
 * the bucket in Redis (keeping its fill in proportion) and an instance on older limits does not move
 * it back.
 */
final class SharedBuckets {

	/** A Redis bucket and the spec it was built for. */
	private record Remote(BucketSpec spec, AsyncBucketProxy bucket) {
	}

	/** Last version handed out in this JVM: versions only grow, even for two specs met in one microsecond. */
	private static final AtomicLong LAST_VERSION = new AtomicLong();

	/**
	 * The most proxies kept. A proxy holds no budget (the bucket is in Redis), so past this many the
	 * store drops a few others for each new one and rebuilds them when their key comes back: any number
	 * of distinct tenants leaves the map bounded.
	 */
	static final int MAX_PROXIES = 10_000;

	/** How many other proxies a new one past the limit drops: more than one, so the map shrinks back. */
	private static final int DROPPED_PER_NEW = 4;

	private final ConcurrentHashMap<String, Remote> remotes = new ConcurrentHashMap<>();
	private final ConcurrentHashMap<BucketSpec, Long> versions = new ConcurrentHashMap<>();

	/** @return the proxy of {@code key} for {@code spec}, built on {@code pm} the first time */
	AsyncBucketProxy get(AsyncProxyManager<String> pm, String key, BucketSpec spec) {
		Remote remote = remotes.get(key);
		if (remote == null || !remote.spec.equals(spec)) {
			if (remote == null && remotes.size() >= MAX_PROXIES) {
				Bounded.dropOthers(remotes, key, DROPPED_PER_NEW);
			}
			remote = remotes.compute(key, (k, old) -> old != null && old.spec.equals(spec) ? old
					: new Remote(spec, newBucket(pm, k, spec)));
		}
		return remote.bucket;
	}

	/** @return the proxies held */
	int size() {
		return remotes.size();
	}

	private AsyncBucketProxy newBucket(AsyncProxyManager<String> pm, String key, BucketSpec spec) {
		BucketConfiguration configuration = Bucket4jSpecs.configuration(spec);
		// the version is when this instance first met the spec: a newer spec (a redeploy) replaces the
		// limits stored in Redis, keeping the fill in proportion, and an instance still on an older spec
		// does not move them back
		long version = versions.computeIfAbsent(spec, s -> nextVersion());
		return pm.builder()
				// requests for one key that arrive while a command for it is in flight go to Redis as one
				// batch: without it, concurrent compare-and-swaps on a hot key retry each other
				.withOptimization(Optimizations.batching())
				.withImplicitConfigurationReplacement(version, TokensInheritanceStrategy.PROPORTIONALLY)
				.build(key, () -> CompletableFuture.completedFuture(configuration));
	}

	/** @return the wall clock in microseconds, above every version handed out before in this JVM */
	private static long nextVersion() {
		Instant now = Instant.now();
		long micros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000L;
		return LAST_VERSION.updateAndGet(last -> Math.max(last + 1, micros));
	}
}
