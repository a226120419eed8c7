package dev.aiguard.boot.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Locale;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.breaker.TripPolicy;
import dev.aiguard.breaker.TtftPercentilePolicy;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.PriceTable;
import dev.aiguard.budget.PromptCapAction;
import dev.aiguard.budget.ProviderLimits;
import dev.aiguard.budget.TenantLimits;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Priority;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.load.HealthSignal;
import dev.aiguard.load.HealthSignals;
import dev.aiguard.load.Holt;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.load.LoadLevel;
import dev.aiguard.load.LoadRules;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.retry.ContinuationStrategy;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.truncation.TokenCounter;
import dev.aiguard.truncation.TruncationSpec;
import dev.aiguard.validation.OutputValidator;
import dev.aiguard.validation.RepetitionDetector;
import dev.aiguard.validation.Validators;
import org.jspecify.annotations.Nullable;

/**
 * Turns {@link AiGuardProperties} into the library's objects. Each value goes through the
 * library's own checks; a refusal becomes an {@link InvalidGuardPropertyException} naming the full
 * property, so the rules live in one place (the library) and the message still says which line of
 * the configuration is wrong.
 */
final class GuardFactory {

	private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

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
			built = budget(properties.getBudgets());
			budget = built;
		}
		return built;
	}

	private static BudgetSpec budget(AiGuardProperties.Budgets p) {
		String at = AiGuardProperties.PREFIX + ".budgets";
		BudgetSpec s = BudgetSpec.defaults();
		s = with(at + ".prompt-cap", p.getPromptCap(), s, BudgetSpec::promptCap);
		if (p.getOnPromptOverCap() != null) {
			s = s.onPromptOverCap(enumValue(at + ".on-prompt-over-cap", p.getOnPromptOverCap(), PromptCapAction.class));
		}
		s = with(at + ".output-cap", p.getOutputCap(), s, BudgetSpec::outputCap);
		PriceTable prices = make(at + ".currency", p.getCurrency(), PriceTable::in);
		for (Map.Entry<String, AiGuardProperties.Price> e : p.getPrices().entrySet()) {
			String pat = at + ".prices." + e.getKey();
			AiGuardProperties.Price price = e.getValue();
			if (price.getInput() == null || price.getOutput() == null) {
				throw new InvalidGuardPropertyException(pat + (price.getInput() == null ? ".input" : ".output"), null,
						"a price needs both input and output per million tokens", null);
			}
			PriceTable table = prices;
			prices = make(pat, () -> table.model(e.getKey(), price.getInput(), price.getOutput()));
		}
		s = s.prices(prices);
		for (Map.Entry<String, String> e : p.getEncodings().entrySet()) {
			// jtokkit is optional: without it the property fails naming what is missing
			TokenCounter counter = make(at + ".encodings." + e.getKey(), () -> TokenCounter.jtokkit(e.getValue()));
			s = with(at + ".encodings." + e.getKey(), counter, s, (spec, c) -> spec.counter(e.getKey(), c));
		}
		s = s.tenants(limits(at + ".tenant", p.getTenant()));
		for (Map.Entry<String, AiGuardProperties.Limits> e : p.getTenants().entrySet()) {
			TenantLimits own = limits(at + ".tenants." + e.getKey(), e.getValue());
			s = with(at + ".tenants." + e.getKey(), own, s, (spec, l) -> spec.tenant(e.getKey(), l));
		}
		for (Map.Entry<String, Double> e : p.getReserves().entrySet()) {
			String rat = at + ".reserves." + e.getKey();
			Priority priority = make(rat, e.getKey(), k -> Priority.valueOf(k.toUpperCase(Locale.ROOT)));
			s = with(rat, e.getValue(), s, (spec, f) -> spec.reserve(priority, f));
		}
		AiGuardProperties.Provider provider = p.getProvider();
		if (provider.getKey() != null) {
			ProviderLimits limits = ProviderLimits.unlimited();
			limits = with(at + ".provider.requests-per-minute", provider.getRequestsPerMinute(), limits,
					ProviderLimits::requestsPerMinute);
			limits = with(at + ".provider.tokens-per-minute", provider.getTokensPerMinute(), limits,
					ProviderLimits::tokensPerMinute);
			ProviderLimits l = limits;
			s = with(at + ".provider.key", provider.getKey(), s, (spec, key) -> spec.provider(key, l));
		}
		else if (provider.getRequestsPerMinute() != null || provider.getTokensPerMinute() != null) {
			throw new InvalidGuardPropertyException(at + ".provider.key", null,
					"provider limits need the key they limit", null);
		}
		s = with(at + ".max-wait", p.getMaxWait(), s, BudgetSpec::maxWait);
		s = with(at + ".default-tenant", p.getDefaultTenant(), s, BudgetSpec::defaultTenant);
		s = with(at + ".default-model", p.getDefaultModel(), s, BudgetSpec::defaultModel);
		s = with(at + ".tenant-idle", p.getTenantIdle(), s, BudgetSpec::tenantIdle);
		s = with(at + ".max-tenants", p.getMaxTenants(), s, BudgetSpec::maxTenants);
		BudgetSpec spec = s;
		make(at, () -> {
			spec.check();
			return spec;
		});
		return spec;
	}

	private static TenantLimits limits(String at, AiGuardProperties.Limits l) {
		TenantLimits limits = TenantLimits.unlimited();
		limits = with(at + ".requests-per-minute", l.getRequestsPerMinute(), limits, TenantLimits::requestsPerMinute);
		limits = with(at + ".tokens-per-minute", l.getTokensPerMinute(), limits, TenantLimits::tokensPerMinute);
		return with(at + ".cost-per-day", l.getCostPerDay(), limits, TenantLimits::costPerDay);
	}

	private static <E extends Enum<E>> E enumValue(String property, String value, Class<E> type) {
		try {
			return Enum.valueOf(type, value.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
		}
		catch (IllegalArgumentException e) {
			throw new InvalidGuardPropertyException(property, value, "expected one of "
					+ Arrays.toString(type.getEnumConstants()).toLowerCase(Locale.ROOT), e);
		}
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
		properties.getBreakers().forEach((name, b) -> breakers.put(name, breaker(name, b)));
		BreakerTree tree = tree(properties.getBreakerTree(), breakers);
		RetryBudget budget = budget(properties.getRetryBudget());
		Map<String, AiGuard<ChatChunk>> guards = new LinkedHashMap<>();
		properties.getPolicies().forEach((name, p) -> guards.put(name,
				AiGuard.of(policy(name, p, breakers, lanes, budget, governor, tree))));
		// the tree's breakers stay in the tree: their names hold '/', which health contributor names
		// and endpoint selectors cannot
		return new AiGuardRegistry(guards, breakers, lanes, governor, tree);
	}

	private static BreakerPath path(String at, String value, @Nullable String breaker, @Nullable BreakerTree tree) {
		if (breaker != null) {
			throw new InvalidGuardPropertyException(at, value, "a policy has either a breaker or a breaker-path, not both",
					null);
		}
		if (tree == null) {
			throw new InvalidGuardPropertyException(at, value, "no breaker tree is configured (aiguard.breaker-tree.providers)",
					null);
		}
		int slash = value.indexOf('/');
		if (slash <= 0 || slash == value.length() - 1) {
			throw new InvalidGuardPropertyException(at, value, "a breaker path is provider/endpoint", null);
		}
		return make(at, () -> tree.path(value.substring(0, slash), value.substring(slash + 1)));
	}

	private static BreakerConfig template(String at, @Nullable String name, Map<String, CircuitBreaker> breakers) {
		if (name == null) {
			return BreakerConfig.defaults();
		}
		CircuitBreaker breaker = breakers.get(name);
		if (breaker == null) {
			throw new InvalidGuardPropertyException(at, name,
					"no breaker of that name under aiguard.breakers (known: " + breakers.keySet() + ")", null);
		}
		return breaker.config();
	}

	private static BreakerConfig withWindow(String at, BreakerConfig config, AiGuardProperties.BreakerTree t) {
		Duration window = t.getP0ProbeWindow();
		return window == null ? config
				: make(at + ".p0-probe-window", () -> BreakerConfig.from(config).p0ProbeWindow(window).build());
	}


	/** @return the tree {@code aiguard.breaker-tree} describes, or {@code null} when it lists no provider */
	@Nullable
	BreakerTree tree(AiGuardProperties.BreakerTree t, Map<String, CircuitBreaker> breakers) {
		if (t.getProviders().isEmpty()) {
			return null;
		}
		String at = AiGuardProperties.PREFIX + ".breaker-tree";
		checkName(at + ".name", t.getName());
		BreakerTree.Builder b = BreakerTree.builder(t.getName()).metrics(metrics);
		BreakerConfig endpoint = withWindow(at, template(at + ".endpoint-config", t.getEndpointConfig(), breakers), t);
		BreakerConfig provider = withWindow(at, template(at + ".provider-config", t.getProviderConfig(), breakers), t);
		BreakerConfig system = withWindow(at, template(at + ".system-config", t.getSystemConfig(), breakers), t);
		if (t.getSystemP0ProbeShare() != null) {
			BreakerConfig base = system;
			double share = t.getSystemP0ProbeShare();
			system = make(at + ".system-p0-probe-share", () -> BreakerConfig.from(base).openP0ProbeShare(share).build());
		}
		BreakerConfig e = endpoint;
		BreakerConfig p = provider;
		BreakerConfig s = system;
		make(at + ".endpoint-config", () -> b.endpointConfig(e));
		make(at + ".provider-config", () -> b.providerConfig(p));
		make(at + ".system-config", () -> b.systemConfig(s));
		make(at + ".children-to-trip", () -> b.childrenToTrip(t.getChildrenToTrip()));
		make(at + ".children-share-to-trip", () -> b.childrenShareToTrip(t.getChildrenShareToTrip()));
		t.getProviders().forEach((name, endpoints) -> make(at + ".providers." + name,
				() -> b.provider(name, endpoints == null ? List.of() : endpoints)));
		return make(at, b::build);
	}

	/**
	 * The load governor of {@code aiguard.load}, not started.
	 *
	 * @param signals health signals of the context: each replaces the default of its name or adds
	 *        one, weighted by {@code aiguard.load.signals.<name>}
	 * @param lanes the shared lanes, sized by the rules at each level unless
	 *        {@code aiguard.load.lanes=false}; {@code null} when there are none
	 */
	LoadGovernor governor(List<HealthSignal> signals, @Nullable PriorityLanes lanes) {
		AiGuardProperties.Load l = properties.getLoad();
		String at = AiGuardProperties.PREFIX + ".load";
		LoadGovernor.Builder b = make(at + ".name", l.getName(), LoadGovernor::builder);
		if (l.getCapacity() == null) {
			throw new InvalidGuardPropertyException(at + ".capacity", null,
					"the load governor needs the requests per second the service sustains", null);
		}
		set(at + ".capacity", l.getCapacity(), b::capacity);
		set(at + ".interval", l.getInterval(), b::interval);
		set(at + ".horizon", l.getHorizon(), b::horizon);
		set(at + ".overload-line", l.getOverloadLine(), b::overloadLine);
		set(at + ".degrade-at", l.getDegradeAt(), b::degradeAt);
		set(at + ".recover-below", l.getRecoverBelow(), b::recoverBelow);
		List<Double> loads = l.getLoadThresholds();
		if (loads != null) {
			double[] t = three(at + ".load-thresholds", loads, true);
			if (l.getDegradeAt() != null && l.getDegradeAt() != t[0]) {
				throw new InvalidGuardPropertyException(at + ".load-thresholds", loads,
						"its first value is the WARNING threshold, and degrade-at (" + l.getDegradeAt()
								+ ") says another; set one of them",
						null);
			}
			set(at + ".load-thresholds", t, v -> b.loadThresholds(v[0], v[1], v[2]));
		}
		List<Double> scores = l.getScoreThresholds();
		if (scores != null) {
			double[] t = three(at + ".score-thresholds", scores, false);
			set(at + ".score-thresholds", t, v -> b.scoreThresholds(v[0], v[1], v[2]));
		}
		double warningAt = loads != null ? loads.get(0) : l.getDegradeAt() != null ? l.getDegradeAt() : 0.8;
		if (l.getRecoverBelow() != null && !(l.getRecoverBelow() < warningAt)) {
			throw new InvalidGuardPropertyException(at + ".recover-below", l.getRecoverBelow(),
					"must be below the load that enters WARNING (" + warningAt + ")", null);
		}
		set(at + ".load-smoothing", l.getLoadSmoothing(), b::loadSmoothing);
		if (lanes != null && l.isLanes()) {
			b.lanes(lanes, l.getLaneResizing());
		}
		set(at + ".dwell", l.getDwell(), b::dwell);
		set(at + ".warmup-intervals", l.getWarmupIntervals(), b::warmupIntervals);
		AiGuardProperties.Forecast f = l.getForecast();
		double alpha = f.getAlpha();
		double beta = f.getBeta();
		make(at + ".forecast", () -> Holt.of(alpha, beta));
		b.forecaster(() -> Holt.of(alpha, beta));
		signals(at + ".signals", b, l.getSignals(), signals);
		b.rules(rules(at + ".rules", l.getRules()));
		b.metrics(metrics);
		return make(at, b::build);
	}

	/** @param increasing whether the thresholds must rise from WARNING to CRITICAL (else fall) */
	private static double[] three(String property, List<Double> values, boolean increasing) {
		if (values.size() != 3 || values.contains(null)) {
			throw new InvalidGuardPropertyException(property, values,
					"give three numbers, for WARNING, DEGRADED and CRITICAL", null);
		}
		double[] t = { values.get(0), values.get(1), values.get(2) };
		boolean bothOff = increasing && Double.isInfinite(t[1]) && Double.isInfinite(t[2]);
		boolean ordered = increasing ? t[0] < t[1] && (t[1] < t[2] || bothOff) : t[0] > t[1] && t[1] > t[2];
		if (!ordered) {
			throw new InvalidGuardPropertyException(property, values, "the thresholds of WARNING, DEGRADED and CRITICAL "
					+ "must " + (increasing ? "increase" : "decrease"), null);
		}
		return t;
	}

	private static final Map<String, Double> DEFAULT_WEIGHTS = Map.of(HealthSignals.CPU, 0.20, HealthSignals.MEMORY,
			0.15, HealthSignals.RESPONSE_TIME, 0.35, HealthSignals.ERROR_RATE, 0.30);

	/**
	 * Signals given as objects replace the default of their name or add one; a weight property
	 * reweighs a signal, and 0 leaves it out. A signal that is not a default needs its weight.
	 */
	private static void signals(String at, LoadGovernor.Builder b, Map<String, Double> weights,
			List<HealthSignal> given) {
		Map<String, HealthSignal> signals = new LinkedHashMap<>();
		for (HealthSignal signal : given) {
			signals.put(signal.name(), signal);
		}
		for (String name : weights.keySet()) {
			if (!DEFAULT_WEIGHTS.containsKey(name) && !signals.containsKey(name)) {
				throw new InvalidGuardPropertyException(at + "." + name, weights.get(name),
						"no health signal of that name (defaults: " + DEFAULT_WEIGHTS.keySet() + ", HealthSignal beans: "
								+ signals.keySet() + ")",
						null);
			}
			signals.putIfAbsent(name, defaultSignal(name));
		}
		signals.forEach((name, signal) -> {
			Double weight = weights.containsKey(name) ? weights.get(name) : DEFAULT_WEIGHTS.get(name);
			if (weight == null) {
				throw new InvalidGuardPropertyException(at + "." + name, null,
						"the health signal '" + name + "' needs a weight (0 leaves it out)", null);
			}
			if (weight == 0) {
				if (DEFAULT_WEIGHTS.containsKey(name)) {
					set(at + "." + name, name, b::withoutSignal);
				}
			}
			else {
				set(at + "." + name, weight, v -> b.signal(signal, v));
			}
		});
	}

	private static HealthSignal defaultSignal(String name) {
		return switch (name) {
			case HealthSignals.CPU -> HealthSignals.cpu();
			case HealthSignals.MEMORY -> HealthSignals.memory();
			case HealthSignals.RESPONSE_TIME -> HealthSignals.responseTime();
			default -> HealthSignals.errorRate();
		};
	}

	private static LoadRules rules(String at, Map<String, Map<String, AiGuardProperties.Rule>> overrides) {
		LoadRules rules = LoadRules.defaults();
		for (Map.Entry<String, Map<String, AiGuardProperties.Rule>> byLevel : overrides.entrySet()) {
			LoadLevel level = constant(at + "." + byLevel.getKey(), byLevel.getKey(), LoadLevel.class);
			for (Map.Entry<String, AiGuardProperties.Rule> byPriority : byLevel.getValue().entrySet()) {
				String where = at + "." + byLevel.getKey() + "." + byPriority.getKey();
				Priority priority = constant(where, byPriority.getKey(), Priority.class);
				AiGuardProperties.Rule rule = byPriority.getValue();
				LoadRules current = rules;
				rules = with(where + ".action", rule.getAction(), current, (r, a) -> r.withAction(level, priority, a));
				LoadRules withAction = rules;
				rules = with(where + ".lane-factor", rule.getLaneFactor(), withAction,
						(r, factor) -> r.withLaneFactor(level, priority, factor));
			}
		}
		return rules;
	}

	private static <E extends Enum<E>> E constant(String property, String key, Class<E> type) {
		for (E e : type.getEnumConstants()) {
			if (e.name().equalsIgnoreCase(key.trim())) {
				return e;
			}
		}
		throw new InvalidGuardPropertyException(property, key, "expected one of "
				+ Arrays.toString(type.getEnumConstants()).toLowerCase(Locale.ROOT), null);
	}

	CircuitBreaker breaker(String name, AiGuardProperties.Breaker b) {
		String at = AiGuardProperties.PREFIX + ".breakers." + name;
		checkName(at, name);
		BreakerConfig.Builder c = BreakerConfig.custom();
		set(at + ".failure-rate-threshold", b.getFailureRateThreshold(), c::failureRateThreshold);
		set(at + ".slow-call-rate-threshold", b.getSlowCallRateThreshold(), c::slowCallRateThreshold);
		set(at + ".slow-time-to-first-token", b.getSlowTimeToFirstToken(), c::slowTimeToFirstToken);
		set(at + ".minimum-calls", b.getMinimumCalls(), c::minimumCalls);
		if (b.getWindowSize() != null && (b.getWindowBuckets() != null || b.getBucketLength() != null)) {
			throw new InvalidGuardPropertyException(at + ".window-size", b.getWindowSize(),
					"a breaker has either a count window (window-size) or a time window (window-buckets and bucket-length), not both",
					null);
		}
		set(at + ".window-size", b.getWindowSize(), c::countWindow);
		if (b.getWindowBuckets() != null || b.getBucketLength() != null) {
			if (b.getWindowBuckets() == null || b.getBucketLength() == null) {
				String missing = b.getWindowBuckets() == null ? ".window-buckets" : ".bucket-length";
				throw new InvalidGuardPropertyException(at + missing, null,
						"a time window needs both window-buckets and bucket-length", null);
			}
			int buckets = b.getWindowBuckets();
			set(at + ".window-buckets", b.getBucketLength(), length -> c.timeWindow(buckets, length));
		}
		set(at + ".open-wait", b.getOpenWait(), c::openWait);
		set(at + ".open-wait-multiplier", b.getOpenWaitMultiplier(), c::openWaitMultiplier);
		set(at + ".max-open-wait", b.getMaxOpenWait(), c::maxOpenWait);
		set(at + ".open-wait-jitter", b.getOpenWaitJitter(), c::openWaitJitter);
		set(at + ".half-open-probes", b.getHalfOpenProbes(), c::halfOpenProbes);
		set(at + ".successes-to-close", b.getSuccessesToClose(), c::successesToClose);
		set(at + ".max-time-in-half-open", b.getMaxTimeInHalfOpen(), c::maxTimeInHalfOpen);
		set(at + ".minimum-dwell", b.getMinimumDwell(), c::minimumDwell);
		set(at + ".half-open-probe-ratio", b.getHalfOpenProbeRatio(), c::halfOpenProbeRatio);
		set(at + ".hysteresis", b.getHysteresis(), c::hysteresis);
		set(at + ".record-client-errors", b.getRecordClientErrors(), c::recordClientErrors);
		set(at + ".slow-time-to-first-token-per-prompt-token", b.getSlowTimeToFirstTokenPerPromptToken(),
				c::slowTimeToFirstTokenPerPromptToken);
		set(at + ".consecutive-failures-to-trip", b.getConsecutiveFailuresToTrip(), c::consecutiveFailuresToTrip);
		set(at + ".trip-delay", b.getTripDelay(), c::tripDelay);
		set(at + ".ramp-up", b.getRampUp(), c::rampUp);
		set(at + ".warm-up", b.getWarmUp(), c::warmUp);
		set(at + ".warm-up-threshold-factor", b.getWarmUpThresholdFactor(), c::warmUpThresholdFactor);
		c.tripPolicy(tripPolicy(at, b));
		BreakerConfig config = make(at, c::build);
		return CircuitBreaker.builder(name).config(config).metrics(metrics).build();
	}

	private static TripPolicy tripPolicy(String at, AiGuardProperties.Breaker b) {
		List<AiGuardProperties.TripPolicyKind> kinds = b.getTripPolicy();
		if (kinds == null || kinds.isEmpty()) {
			throw new InvalidGuardPropertyException(at + ".trip-policy", kinds, "name at least one trip policy", null);
		}
		List<TripPolicy> policies = new ArrayList<>();
		for (AiGuardProperties.TripPolicyKind kind : new LinkedHashSet<>(kinds)) {
			policies.add(switch (kind) {
				case FAILURE_RATE -> TripPolicy.failureRate();
				case DECAYED_FAILURE_RATE -> TripPolicy.decayedFailureRate();
				case ADAPTIVE_TTFT -> b.getAdaptiveTtftBaseline() == null ? TripPolicy.adaptiveTtft()
						: make(at + ".adaptive-ttft-baseline", b.getAdaptiveTtftBaseline(),
								TripPolicy.adaptiveTtft()::startingBaseline);
				case TTFT_PERCENTILE -> {
					if (b.getTtftPercentileLimit() == null) {
						throw new InvalidGuardPropertyException(at + ".ttft-percentile-limit", null,
								"the ttft-percentile trip policy needs the limit of the percentile's time to first token",
								null);
					}
					TtftPercentilePolicy percentile = make(at + ".ttft-percentile-limit", b.getTtftPercentileLimit(),
							TripPolicy::ttftPercentile);
					yield b.getTtftPercentile() == null ? percentile
							: make(at + ".ttft-percentile", b.getTtftPercentile(), percentile::percentile);
				}
				case PERFORMANCE_SCORE -> {
					if (b.getBaselineTtft() == null) {
						throw new InvalidGuardPropertyException(at + ".baseline-ttft", null,
								"the performance-score trip policy needs the baseline time to first token", null);
					}
					yield make(at + ".baseline-ttft", b.getBaselineTtft(), TripPolicy::performanceScore);
				}
			});
		}
		TripPolicy policy = policies.size() == 1 ? policies.get(0) : TripPolicy.anyOf(policies.toArray(TripPolicy[]::new));
		return b.isPredictive() ? TripPolicy.predictive(policy) : policy;
	}

	@Nullable
	PriorityLanes lanes(AiGuardProperties.Lanes l) {
		Map<Priority, AiGuardProperties.Lane> configured = l.configured();
		if (configured.isEmpty()) {
			return null;
		}
		String at = AiGuardProperties.PREFIX + ".lanes";
		checkName(at + ".name", l.getName());
		for (Priority priority : Priority.values()) {
			if (!configured.containsKey(priority)) {
				throw new InvalidGuardPropertyException(at + "." + priority.name().toLowerCase(Locale.ROOT) + ".concurrency",
						null, "lanes need all three of p0, p1 and p2 once one is configured (0 makes a lane that only borrows)",
						null);
			}
		}
		PriorityLanes.Builder b = PriorityLanes.builder().name(l.getName()).metrics(metrics);
		configured.forEach((priority, lane) -> b.lane(priority, lane(at + "." + priority.name().toLowerCase(Locale.ROOT), lane)));
		return make(at, b::build);
	}

	private static LaneSpec lane(String at, AiGuardProperties.Lane lane) {
		LaneSpec spec = make(at + ".concurrency", lane.getConcurrency(), LaneSpec::of);
		spec = with(at + ".max-queue-size", lane.getMaxQueueSize(), spec, LaneSpec::maxQueueSize);
		spec = with(at + ".max-queue-wait", lane.getMaxQueueWait(), spec, LaneSpec::maxQueueWait);
		spec = with(at + ".borrow-from-lower", lane.getBorrowFromLower(), spec, LaneSpec::borrowFromLower);
		spec = with(at + ".reserved-for-own", lane.getReservedForOwn(), spec, LaneSpec::reservedForOwn);
		spec = with(at + ".aging-after", lane.getAgingAfter(), spec, LaneSpec::agingAfter);
		return spec;
	}

	private static RetryBudget budget(AiGuardProperties.RetryBudget b) {
		String at = AiGuardProperties.PREFIX + ".retry-budget";
		return make(at, () -> RetryBudget.of(b.getRatio(), b.getMinRetriesPerSecond(), b.getWindow()));
	}

	GuardPolicy policy(String name, AiGuardProperties.Policy p, Map<String, CircuitBreaker> breakers,
			@Nullable PriorityLanes lanes, RetryBudget budget, @Nullable LoadGovernor governor) {
		return policy(name, p, breakers, lanes, budget, governor, null);
	}

	GuardPolicy policy(String name, AiGuardProperties.Policy p, Map<String, CircuitBreaker> breakers,
			@Nullable PriorityLanes lanes, RetryBudget budget, @Nullable LoadGovernor governor,
			@Nullable BreakerTree tree) {
		String at = AiGuardProperties.PREFIX + ".policies." + name;
		checkName(at, name);
		GuardPolicy.Builder b = make(at, () -> GuardPolicy.builder(name));
		set(at + ".default-priority", p.getDefaultPriority(), b::defaultPriority);
		b.metrics(metrics);
		b.stall(stall(at + ".stall", p.getStall()));
		if (p.getBreaker() != null) {
			CircuitBreaker breaker = breakers.get(p.getBreaker());
			if (breaker == null) {
				throw new InvalidGuardPropertyException(at + ".breaker", p.getBreaker(),
						"no breaker of that name under aiguard.breakers (known: " + breakers.keySet() + ")", null);
			}
			b.breaker(breaker);
		}
		if (p.getBreakerPath() != null) {
			b.breaker(path(at + ".breaker-path", p.getBreakerPath(), p.getBreaker(), tree));
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
		AiGuardProperties.Retry r = p.getRetry();
		if (r.getMaxAttempts() != null) {
			b.retry(retry(at + ".retry", r));
			if (r.isBudget()) {
				b.retryBudget(budget);
			}
		}
		else if (r.isBudget()) {
			throw new InvalidGuardPropertyException(at + ".retry.budget", true,
					"a retry budget needs retries: set " + at + ".retry.max-attempts", null);
		}
		AiGuardProperties.Truncation t = p.getTruncation();
		if (t.isEnabled()) {
			b.truncation(truncation(at + ".truncation", t));
		}
		b.midStream(midStream(at + ".mid-stream", p.getMidStream()));
		AiGuardProperties.Fallback f = p.getFallback();
		if (f.getStaticText() != null) {
			b.fallback(fallback(at + ".fallback", f));
		}
		validate(at + ".validate", p.getValidate(), b);
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

	private static StallSpec stall(String at, AiGuardProperties.Stall s) {
		StallSpec spec = StallSpec.defaults();
		spec = with(at + ".first-token-timeout", s.getFirstTokenTimeout(), spec, StallSpec::firstTokenTimeout);
		spec = with(at + ".idle-timeout", s.getIdleTimeout(), spec, StallSpec::idleTimeout);
		spec = with(at + ".max-duration", s.getMaxDuration(), spec, StallSpec::maxDuration);
		spec = with(at + ".heartbeats-extend-idle", s.getHeartbeatsExtendIdle(), spec, StallSpec::heartbeatsExtendIdle);
		spec = with(at + ".require-terminal", s.getRequireTerminal(), spec, StallSpec::requireTerminal);
		return spec;
	}

	private static RetryRules retry(String at, AiGuardProperties.Retry r) {
		RetryRules rules = RetryRules.defaults();
		rules = with(at + ".max-attempts", r.getMaxAttempts(), rules, RetryRules::maxAttempts);
		rules = with(at + ".min-backoff", r.getMinBackoff(), rules, RetryRules::minBackoff);
		rules = with(at + ".max-backoff", r.getMaxBackoff(), rules, RetryRules::maxBackoff);
		rules = with(at + ".max-retry-after", r.getMaxRetryAfter(), rules, RetryRules::maxRetryAfter);
		rules = with(at + ".jitter", r.getJitter(), rules, RetryRules::jitter);
		return rules;
	}

	private static TruncationSpec truncation(String at, AiGuardProperties.Truncation t) {
		TruncationSpec spec = TruncationSpec.defaults();
		spec = with(at + ".max-truncations", t.getMaxTruncations(), spec, TruncationSpec::maxTruncations);
		spec = with(at + ".reserved-output-tokens", t.getReservedOutputTokens(), spec, TruncationSpec::reservedOutputTokens);
		spec = with(at + ".shrink-factor", t.getShrinkFactor(), spec, TruncationSpec::shrinkFactor);
		return spec;
	}

	private static MidStreamPolicy<?> midStream(String at, AiGuardProperties.MidStream m) {
		switch (m.getMode()) {
			case NOTICE:
				if (m.getNotice() == null || m.getNotice().isBlank()) {
					throw new InvalidGuardPropertyException(at + ".notice", m.getNotice(),
							"mode notice needs the notice text", null);
				}
				return make(at + ".notice", m.getNotice(), MidStreamPolicy::notice);
			case CONTINUE:
				ContinuationStrategy strategy = m.getContinuation() == AiGuardProperties.ContinuationMode.ASSISTANT_PREFILL
						? ContinuationStrategy.ASSISTANT_PREFILL : ContinuationStrategy.USER_CONTINUE;
				return make(at + ".max-continuations", m.getMaxContinuations(),
						n -> MidStreamPolicy.continueWith(strategy, n));
			default:
				return MidStreamPolicy.fail();
		}
	}

	private static void validate(String at, AiGuardProperties.Validate v, GuardPolicy.Builder b) {
		if (v.isEmptyAnswer()) {
			b.validate(Validators.emptyAnswer());
		}
		List<String> reasons = v.getFinishReasons();
		if (!reasons.isEmpty()) {
			OutputValidator finish = make(at + ".finish-reasons", reasons,
					r -> Validators.finishReason(r.toArray(String[]::new)));
			b.validate(finish);
		}
		AiGuardProperties.Repetition r = v.getRepetition();
		String rat = at + ".repetition";
		if (!r.isEnabled()) {
			for (Map.Entry<String, Integer> setting : repetitionSettings(r).entrySet()) {
				if (setting.getValue() != null) {
					throw new InvalidGuardPropertyException(rat + "." + setting.getKey(), setting.getValue(),
							"the repetition detector is off: set " + rat + ".enabled=true", null);
				}
			}
			return;
		}
		RepetitionDetector detector = RepetitionDetector.defaults();
		detector = with(rat + ".ngram", r.getNgram(), detector, RepetitionDetector::ngram);
		detector = with(rat + ".max-period", r.getMaxPeriod(), detector, RepetitionDetector::maxPeriod);
		detector = with(rat + ".min-repeats", r.getMinRepeats(), detector, RepetitionDetector::minRepeats);
		detector = with(rat + ".min-span", r.getMinSpan(), detector, RepetitionDetector::minSpan);
		b.validateStreaming(detector);
	}

	/** @return the detector's settings by property name, in order, unset ones as {@code null} */
	private static Map<String, @Nullable Integer> repetitionSettings(AiGuardProperties.Repetition r) {
		Map<String, @Nullable Integer> settings = new LinkedHashMap<>();
		settings.put("ngram", r.getNgram());
		settings.put("max-period", r.getMaxPeriod());
		settings.put("min-repeats", r.getMinRepeats());
		settings.put("min-span", r.getMinSpan());
		return settings;
	}

	private static FallbackChain<ChatChunk> fallback(String at, AiGuardProperties.Fallback f) {
		FallbackChain.Builder<ChatChunk> chain = FallbackChain.<ChatChunk>builder();
		String text = Objects.requireNonNull(f.getStaticText());
		chain.step(make(at + ".static-text", text, Fallback::staticText));
		set(at + ".triggers", f.getTriggers(), chain::triggers);
		set(at + ".timeout", f.getTimeout(), chain::timeout);
		return make(at, chain::build);
	}

	private static void checkName(String at, String name) {
		if (name == null || !NAME.matcher(name).matches()) {
			throw new InvalidGuardPropertyException(at, name,
					"a name must be 1 to 64 letters, digits, '.', '_' or '-'", null);
		}
	}

	/** Applies a value to a builder unless it is unset, naming the property when the library refuses it. */
	private static <V> void set(String property, @Nullable V value, Consumer<V> setter) {
		if (value != null) {
			try {
				setter.accept(value);
			}
			catch (IllegalArgumentException | NullPointerException e) {
				throw new InvalidGuardPropertyException(property, value, String.valueOf(e.getMessage()), e);
			}
		}
	}

	/** Derives an immutable spec with a value unless it is unset, naming the property when refused. */
	private static <S, V> S with(String property, @Nullable V value, S spec, BiFunction<S, V, S> wither) {
		if (value == null) {
			return spec;
		}
		try {
			return wither.apply(spec, value);
		}
		catch (IllegalArgumentException | NullPointerException e) {
			throw new InvalidGuardPropertyException(property, value, String.valueOf(e.getMessage()), e);
		}
	}

	private static <V, R> R make(String property, V value, Function<V, R> factory) {
		try {
			return factory.apply(value);
		}
		catch (IllegalArgumentException | NullPointerException e) {
			throw new InvalidGuardPropertyException(property, value, String.valueOf(e.getMessage()), e);
		}
	}

	private static <R> R make(String property, Supplier<R> factory) {
		try {
			return factory.get();
		}
		catch (IllegalArgumentException | IllegalStateException | NullPointerException e) {
			throw new InvalidGuardPropertyException(property, null, String.valueOf(e.getMessage()), e);
		}
	}
}
