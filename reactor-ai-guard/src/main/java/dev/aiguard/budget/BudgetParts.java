package dev.aiguard.budget;

import java.util.Objects;

import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;

/**
 * What every part of a {@link BudgetGate} works with: the policy's name, its spec, the store and
 * the meters. A store that answers at once is also held as {@link #now}, which every part prefers to
 * the futures.
 */
final class BudgetParts {

	final String policy;
	final BudgetSpec spec;
	@Nullable
	final BucketStore store;
	/** The store's synchronous path, or {@code null} when it answers only through futures (or is absent). */
	final BucketStore.@Nullable Immediate now;
	final GuardMetrics metrics;

	BudgetParts(String policy, BudgetSpec spec, @Nullable BucketStore store, GuardMetrics metrics) {
		this.policy = policy;
		this.spec = spec;
		this.store = store;
		this.now = store == null ? null : store.immediate();
		this.metrics = metrics;
	}

	/**
	 * @return the store, on a path that only a bucket leads to: a spec with buckets fails at
	 *         {@link BudgetGate#create} without a store, so it is there
	 */
	BucketStore shared() {
		return Objects.requireNonNull(store, "store");
	}

	static void giveBack(BucketStore.Immediate sync, @Nullable BucketSpec bucket, String id, long units) {
		if (bucket != null) {
			sync.giveBack(bucket, id, units);
		}
	}
}
