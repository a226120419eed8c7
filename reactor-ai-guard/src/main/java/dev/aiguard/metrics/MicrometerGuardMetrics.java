package dev.aiguard.metrics;

import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.DoubleSupplier;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.core.StallPhase;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;

/**
 * {@link GuardMetrics} on a Micrometer {@link MeterRegistry}. Every meter name starts with
 * {@code aiguard.}; {@code docs/metrics.md} lists them all.
 *
 * <p>Meters recorded once per stream are looked up in per-policy arrays built on first use, so
 * recording allocates nothing and touches no registry map.
 *
 * <p>Tenant ids are untrusted input, so they become tag values only by choice and only so many:
 * by default every tenant is tagged {@value #OTHER_TENANTS}; with {@code tenantSeries > 0} the first
 * {@code tenantSeries} distinct tenants get series of their own (and their
 * {@code aiguard.budget.remaining.*} gauges, removed again when the budget lets the tenant go), the
 * rest share {@value #OTHER_TENANTS}.
 *
 * <pre>{@code
 * GuardMetrics metrics = new MicrometerGuardMetrics(meterRegistry);
 * GuardMetrics perTenant = new MicrometerGuardMetrics(meterRegistry, 100);   // 100 tenants' own series
 * }</pre>
 */
public final class MicrometerGuardMetrics implements GuardMetrics {

	private static final Priority[] PRIORITIES = Priority.values();
	private static final Outcome[] OUTCOMES = Outcome.values();
	private static final StallPhase[] PHASES = StallPhase.values();
	private static final Source[] SOURCES = Source.values();

	/** Base units; a meter with one ends its name in it, so exporters that append the unit do not repeat it. */
	static final String TOKENS = "tokens";
	private static final String CHUNKS = "chunks";


	/** The tag value of tenants without series of their own. */
	public static final String OTHER_TENANTS = "__other__";

	private final MeterRegistry registry;
	private final ConcurrentHashMap<String, PolicyMeters> policies = new ConcurrentHashMap<>();
	private final ConcurrentHashMap<String, Timer[]> laneWaits = new ConcurrentHashMap<>();
	private final int tenantSeries;
	/** The tenants with series of their own: the first {@link #tenantSeries} seen, kept. */
	private final Set<String> ownSeries = ConcurrentHashMap.newKeySet();
	private final AtomicInteger ownSeriesClaimed = new AtomicInteger();
	private final BudgetGauges budgetGauges;

	/** Meters without per-tenant series: every tenant is tagged {@value #OTHER_TENANTS}. */
	public MicrometerGuardMetrics(MeterRegistry registry) {
		this(registry, 0);
	}

	/**
	 * @param tenantSeries how many tenants get series of their own, {@code >= 0}: the first that many
	 *        seen; the others are tagged {@value #OTHER_TENANTS}. Each costs about a dozen series per
	 *        policy and model, so keep it to the customers you watch.
	 */
	public MicrometerGuardMetrics(MeterRegistry registry, int tenantSeries) {
		this.registry = Objects.requireNonNull(registry, "registry");
		if (tenantSeries < 0) {
			throw new IllegalArgumentException("tenantSeries must be >= 0, was " + tenantSeries);
		}
		this.tenantSeries = tenantSeries;
		this.budgetGauges = new BudgetGauges(registry);
	}

	/** @return the tag value of {@code tenant}: itself when it has series of its own, else {@value #OTHER_TENANTS} */
	String tenantTag(String tenant) {
		if (tenantSeries == 0) {
			return OTHER_TENANTS;
		}
		if (ownSeries.contains(tenant)) {
			return tenant;
		}
		int claimed = ownSeriesClaimed.get();
		while (claimed < tenantSeries) {
			if (ownSeriesClaimed.compareAndSet(claimed, claimed + 1)) {
				if (ownSeries.add(tenant)) {
					return tenant;
				}
				ownSeriesClaimed.decrementAndGet(); // another thread added it first: its claim counts
				return tenant;
			}
			claimed = ownSeriesClaimed.get();
		}
		return OTHER_TENANTS;
	}

	/** @return the registry meters are registered in. */
	public MeterRegistry registry() {
		return registry;
	}

	private PolicyMeters meters(String policy) {
		PolicyMeters m = policies.get(policy);
		return m != null ? m : policies.computeIfAbsent(policy, PolicyMeters::new);
	}

