package dev.aiguard.boot.autoconfigure;

import static dev.aiguard.boot.autoconfigure.PropertyChecks.checkName;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.make;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.set;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.boot.autoconfigure.properties.FallbackProperties;
import dev.aiguard.boot.autoconfigure.properties.LanesProperties;
import dev.aiguard.boot.autoconfigure.properties.RetryProperties;
import dev.aiguard.boot.autoconfigure.properties.TruncationProperties;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.load.HealthSignal;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.retry.RetryBudget;
import org.jspecify.annotations.Nullable;

/**
 * Turns {@link AiGuardProperties} into the library's objects: the breakers, the breaker tree, the
 * shared lanes, the load governor and one guard per policy. Each capability has its mapper
 * ({@link BreakerMapper}, {@link BreakerTreeMapper}, {@link LanesMapper}, {@link LoadGovernorMapper},
 * {@link BudgetMapper}, {@link PolicySpecs}); every value goes through the library's own checks,
 * and a refusal becomes an {@link InvalidGuardPropertyException} naming the full property
 * ({@link PropertyChecks}), so the rules live in one place (the library) and the message still
 * says which line of the configuration is wrong.
 */
final class GuardFactory {

	private final AiGuardProperties properties;
	private final GuardMetrics metrics;
	private final List<AiGuardPolicyCustomizer> customizers;

	@Nullable
	private BucketStore bucketStore;
	@Nullable
	private BudgetSpec budget;

	GuardFactory(AiGuardProperties properties, GuardMetrics metrics, List<AiGuardPolicyCustomizer> customizers) {
		this.properties = properties;
		this.metrics = metrics;
		this.customizers = customizers;
	}

	/** @param store where the budgets' buckets live, shared by every policy with {@code budget: true} */
	GuardFactory bucketStore(@Nullable BucketStore store) {
		this.bucketStore = store;
		return this;
	}

	/** @return the budget {@code aiguard.budgets} describes, built once */
	BudgetSpec budget() {
		BudgetSpec built = budget;
		if (built == null) {
			built = BudgetMapper.budget(properties.getBudgets());
			budget = built;
		}
		return built;
	}

	/** @return every breaker, lanes and guard the properties describe, without a load governor */
	AiGuardRegistry build() {
		return build(lanes(properties.getLanes()), null);
	}

	/**
	 * @param lanes the shared lanes, built by {@link #lanes}
	 * @param governor the load governor the policies pass, unless one says {@code load: false}
	 * @return every breaker and guard the properties describe, with these lanes and governor
	 */
	AiGuardRegistry build(@Nullable PriorityLanes lanes, @Nullable LoadGovernor governor) {
		Map<String, CircuitBreaker> breakers = new LinkedHashMap<>();
		properties.getBreakers().forEach((name, b) -> breakers.put(name, BreakerMapper.breaker(name, b, metrics)));
		BreakerTree tree = BreakerTreeMapper.tree(properties.getBreakerTree(), breakers, metrics);
		RetryBudget budget = PolicySpecs.retryBudget(properties.getRetryBudget());
		Map<String, AiGuard<ChatChunk>> guards = new LinkedHashMap<>();
		properties.getPolicies().forEach((name, p) -> guards.put(name,
				AiGuard.of(policy(name, p, breakers, lanes, budget, governor, tree))));
		// the tree's breakers stay in the tree: their names hold '/', which health contributor names
		// and endpoint selectors cannot
		return new AiGuardRegistry(guards, breakers, lanes, governor, tree);
	}

	/** @return the load governor of {@code aiguard.load}, not started (see {@link LoadGovernorMapper#governor}) */
	LoadGovernor governor(List<HealthSignal> signals, @Nullable PriorityLanes lanes) {
		return LoadGovernorMapper.governor(properties.getLoad(), signals, lanes, metrics);
	}

	/** @return the shared lanes {@code aiguard.lanes} describes, or {@code null} when it configures none */
	@Nullable
	PriorityLanes lanes(LanesProperties l) {
		return LanesMapper.lanes(l, metrics);
	}

	private GuardPolicy policy(String name, AiGuardProperties.Policy p, Map<String, CircuitBreaker> breakers,
			@Nullable PriorityLanes lanes, RetryBudget budget, @Nullable LoadGovernor governor,
			@Nullable BreakerTree tree) {
		String at = AiGuardProperties.PREFIX + ".policies." + name;
		checkName(at, name);
		GuardPolicy.Builder b = make(at, () -> GuardPolicy.builder(name));
		set(at + ".default-priority", p.getDefaultPriority(), b::defaultPriority);
		b.metrics(metrics);
		b.stall(PolicySpecs.stall(at + ".stall", p.getStall()));
		if (p.getBreaker() != null) {
			CircuitBreaker breaker = breakers.get(p.getBreaker());
			if (breaker == null) {
				throw new InvalidGuardPropertyException(at + ".breaker", p.getBreaker(),
						"no breaker of that name under aiguard.breakers (known: " + breakers.keySet() + ")", null);
			}
			b.breaker(breaker);
		}
		if (p.getBreakerPath() != null) {
			b.breaker(BreakerTreeMapper.path(at + ".breaker-path", p.getBreakerPath(), p.getBreaker(), tree));
		}
		if (p.isLanes()) {
			if (lanes == null) {
				throw new InvalidGuardPropertyException(at + ".lanes", true,
						"the policy asks for the shared lanes but none is configured under aiguard.lanes (p0, p1 or p2)",
						null);
			}
			b.lanes(lanes);
		}
		b.blockingUpstream(p.isBlockingUpstream());
		if (Boolean.TRUE.equals(p.getLoad()) && governor == null) {
			throw new InvalidGuardPropertyException(at + ".load", true,
					"the policy asks for the load governor but there is none: set aiguard.load.enabled=true", null);
		}
		if (governor != null && !Boolean.FALSE.equals(p.getLoad())) {
			b.load(governor);
		}
		RetryProperties r = p.getRetry();
		if (r.getMaxAttempts() != null) {
			b.retry(PolicySpecs.retry(at + ".retry", r));
			if (r.isBudget()) {
				b.retryBudget(budget);
			}
		}
		else if (r.isBudget()) {
			throw new InvalidGuardPropertyException(at + ".retry.budget", true,
					"a retry budget needs retries: set " + at + ".retry.max-attempts", null);
		}
		TruncationProperties t = p.getTruncation();
		if (t.isEnabled()) {
			b.truncation(PolicySpecs.truncation(at + ".truncation", t));
		}
		b.midStream(PolicySpecs.midStream(at + ".mid-stream", p.getMidStream()));
		FallbackProperties f = p.getFallback();
		if (f.getStaticText() != null) {
			b.fallback(PolicySpecs.fallback(at + ".fallback", f));
		}
		PolicySpecs.validate(at + ".validate", p.getValidate(), b);
		if (p.isBudget()) {
			b.budget(budget());
			if (bucketStore != null) {
				b.bucketStore(bucketStore);
			}
		}
		for (AiGuardPolicyCustomizer customizer : customizers) {
			customizer.customize(name, b);
		}
		return make(at, b::build);
	}
}
