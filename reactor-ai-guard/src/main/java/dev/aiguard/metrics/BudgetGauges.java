package dev.aiguard.metrics;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;

/**
 * The budget gauges of {@link MicrometerGuardMetrics}: what each bucket holds, one meter name per
 * unit, and where the buckets are. A policy built again under its name (a live change, a policy
 * derived with {@code toBuilder()}) builds its own budget and reports its store and buckets again;
 * its gauges replace those of the same name and tags, so they read the newest policy's objects
 * instead of Micrometer keeping the first and warning about the second.
 */
final class BudgetGauges {

	private static final String REMAINING = "aiguard.budget.remaining.";
	private static final String STORE_MODE = "aiguard.budget.store.mode";
	private static final double MICROS = 1_000_000d;

	private final MeterRegistry registry;
	/** Policy and tenant, to the tenant's {@code aiguard.budget.remaining.*} gauges. */
	private final ConcurrentHashMap<String, Set<Meter.Id>> tenantGauges = new ConcurrentHashMap<>();

	BudgetGauges(MeterRegistry registry) {
		this.registry = registry;
	}

	/** @param tenant whether {@code id} is a tenant (its gauges go with {@link #forget}) */
	void remaining(String policy, String scope, String id, String limit, LongSupplier remaining, boolean tenant) {
		Gauge g = replacing(REMAINING + limit, remainingGauge(limit, remaining).strongReference(true),
				Tags.of("policy", policy, "scope", scope, "id", id));
		if (tenant) {
			tenantGauges.computeIfAbsent(policy + '\n' + id, k -> ConcurrentHashMap.newKeySet()).add(g.getId());
		}
	}

	/**
	 * One meter name per unit, so no series mixes requests, tokens and money: a request bucket holds
	 * requests, a token bucket tokens, a cost bucket micro-units of the price table's currency, shown
	 * in the currency's units like {@code aiguard.cost}.
	 */
	private static Gauge.Builder<LongSupplier> remainingGauge(String limit, LongSupplier remaining) {
		switch (limit) {
			case "requests":
				return Gauge.builder(REMAINING + limit, remaining, r -> (double) r.getAsLong())
						.description("Requests a budget bucket holds now (negative while in debt)")
						.baseUnit("requests");
			case "tokens":
				return Gauge.builder(REMAINING + limit, remaining, r -> (double) r.getAsLong())
						.description("Tokens a budget bucket holds now (negative while in debt)")
						.baseUnit(MicrometerGuardMetrics.TOKENS);
			case "cost":
				return Gauge.builder(REMAINING + limit, remaining, r -> r.getAsLong() / MICROS)
						.description("Money a cost bucket holds now, in the price table's currency (negative while in debt)");
			default:
				throw new IllegalArgumentException("limit must be requests, tokens or cost, was " + limit);
		}
	}

	/** Removes the gauges of a tenant the budget let go. */
	void forget(String policy, String id) {
		Set<Meter.Id> gauges = tenantGauges.remove(policy + '\n' + id);
		if (gauges != null) {
			gauges.forEach(registry::remove);
		}
	}

	void storeMode(String policy, Supplier<Enum<?>> mode) {
		for (Enum<?> each : mode.get().getDeclaringClass().getEnumConstants()) {
			replacing(STORE_MODE, Gauge.builder(STORE_MODE, mode, m -> m.get() == each ? 1 : 0)
					.description("Where the policy's budget buckets are: 1 for the current mode")
					.strongReference(true), Tags.of("policy", policy, "mode", each.name()));
		}
	}

	/** Registers {@code gauge} in place of a gauge of the same name and tags. */
	private <T> Gauge replacing(String name, Gauge.Builder<T> gauge, Tags tags) {
		Gauge earlier = registry.find(name).tags(tags).gauge();
		if (earlier != null) {
			registry.remove(earlier);
		}
		return gauge.tags(tags).register(registry);
	}
}