	@Override
	public void streamEnded(String policy, Priority priority, Outcome outcome, long durationNanos,
			long timeToFirstTokenNanos, long chunks) {
		PolicyMeters m = meters(policy);
		int p = priority.ordinal();
		int o = outcome.ordinal();
		m.streams[p][o].increment();
		m.duration[p][o].record(durationNanos, TimeUnit.NANOSECONDS);
		if (timeToFirstTokenNanos >= 0) {
			m.ttft[p].record(timeToFirstTokenNanos, TimeUnit.NANOSECONDS);
		}
		if (chunks > 0) {
			m.chunks[p].increment(chunks);
		}
	}

	@Override
	public void stalled(String policy, Priority priority, StallPhase phase) {
		meters(policy).stalls[priority.ordinal()][phase.ordinal()].increment();
	}

	@Override
	public void outputTruncated(String policy, Priority priority) {
		meters(policy).outputTruncated[priority.ordinal()].increment();
	}

	@Override
	public void breakerCreated(String breaker, Supplier<Enum<?>> state, DoubleSupplier failureRate,
			DoubleSupplier slowCallRate) {
		Object[] states = state.get().getDeclaringClass().getEnumConstants();
		for (Object s : states) {
			String name = ((Enum<?>) s).name();
			Gauge.builder("aiguard.breaker.state", state, st -> st.get().name().equals(name) ? 1 : 0)
					.description("1 for the breaker's current state, 0 for the others")
					.tags("breaker", breaker, "state", name)
					.strongReference(true)
					.register(registry);
		}
		Gauge.builder("aiguard.breaker.failure.rate", failureRate, DoubleSupplier::getAsDouble)
				.description("Failure rate in the breaker's window, 0..1 (NaN below the minimum calls)")
				.tags("breaker", breaker)
				.strongReference(true)
				.register(registry);
		Gauge.builder("aiguard.breaker.slow.rate", slowCallRate, DoubleSupplier::getAsDouble)
				.description("Slow time-to-first-token rate in the breaker's window, 0..1")
				.tags("breaker", breaker)
				.strongReference(true)
				.register(registry);
	}

	@Override
	public void breakerTransition(String breaker, Enum<?> from, Enum<?> to) {
		Counter.builder("aiguard.breaker.transitions")
				.description("Breaker state transitions")
				.tags("breaker", breaker, "from", from.name(), "to", to.name())
				.register(registry)
				.increment();
	}

	@Override
	public void breakerRejected(String breaker) {
		Counter.builder("aiguard.breaker.rejected")
				.description("Calls refused because the breaker was open")
				.tags("breaker", breaker)
				.register(registry)
				.increment();
	}

	@Override
	public void lanesCreated(String lanes, ToIntFunction<Priority> inFlightOwn,
			ToIntFunction<Priority> inFlightBorrowed, ToIntFunction<Priority> queued) {
		for (Priority p : PRIORITIES) {
			Gauge.builder("aiguard.lane.inflight", () -> inFlightOwn.applyAsInt(p))
					.description("Streams in flight per priority and kind of permit")
					.tags("lanes", lanes, "priority", p.name(), "permit", "own")
					.register(registry);
			Gauge.builder("aiguard.lane.inflight", () -> inFlightBorrowed.applyAsInt(p))
					.description("Streams in flight per priority and kind of permit")
					.tags("lanes", lanes, "priority", p.name(), "permit", "borrowed")
					.register(registry);
			Gauge.builder("aiguard.lane.queued", () -> queued.applyAsInt(p))
					.description("Requests waiting for a permit")
					.tags("lanes", lanes, "priority", p.name())
					.register(registry);
		}
	}

	@Override
	public void laneCapacity(String lanes, ToIntFunction<Priority> capacity) {
		for (Priority p : PRIORITIES) {
			Gauge.builder("aiguard.lane.capacity", () -> capacity.applyAsInt(p))
					.description("Permits of the lane now (its built size until resized)")
					.tags("lanes", lanes, "priority", p.name())
					.register(registry);
		}
	}

	@Override
	public void laneResized(String lanes, Priority lane, int concurrency) {
		Counter.builder("aiguard.lane.resized")
				.description("Times a lane was resized at run time")
				.tags("lanes", lanes, "priority", lane.name())
				.register(registry)
				.increment();
	}

