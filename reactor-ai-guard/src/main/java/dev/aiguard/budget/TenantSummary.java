package dev.aiguard.budget;

import java.util.List;

/**
 * What a status view shows of a policy's tenants: how many the gate holds (never more than about
 * its cap) and the few that have the least left, instead of every tenant. Its size depends on
 * {@code top}, not on how many tenants there are.
 *
 * <pre>{@code
 * TenantSummary s = policy.budgetGate().summary(10);
 * s.tenants();       // 2 417 held now (of at most s.maxTenants())
 * s.mostDrained();   // the 10 with the smallest share left of a limit, least first
 * }</pre>
 *
 * @param tenants the tenants held now
 * @param maxTenants the most held at once ({@link BudgetSpec#maxTenants(int)})
 * @param mostDrained the tenants with the smallest share left of any of their limits, least first
 */
public record TenantSummary(int tenants, int maxTenants, List<TenantStatus> mostDrained) {

	/** @param limits each limit of the tenant */
	public record TenantStatus(String id, List<Limit> limits) {
	}

	/**
	 * @param limit {@code requests}, {@code tokens} or {@code cost} (micro-units of the currency)
	 * @param capacity what the bucket holds when full
	 * @param remaining what it holds now (negative while in debt); with a store that answers later,
	 *        what it last said
	 * @param periodSeconds the seconds it takes to refill from empty
	 */
	public record Limit(String limit, long capacity, long remaining, long periodSeconds) {
	}
}
