package dev.aiguard.redis;

import java.util.concurrent.CompletableFuture;

import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore.Mode;
import dev.aiguard.budget.Take;

/**
 * What a {@link RedisBucketStore} answers while Redis cannot: in {@link Mode#FALLBACK_OPEN} the local
 * share of each budget ({@link LocalShares}, {@code 1/instances} of it, starting from this instance's
 * part of what Redis last said was left), in {@link Mode#FALLBACK_CLOSED} a refusal
 * ({@link SharedStoreUnavailableException}) and nothing recorded.
 */
final class FallbackAnswers {

	private final String name;
	private final LocalShares local;
	private final StoreHealth health;
	private final boolean open;

	FallbackAnswers(String name, LocalShares local, StoreHealth health) {
		this.name = name;
		this.local = local;
		this.health = health;
		this.open = health.fallbackMode() == Mode.FALLBACK_OPEN;
	}

	/** @return {@code spec} as this instance's local share of it, while Redis is down */
	private BucketSpec aligned(BucketSpec spec, String id) {
		return local.aligned(spec, id, health.fallbacks());
	}

	/** @return the local shares (also told what the shared buckets had left) */
	LocalShares local() {
		return local;
	}

	CompletableFuture<Take> tryTake(BucketSpec spec, String id, long units) {
		if (!open) {
			return refused();
		}
		return local.store().tryTake(aligned(spec, id), id, units);
	}

	CompletableFuture<Take> reserve(BucketSpec spec, String id, long units, long maxWaitNanos) {
		if (!open) {
			return refused();
		}
		return local.store().reserve(aligned(spec, id), id, units, maxWaitNanos);
	}

	CompletableFuture<Long> available(BucketSpec spec, String id) {
		return open ? local.store().available(aligned(spec, id), id)
				: CompletableFuture.completedFuture(0L);
	}

	/** @return {@code write} run on the local share while failing open; nothing while failing closed */
	CompletableFuture<Void> update(Runnable write) {
		if (open) {
			try {
				write.run();
			}
			catch (RuntimeException e) {
				return CompletableFuture.failedFuture(e);
			}
		}
		return CompletableFuture.completedFuture(null);
	}

	private <T> CompletableFuture<T> refused() {
		return CompletableFuture.failedFuture(new SharedStoreUnavailableException(name, health.fallbackReason()));
	}
}