	@Override
	public void admissionWaited(String lanes, Priority priority, long nanos) {
		Timer[] timers = laneWaits.get(lanes);
		if (timers == null) {
			timers = laneWaits.computeIfAbsent(lanes, this::laneWaitTimers);
		}
		timers[priority.ordinal()].record(nanos, TimeUnit.NANOSECONDS);
	}

	/** Recorded once per admitted request: registered once per lanes, like the per-stream meters. */
	private Timer[] laneWaitTimers(String lanes) {
		Timer[] timers = new Timer[PRIORITIES.length];
		for (Priority p : PRIORITIES) {
			timers[p.ordinal()] = Timer.builder("aiguard.lane.wait")
					.description("Time waited in a lane's queue before admission")
					.tags("lanes", lanes, "priority", p.name())
					.register(registry);
		}
		return timers;
	}

	@Override
	public void admissionRejected(String lanes, Priority priority, String reason) {
		Counter.builder("aiguard.lane.rejected")
				.description("Admissions refused, by reason")
				.tags("lanes", lanes, "priority", priority.name(), "reason", reason)
				.register(registry)
				.increment();
	}

	@Override
	public void preempted(String lanes, Priority priority) {
		Counter.builder("aiguard.lane.preempted")
				.description("Streams on borrowed permits preempted by a more urgent arrival")
				.tags("lanes", lanes, "priority", priority.name())
				.register(registry)
				.increment();
	}

	@Override
	public void retried(String policy, Priority priority, String reason) {
		Counter.builder("aiguard.retries")
				.description("Retry attempts, by the failure that caused them")
				.tags("policy", policy, "priority", priority.name(), "reason", reason)
				.register(registry)
				.increment();
	}

	@Override
	public void retryBudgetExhausted(String policy, Priority priority) {
		Counter.builder("aiguard.retry.budget.exhausted")
				.description("Retries not made because the retry budget was spent")
				.tags("policy", policy, "priority", priority.name())
				.register(registry)
				.increment();
	}

	@Override
	public void tokensWasted(String policy, Priority priority, long chunks) {
		Counter.builder("aiguard.wasted.chunks")
				.description("Content chunks of attempts that failed, counted once the request failed")
				.baseUnit(CHUNKS)
				.tags("policy", policy, "priority", priority.name())
				.register(registry)
				.increment(chunks);
	}

	@Override
	public void promptTruncated(String policy, Priority priority, long tokensDropped) {
		Counter.builder("aiguard.prompt.truncations")
				.description("Prompts shrunk after a context-length error")
				.tags("policy", policy, "priority", priority.name())
				.register(registry)
				.increment();
		Counter.builder("aiguard.prompt.dropped.tokens")
				.description("Prompt tokens removed by truncation")
				.baseUnit(TOKENS)
				.tags("policy", policy, "priority", priority.name())
				.register(registry)
				.increment(tokensDropped);
	}

	@Override
	public void continued(String policy, Priority priority) {
		Counter.builder("aiguard.continuations")
				.description("Continuation requests after a mid-stream failure")
				.tags("policy", policy, "priority", priority.name())
				.register(registry)
				.increment();
	}

	@Override
	public void invalidAnswer(String policy, Priority priority, String validator) {
		Counter.builder("aiguard.answers.invalid")
				.description("Answers an output validator rejected, by validator")
				.tags("policy", policy, "priority", priority.name(), "validator", validator)
				.register(registry)
				.increment();
	}

	@Override
	public void answered(String policy, Priority priority, Source source) {
		meters(policy).answers[priority.ordinal()][source.ordinal()].increment();
	}

	@Override
	public void fallbackStepFailed(String policy, Priority priority, Source source) {
		Counter.builder("aiguard.fallback.failures")
				.description("Fallback steps that failed, by source")
				.tags("policy", policy, "priority", priority.name(), "source", source.name())
				.register(registry)
				.increment();
	}

	@Override
	public void fallbackStepTime(String policy, Priority priority, Source source, long nanos) {
		Timer.builder("aiguard.fallback.step")
				.description("Time spent in a fallback step")
				.tags("policy", policy, "priority", priority.name(), "source", source.name())
				.register(registry)
				.record(nanos, TimeUnit.NANOSECONDS);
	}

