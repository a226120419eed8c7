package dev.aiguard.benchmarks;

import java.math.BigDecimal;
import java.time.Duration;

import dev.aiguard.GuardPolicy;
import dev.aiguard.core.Priority;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.PriceTable;
import dev.aiguard.budget.ProviderLimits;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;

/** The policy a WebFlux user would configure, shared by the benchmarks. */
final class BenchmarkPolicies {

	private BenchmarkPolicies() {
	}

	/** Deadlines, breaker, lanes of 64 streams, retry with a budget, a static fallback, metrics. */
	static GuardPolicy fullPolicy(GuardMetrics metrics) {
		return fullPolicy(metrics, 64);
	}

	/**
	 * Deadlines, breaker, lanes, retry with a budget, a static fallback, metrics.
	 *
	 * @param laneConcurrency streams each priority lane runs at once
	 */
	static GuardPolicy fullPolicy(GuardMetrics metrics, int laneConcurrency) {
		PriorityLanes lanes = PriorityLanes.builder()
				.name("bench")
				.lane(Priority.P0, LaneSpec.of(laneConcurrency))
				.lane(Priority.P1, LaneSpec.of(laneConcurrency))
				.lane(Priority.P2, LaneSpec.of(laneConcurrency))
				.metrics(metrics)
				.build();
		CircuitBreaker breaker = CircuitBreaker.builder("bench")
				.config(BreakerConfig.custom().build())
				.metrics(metrics)
				.build();
		return GuardPolicy.builder("bench")
				.stall(StallSpec.defaults()
						.firstTokenTimeout(Duration.ofSeconds(10))
						.idleTimeout(Duration.ofSeconds(30))
						.maxDuration(Duration.ofMinutes(5)))
				.breaker(breaker)
				.lanes(lanes)
				.retry(RetryRules.defaults())
				.retryBudget(RetryBudget.create())
				.fallback(FallbackChain.<ChatChunk>builder()
						.step(Fallback.staticText("The assistant is busy; please try again in a minute."))
						.build())
				.metrics(metrics)
				.build();
	}

	/**
	 * {@link #fullPolicy(GuardMetrics, int)} with budgets as a gateway runs them: the prompt counted,
	 * an output cap, prices, a tenant budget and a provider key's limits — set high enough that the
	 * load rig's traffic is never throttled, so every request pays for the checks and nothing else.
	 */
	static GuardPolicy budgetedPolicy(GuardMetrics metrics, int laneConcurrency) {
		return fullPolicy(metrics, laneConcurrency).toBuilder()
				.budget(BudgetSpec.defaults()
						.outputCap(100_000)
						.defaultModel("mock")
						.prices(PriceTable.in("USD").model("mock", new BigDecimal("0.15"), new BigDecimal("0.60")))
						.tenants(TenantLimits.unlimited().requestsPerMinute(100_000_000L).tokensPerMinute(1_000_000_000L)
								.costPerDay(new BigDecimal("1000000")))
						.provider("rig", ProviderLimits.unlimited().requestsPerMinute(100_000_000L)
								.tokensPerMinute(1_000_000_000L)))
				.build();
	}

	/** Deadlines and metrics only: the foundation's guard. */
	static GuardPolicy stallOnlyPolicy(GuardMetrics metrics) {
		return GuardPolicy.builder("bench-stall")
				.stall(StallSpec.defaults()
						.firstTokenTimeout(Duration.ofSeconds(10))
						.idleTimeout(Duration.ofSeconds(30))
						.maxDuration(Duration.ofMinutes(5)))
				.metrics(metrics)
				.build();
	}
}
