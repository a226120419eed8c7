package dev.aiguard.demo;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

import dev.aiguard.GuardPolicy;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.ProviderLimits;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.test.mock.MockModelServer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.jspecify.annotations.Nullable;

/**
 * The {@code budgets} section of {@code GET /api/guard}: for every tenant the chat policy has seen
 * and for its provider key, each limit's capacity and what its bucket holds now (the guard's
 * {@code aiguard.budget.remaining} gauges, negative while in debt), where the buckets live
 * ({@link BucketStore.Mode}), how often requests waited for the key's turn, how many a budget
 * refused, and the 429s the mock's provider rate limit sent.
 */
final class BudgetStatus {

	private final Supplier<GuardPolicy> policy;
	private final MeterRegistry meters;
	@Nullable
	private final MockModelServer mock;

	/**
	 * @param policy the chat policy in force (live changes included)
	 * @param meters where the guard registers its meters
	 * @param mock the embedded mock, or {@code null} with a real upstream
	 */
	BudgetStatus(Supplier<GuardPolicy> policy, MeterRegistry meters, @Nullable MockModelServer mock) {
		this.policy = policy;
		this.meters = meters;
		this.mock = mock;
	}

	/** @return the section, or {@code null} when the policy has no budget */
	@Nullable
	Map<String, Object> snapshot() {
		GuardPolicy p = policy.get();
		BudgetSpec spec = p.budget();
		if (spec == null) {
			return null;
		}
		String name = p.name();
		Map<String, Object> b = new LinkedHashMap<>();
		BucketStore store = p.bucketStore();
		b.put("storeMode", store == null ? null : store.mode().name());
		b.put("defaultTenant", spec.defaultTenant());
		Map<String, Map<String, Long>> tenants = new TreeMap<>();
		Map<String, Map<String, Long>> providers = new TreeMap<>();
		for (Gauge g : meters.find("aiguard.budget.remaining").tag("policy", name).gauges()) {
			String scope = g.getId().getTag("scope");
			String id = g.getId().getTag("id");
			String limit = g.getId().getTag("limit");
			if (id == null || limit == null) {
				continue;
			}
			Map<String, Map<String, Long>> into = "provider".equals(scope) ? providers : tenants;
			into.computeIfAbsent(id, k -> new TreeMap<>()).put(limit, (long) g.value());
		}
		List<Map<String, Object>> tenantList = new ArrayList<>();
		tenants.forEach((id, remaining) -> tenantList.add(entry("id", id, tenantLimits(spec.limitsOf(id)), remaining)));
		b.put("tenants", tenantList);
		List<Map<String, Object>> providerList = new ArrayList<>();
		providers.forEach((key, remaining) -> providerList.add(entry("key", key, providerLimits(spec.provider()), remaining)));
		b.put("providers", providerList);
		long throttled = 0;
		double throttledMs = 0;
		for (Timer t : meters.find("aiguard.budget.throttled").tag("policy", name).timers()) {
			throttled += t.count();
			throttledMs += t.totalTime(java.util.concurrent.TimeUnit.MILLISECONDS);
		}
		b.put("throttled", throttled);
		b.put("throttledMs", Math.round(throttledMs));
		Map<String, Long> refusals = new LinkedHashMap<>();
		refusals.put("tenant", refused(name, "tenant"));
		refusals.put("provider", refused(name, "provider"));
		b.put("refusals", refusals);
		MockModelServer m = mock;
		b.put("provider429s", m == null ? null : m.stats().rateLimitRefusals());
		return b;
	}

	private long refused(String policyName, String scope) {
		return Math.round(meters.find("aiguard.budget.rejected").tag("policy", policyName).tag("scope", scope)
			.counters().stream().mapToDouble(c -> c.count()).sum());
	}

	/** The capacities of a tenant's budgets, as the gauges name them; the cost bucket counts micro-units. */
	private static Map<String, Long> tenantLimits(TenantLimits limits) {
		Map<String, Long> m = new LinkedHashMap<>();
		m.put("requests", limits.requestsPerMinute());
		m.put("tokens", limits.tokensPerMinute());
		m.put("cost", limits.costPerDay() == null ? 0L : limits.costPerDay().movePointRight(6).longValue());
		return m;
	}

	private static Map<String, Long> providerLimits(ProviderLimits limits) {
		Map<String, Long> m = new LinkedHashMap<>();
		m.put("requests", limits.requestsPerMinute());
		m.put("tokens", limits.tokensPerMinute());
		return m;
	}

	/** @return {@code {idName: id, limits: [{limit, capacity, remaining, per}...]}} for the gauges present */
	private static Map<String, Object> entry(String idName, String id, Map<String, Long> capacities,
			Map<String, Long> remaining) {
		Map<String, Object> e = new LinkedHashMap<>();
		e.put(idName, id);
		List<Map<String, Object>> limits = new ArrayList<>();
		remaining.forEach((limit, left) -> {
			Map<String, Object> l = new LinkedHashMap<>();
			l.put("limit", limit);
			l.put("capacity", capacities.get(limit));
			l.put("remaining", left);
			l.put("per", "cost".equals(limit) ? "day" : "minute");
			limits.add(l);
		});
		e.put("limits", limits);
		return e;
	}
}
