package dev.aiguard.redis;

import java.util.concurrent.ConcurrentHashMap;

import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.LocalBucketStore;

/**
 * The local fallback of a {@link RedisBucketStore}: each shared budget's share of
 * {@code capacity / instances} in an in-process store. A bucket this instance used while shared starts
 * each fallback from this instance's part of what Redis last said was left, so a fallback is no burst.
 */
final class LocalShares {

	private final int instances;
	private final LocalBucketStore store;
	private final ConcurrentHashMap<BucketSpec, BucketSpec> shares = new ConcurrentHashMap<>();
	/**
	 * The most buckets whose last shared reading is kept. Past it, a new one drops a few others: such a
	 * bucket's next fallback starts from this instance's full share instead of its part of what Redis
	 * last said (a bounded burst of 1/instances of one bucket), and its local share is let go when full.
	 */
	static final int MAX_READINGS = 10_000;

	/** How many other readings a new one past the limit drops: more than one, so the map shrinks back. */
	private static final int DROPPED_PER_NEW = 4;

	/** Spec and id: what the shared bucket had left at the last take, and the fallback it was applied in. */
	private final ConcurrentHashMap<Key, long[]> lastShared = new ConcurrentHashMap<>();

	/** A shared bucket: its spec and id. */
	private record Key(BucketSpec spec, String id) {
	}

	LocalShares(int instances, LocalBucketStore store) {
		this.instances = instances;
		this.store = store;
	}

	/** @return the in-process store holding the shares */
	LocalBucketStore store() {
		return store;
	}

	/**
	 * @return the spec of {@code spec}'s share: the same name, period and refill, and
	 *         {@code capacity / instances} units (at least one)
	 */
	BucketSpec share(BucketSpec spec) {
		BucketSpec share = shares.get(spec);
		return share != null ? share : shares.computeIfAbsent(spec, this::newShare);
	}

	private BucketSpec newShare(BucketSpec spec) {
		BucketSpec s = BucketSpec.of(spec.name(), Math.max(1, spec.capacity() / instances), spec.period());
		return spec.refill() == BucketSpec.Refill.INTERVALLY ? s.intervally() : s;
	}

	/** Remembers what a shared bucket had left, for the share should Redis go down. */
	void saw(BucketSpec spec, String id, long remaining) {
		Key key = new Key(spec, id);
		long[] seen = lastShared.get(key);
		if (seen == null) {
			if (lastShared.size() >= MAX_READINGS) {
				for (Key dropped : Bounded.dropOthers(lastShared, key, DROPPED_PER_NEW)) {
					BucketStore.Immediate sync = store.immediate();
					if (sync != null) {
						sync.forget(share(dropped.spec), dropped.id, false);
					}
				}
			}
			seen = lastShared.computeIfAbsent(key, k -> new long[] {Long.MAX_VALUE, -1L});
		}
		seen[0] = remaining;
	}

	/** @return the readings held */
	int readings() {
		return lastShared.size();
	}

	/**
	 * The share of {@code spec}, lowered, once per fallback, to this instance's part of what the shared
	 * bucket last had left: a fallback never hands out a full bucket the shared one had spent.
	 *
	 * @param fallback the number of the store's current fallback (how many it has had)
	 */
	BucketSpec aligned(BucketSpec spec, String id, long fallback) {
		BucketSpec share = share(spec);
		long[] seen = lastShared.get(new Key(spec, id));
		if (seen != null && seen[1] != fallback) {
			synchronized (seen) {
				if (seen[1] != fallback) {
					seen[1] = fallback;
					long target = Math.max(0L, seen[0]) / instances;
					BucketStore.Immediate sync = store.immediate();
					long held = sync.available(share, id);
					if (held > target) {
						sync.takeRegardless(share, id, held - target);
					}
				}
			}
		}
		return share;
	}
}
