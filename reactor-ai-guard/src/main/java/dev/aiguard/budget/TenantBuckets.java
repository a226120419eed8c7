package dev.aiguard.budget;

import dev.aiguard.budget.BudgetGate.TenantBudget;
import org.jspecify.annotations.Nullable;

/**
 * A tenant's buckets in the store: looked up once when the {@link TenantTable} adds the tenant (with
 * a gauge for each), read for the summary, and let go when the table drops the tenant.
 */
final class TenantBuckets {

	private final BudgetParts parts;

	TenantBuckets(BudgetParts parts) {
		this.parts = parts;
	}

	/** @return a new tenant's budget, its buckets resolved in a store that answers at once */
	TenantBudget newTenant(String id) {
		TenantBudget t = new TenantBudget(id, parts.spec.limitsOf(id), parts.spec);
		BucketStore.Immediate sync = parts.now;
		if (sync != null) {
			t.requestsAt = resolve(sync, t.requests, id);
			t.tokensAt = resolve(sync, t.tokens, id);
			t.costAt = resolve(sync, t.cost, id);
		}
		if (parts.store != null) {
			for (int i = 0; i < 3; i++) {
				BucketSpec b = t.bucket(i);
				if (b != null) {
					int at = i;
					parts.metrics.budgetRemaining(parts.policy, "tenant", id, BudgetGate.LIMITS[i],
							sync != null ? () -> sync.available(b, id) : () -> t.seen[at]);
				}
			}
		}
		return t;
	}

	private static BucketStore.Immediate.@Nullable Resolved resolve(BucketStore.Immediate sync,
			@Nullable BucketSpec bucket, String id) {
		return bucket == null ? null : sync.resolve(bucket, id);
	}

	/** Lets a tenant's buckets go when they are full (or whatever they hold): see {@link TenantTable}. */
	boolean release(TenantBudget t, boolean evenIfDrained) {
		BucketStore.Immediate sync = parts.now;
		if (sync != null) {
			for (int i = 0; i < 3; i++) {
				BucketSpec b = t.bucket(i);
				if (b != null && !sync.forget(b, t.id, evenIfDrained)) {
					return false; // the ones already let go were full: a new one starts the same
				}
			}
		}
		if (parts.store != null) {
			parts.metrics.budgetForgotten(parts.policy, "tenant", t.id);
		}
		return true;
	}

	/** @return what the tenant's bucket {@code i} (requests, tokens, cost) holds now, or last said it held */
	long remaining(TenantBudget t, int i) {
		BucketSpec b = t.bucket(i);
		BucketStore.Immediate sync = parts.now;
		return b == null ? 0L : sync != null ? sync.available(b, t.id) : t.seen[i];
	}
}
