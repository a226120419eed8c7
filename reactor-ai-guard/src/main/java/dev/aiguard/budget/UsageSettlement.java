package dev.aiguard.budget;

import dev.aiguard.budget.BudgetGate.TenantBudget;
import org.jspecify.annotations.Nullable;

/**
 * What an attempt really used, once it ended: settled against what was taken from the tenant's and
 * the provider key's buckets ahead of it, and told to the meters.
 */
final class UsageSettlement {

	private final BudgetParts parts;
	private final TenantTable tenants;
	@Nullable
	private final BucketSpec providerTokens;

	UsageSettlement(BudgetParts parts, TenantTable tenants, @Nullable BucketSpec providerTokens) {
		this.parts = parts;
		this.tenants = tenants;
		this.providerTokens = providerTokens;
	}

	void settle(TenantBudget tenant, long tokens, long tenantTokensTaken, long costNanos, long tenantCostTaken,
			long providerTokensTaken) {
		BucketStore store = parts.store;
		if (store == null) {
			return;
		}
		BucketStore.Immediate sync = parts.now;
		adjust(sync, store, tenant.tokens, tenant.id, tokens - tenantTokensTaken);
		adjust(sync, store, tenant.cost, tenant.id, BudgetGate.costUnits(costNanos) - tenantCostTaken);
		tenants.touched(tenant);
		if (providerTokens != null) {
			adjust(sync, store, providerTokens, parts.spec.providerKey(), tokens - providerTokensTaken);
		}
	}

	/** More is taken regardless (a debt later refills pay first), less is given back. */
	private static void adjust(BucketStore.@Nullable Immediate sync, BucketStore store, @Nullable BucketSpec bucket,
			@Nullable String id, long more) {
		if (bucket == null || id == null || more == 0L) {
			return;
		}
		if (sync != null) {
			if (more > 0L) {
				sync.takeRegardless(bucket, id, more);
			}
			else {
				sync.giveBack(bucket, id, -more);
			}
			return;
		}
		if (more > 0L) {
			store.takeRegardless(bucket, id, more);
		}
		else {
			store.giveBack(bucket, id, -more);
		}
	}

	void record(TenantBudget tenant, String model, boolean fromProvider, long promptTokens, long completionTokens,
			long costNanos, boolean wasted) {
		String source = fromProvider ? "provider" : "counted";
		parts.metrics.tokensUsed(parts.policy, model, tenant.id, source, promptTokens, completionTokens);
		String currency = parts.spec.prices().currency();
		double amount = costNanos / 1e9;
		if (costNanos > 0L) {
			parts.metrics.cost(parts.policy, model, tenant.id, source, currency, amount);
		}
		if (wasted) {
			parts.metrics.retryCost(parts.policy, model, tenant.id, promptTokens, completionTokens, currency, amount);
		}
	}
}