	@Override
	public void cacheLookup(String policy, boolean hit) {
		Counter.builder("aiguard.cache.lookups")
				.description("Response-cache lookups, by result")
				.tags("policy", policy, "result", hit ? "hit" : "miss")
				.register(registry)
				.increment();
	}

	@Override
	public void loadGovernorCreated(String governor, DoubleSupplier level, DoubleSupplier score, DoubleSupplier load,
			DoubleSupplier forecastPeak, Map<String, DoubleSupplier> subScores) {
		governorGauge("aiguard.load.level", "Severity of the load level: 0 HEALTHY, 1 WARNING, 2 DEGRADED, 3 CRITICAL",
				governor, level);
		governorGauge("aiguard.load.score", "Health score 0..100 from the weighted sub-scores", governor, score);
		governorGauge("aiguard.load.utilization", "Offered request rate divided by capacity, smoothed", governor, load);
		governorGauge("aiguard.load.forecast", "Forecast peak request rate within the horizon divided by capacity",
				governor, forecastPeak);
		subScores.forEach((signal, value) -> Gauge.builder("aiguard.load.subscore", value, DoubleSupplier::getAsDouble)
				.description("One health signal's sub-score 0..100 (NaN: no data in the last interval)")
				.tags("governor", governor, "signal", signal)
				.strongReference(true)
				.register(registry));
	}

	private void governorGauge(String meter, String description, String governor, DoubleSupplier value) {
		Gauge.builder(meter, value, DoubleSupplier::getAsDouble)
				.description(description)
				.tags("governor", governor)
				.strongReference(true)
				.register(registry);
	}

	@Override
	public void loadLevelChanged(String governor, String from, String to, String reason) {
		Counter.builder("aiguard.load.level.changes")
				.description("Load level changes, by levels and reason")
				.tags("governor", governor, "from", from, "to", to, "reason", reason)
				.register(registry)
				.increment();
	}

	@Override
	public void policyChanged(String policy) {
		policyChange(policy, "applied");
	}

	@Override
	public void policyChangeRefused(String policy) {
		policyChange(policy, "refused");
	}

	/** The actor is left out of the tags: it is free text, one time series per person would never end. */
	private void policyChange(String policy, String result) {
		Counter.builder("aiguard.policy.changes")
				.description("Live changes of a guard's policy, applied or refused")
				.tags("policy", policy, "result", result)
				.register(registry)
				.increment();
	}

	// ---- budgets ----

	@Override
	public void tokensUsed(String policy, String model, String tenant, String source, long promptTokens,
			long completionTokens) {
		if (promptTokens > 0L) {
			usedTokens(policy, model, tenantTag(tenant), source, "prompt").increment(promptTokens);
		}
		if (completionTokens > 0L) {
			usedTokens(policy, model, tenantTag(tenant), source, "completion").increment(completionTokens);
		}
	}

	private Counter usedTokens(String policy, String model, String tenant, String source, String kind) {
		return Counter.builder("aiguard.tokens")
				.description("Tokens attempts used, as the provider reported them or as the guard counted them")
				.baseUnit(TOKENS)
				.tags("policy", policy, "model", model, "tenant", tenant, "source", source, "kind", kind)
				.register(registry);
	}

	@Override
	public void cost(String policy, String model, String tenant, String source, String currency, double amount) {
		Counter.builder("aiguard.cost")
				.description("What attempts cost by the policy's price table")
				.baseUnit(currency)
				.tags("policy", policy, "model", model, "tenant", tenantTag(tenant), "source", source, "currency", currency)
				.register(registry)
				.increment(amount);
	}

	@Override
	public void retryCost(String policy, String model, String tenant, long promptTokens, long completionTokens,
			String currency, double amount) {
		String tag = tenantTag(tenant);
		retryTokens(policy, model, tag, "prompt", promptTokens);
		retryTokens(policy, model, tag, "completion", completionTokens);
		Counter.builder("aiguard.retry.cost")
				.description("Cost of attempts whose text did not become the answer")
				.baseUnit(currency)
				.tags("policy", policy, "model", model, "tenant", tag, "currency", currency)
				.register(registry)
				.increment(amount);
	}

	private void retryTokens(String policy, String model, String tenant, String kind, long tokens) {
		if (tokens > 0L) {
			Counter.builder("aiguard.retry.tokens")
					.description("Tokens of attempts whose text did not become the answer")
					.baseUnit(TOKENS)
					.tags("policy", policy, "model", model, "tenant", tenant, "kind", kind)
					.register(registry)
					.increment(tokens);
		}
	}

