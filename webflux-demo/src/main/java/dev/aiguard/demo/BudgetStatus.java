package dev.aiguard.demo;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;

import dev.aiguard.GuardPolicy;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.BudgetGate;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.ProviderLimits;
import dev.aiguard.budget.TenantSummary;
import dev.aiguard.test.mock.MockModelServer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import org.jspecify.annotations.Nullable;

/**
 * The {@code budgets} section of {@code GET /api/guard}: how many tenants the chat policy holds, the
 * {@value #TOP_TENANTS} with the least left ({@code BudgetGate.summary}: the section stays small
 * whatever the number of tenants, and the page polls it every second) and the provider key, each
 * limit's capacity and what its bucket holds now (negative while in debt), where the buckets live
 * ({@link BucketStore.Mode}), how often requests waited for the key's turn, how many a budget
 * refused, and the 429s the mock's provider rate limit sent.
 */
final class BudgetStatus {

	/** The most drained tenants listed; {@code tenantCount} says how many there are. */
	static final int TOP_TENANTS = 10;
	/** The provider buckets' limits; each has its gauge {@code aiguard.budget.remaining.<limit>}. */
	private static final List<String> PROVIDER_LIMITS = List.of("requests", "tokens");

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
		Map<String, Map<String, Long>> providers = new TreeMap<>();
		for (String limit : PROVIDER_LIMITS) {
			for (Gauge g : meters.find("aiguard.budget.remaining." + limit).tag("policy", name).tag("scope", "provider")
					.gauges()) {
				String id = g.getId().getTag("id");
				if (id != null) {
					providers.computeIfAbsent(id, k -> new TreeMap<>()).put(limit, (long) g.value());
				}
			}
		}
		List<Map<String, Object>> tenantList = new ArrayList<>();
		BudgetGate gate = p.budgetGate();
		TenantSummary summary = gate == null ? null : gate.summary(TOP_TENANTS);
		if (summary != null) {
			for (TenantSummary.TenantStatus t : summary.mostDrained()) {
				Map<String, Long> capacities = new LinkedHashMap<>();
				Map<String, Long> remaining = new TreeMap<>();
				t.limits().forEach(l -> {
					capacities.put(l.limit(), l.capacity());
					remaining.put(l.limit(), l.remaining());
				});
				tenantList.add(entry("id", t.id(), capacities, remaining));
			}
		}
		b.put("tenantCount", summary == null ? 0 : summary.tenants());
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