	@Override
	public void budgetRejected(String policy, Priority priority, String scope, String limit) {
		Counter.builder("aiguard.budget.rejected")
				.description("Requests a budget refused")
				.tags("policy", policy, "priority", priority.name(), "scope", scope, "limit", limit)
				.register(registry)
				.increment();
	}

	@Override
	public void budgetThrottled(String policy, Priority priority, String providerKey, long waitNanos) {
		Timer.builder("aiguard.budget.throttled")
				.description("Waits for a provider key's bucket, instead of the provider's 429")
				.tags("policy", policy, "priority", priority.name(), "provider", providerKey)
				.register(registry)
				.record(waitNanos, TimeUnit.NANOSECONDS);
	}

	@Override
	public void budgetRemaining(String policy, String scope, String id, String limit, LongSupplier remaining) {
		boolean tenant = "tenant".equals(scope);
		if (tenant && !tenantTag(id).equals(id)) {
			return; // a gauge of "other tenants" would say nothing: their buckets are many
		}
		budgetGauges.remaining(policy, scope, id, limit, remaining, tenant);
	}

	@Override
	public void budgetForgotten(String policy, String scope, String id) {
		budgetGauges.forget(policy, id);
	}

	@Override
	public void bucketStoreMode(String policy, Supplier<Enum<?>> mode) {
		budgetGauges.storeMode(policy, mode);
	}

	@Override
	public void outputCapped(String policy, Priority priority) {
		Counter.builder("aiguard.output.capped")
				.description("Answers the guard's output cap ended")
				.tags("policy", policy, "priority", priority.name())
				.register(registry)
				.increment();
	}

	/** The meters recorded once per stream or request, pre-registered per policy. */
	private final class PolicyMeters {

		final Counter[][] streams = new Counter[PRIORITIES.length][OUTCOMES.length];
		final Timer[][] duration = new Timer[PRIORITIES.length][OUTCOMES.length];
		final Timer[] ttft = new Timer[PRIORITIES.length];
		final Counter[] chunks = new Counter[PRIORITIES.length];
		final Counter[] outputTruncated = new Counter[PRIORITIES.length];
		final Counter[][] stalls = new Counter[PRIORITIES.length][PHASES.length];
		final Counter[][] answers = new Counter[PRIORITIES.length][SOURCES.length];

		PolicyMeters(String policy) {
			for (Priority p : PRIORITIES) {
				int i = p.ordinal();
				for (Outcome o : OUTCOMES) {
					streams[i][o.ordinal()] = Counter.builder("aiguard.streams")
							.description("Guarded stream attempts, by outcome")
							.tags("policy", policy, "priority", p.name(), "outcome", o.name())
							.register(registry);
					duration[i][o.ordinal()] = Timer.builder("aiguard.stream.duration")
							.description("Duration of a stream attempt, subscription to end")
							.tags("policy", policy, "priority", p.name(), "outcome", o.name())
							.register(registry);
				}
				ttft[i] = Timer.builder("aiguard.stream.ttft")
						.description("Time from subscription to the first content chunk")
						.tags("policy", policy, "priority", p.name())
						.register(registry);
				chunks[i] = Counter.builder("aiguard.delivered.chunks")
						.description("Content chunks stream attempts delivered")
						.baseUnit(CHUNKS)
						.tags("policy", policy, "priority", p.name())
						.register(registry);
				outputTruncated[i] = Counter.builder("aiguard.output.truncated")
						.description("Answers cut by the output limit (finish reason length / max_tokens)")
						.tags("policy", policy, "priority", p.name())
						.register(registry);
				for (StallPhase ph : PHASES) {
					stalls[i][ph.ordinal()] = Counter.builder("aiguard.stalls")
							.description("Streams that passed a deadline, by phase")
							.tags("policy", policy, "priority", p.name(), "phase", ph.name())
							.register(registry);
				}
				for (Source s : SOURCES) {
					answers[i][s.ordinal()] = Counter.builder("aiguard.answers")
							.description("Requests answered, by source")
							.tags("policy", policy, "priority", p.name(), "source", s.name())
							.register(registry);
				}
			}
		}
	}
}
