package dev.aiguard.budget;

import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Tenant;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.provider.RateLimitListener;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.truncation.PromptTruncator;
import dev.aiguard.truncation.TokenCounter;
import org.jspecify.annotations.Nullable;
import reactor.util.context.ContextView;

/**
 * A policy's budgets at work: the {@link BudgetSpec} applied to a {@link BucketStore}. The guard
 * builds one per policy and asks it at three points of a request: before admission (the prompt's
 * size and the tenant's budgets), before each attempt is sent (the provider key's limits) and when
 * an attempt ends (what it used and cost). It can be used without the guard the same way.
 *
 * <pre>{@code
 * BudgetGate gate = BudgetGate.create("chat", spec, LocalBucketStore.create(), GuardMetrics.noop());
 * BudgetGate.TenantBudget acme = gate.tenant("acme");
 * gate.admit(acme, Priority.P1, 1200, 0, callback);      // callback.budgetAdmitted(..) or budgetRefused(..)
 * }</pre>
 *
 * <p>With a store that answers at once ({@link BucketStore#immediate()}), every call answers on the
 * calling thread and a check allocates nothing after the tenant's first request; with a shared
 * store the answers come when its futures complete.
 */
public final class BudgetGate {

	static final String REQUESTS = "requests";
	static final String TOKENS = "tokens";
	static final String COST = "cost";
	static final String[] LIMITS = { REQUESTS, TOKENS, COST };

	/**
	 * The cost buckets count micro-units (1e-6) of the currency: nano-units would limit a day's budget
	 * to 86 400 currency units (Bucket4j refills at most one unit per nanosecond).
	 *
	 * @return nano-units as micro-units, rounded up
	 */
	static long costUnits(long nanos) {
		return nanos <= 0L ? 0L : nanos / 1_000L + (nanos % 1_000L == 0L ? 0L : 1L);
	}

	/** Hears the outcome of a tenant admission ({@link #admit}). */
	public interface Admission {

		/**
		 * @param tokensTaken tokens taken from the tenant's tokens budget ahead of the answer
		 * @param costTaken micro-units taken from the tenant's cost budget ahead of the answer
		 */
		void budgetAdmitted(long tokensTaken, long costTaken);

		/** @param refusal reason {@code BUDGET}, with the time until the budget has room when known */
		void budgetRefused(AdmissionRejectedException refusal);
	}

	/** Hears the outcome of a provider check ({@link #takeProvider}). */
	public interface ProviderTurn {

		/**
		 * @param packed a reservation packed in a long ({@link Take#packReservation()}): {@code >= 0}
		 *        the units are the request's and the attempt may be sent after that many nanoseconds;
		 *        negative refused, with the wait until the key's buckets have room
		 *        ({@code Long.MAX_VALUE} when they never will for this request)
		 */
		void providerAnswered(long packed);
	}

	/** One tenant's buckets, resolved once per tenant id and kept. */
	public static final class TenantBudget {
		final String id;
		@Nullable
		final BucketSpec requests;
		@Nullable
		final BucketSpec tokens;
		@Nullable
		final BucketSpec cost;
		/** By priority ordinal, then bucket (requests, tokens, cost): units a request must leave. */
		final long[][] floors;
		final TenantLimits limits;
		/**
		 * The buckets looked up once in a synchronous store: set for every bucket the tenant has
		 * when the store is synchronous, {@code null} otherwise.
		 */
		BucketStore.Immediate.@Nullable Resolved requestsAt;
		BucketStore.Immediate.@Nullable Resolved tokensAt;
		BucketStore.Immediate.@Nullable Resolved costAt;
		/** The clock's nanos when a request last named this tenant (to within 1/64 of the idle time). */
		volatile long lastUsed;
		/** Set while a sweep lets this tenant go ({@link TenantTable#touched}). */
		volatile boolean lettingGo;
		/** With a store that answers later: what each bucket (requests, tokens, cost) last said it held. */
		final long[] seen;

		TenantBudget(String id, TenantLimits limits, BudgetSpec spec) {
			this.id = id;
			this.limits = limits;
			this.requests = limits.requestsPerMinute() > 0
					? BucketSpec.of("tenant.requests", limits.requestsPerMinute(), Duration.ofMinutes(1)) : null;
			this.tokens = limits.tokensPerMinute() > 0
					? BucketSpec.of("tenant.tokens", limits.tokensPerMinute(), Duration.ofMinutes(1)) : null;
			this.cost = limits.costPerDay() != null
					? BucketSpec.of("tenant.cost", Math.max(1L, costUnits(Money.nanos("costPerDay", limits.costPerDay()))),
							Duration.ofDays(1))
					: null;
			this.seen = new long[] { capacity(requests), capacity(tokens), capacity(cost) };
			Priority[] all = Priority.values();
			this.floors = new long[all.length][3];
			for (Priority p : all) {
				double f = spec.floorFor(p);
				floors[p.ordinal()][0] = floor(requests, f);
				floors[p.ordinal()][1] = floor(tokens, f);
				floors[p.ordinal()][2] = floor(cost, f);
			}
		}

		private static long capacity(@Nullable BucketSpec spec) {
			return spec == null ? 0L : spec.capacity();
		}

		@Nullable
		BucketSpec bucket(int i) {
			return i == 0 ? requests : i == 1 ? tokens : cost;
		}

		private static long floor(@Nullable BucketSpec spec, double fraction) {
			return spec == null || fraction <= 0d ? 0L : (long) Math.ceil(spec.capacity() * fraction);
		}

		/** @return the tenant's id */
		public String id() {
			return id;
		}

		boolean limited() {
			return requests != null || tokens != null || cost != null;
		}
	}

	private final BudgetParts parts;
	private final TenantTable tenants;
	private final TenantBuckets tenantBuckets;
	private final TenantAdmission admission;
	private final ProviderBuckets provider;
	private final UsageSettlement settlement;
	private final ModelCounters counters;

	private BudgetGate(String policy, BudgetSpec spec, @Nullable BucketStore store, GuardMetrics metrics,
			LongSupplier nanoClock) {
		this.parts = new BudgetParts(policy, spec, store, metrics);
		this.tenantBuckets = new TenantBuckets(parts);
		this.tenants = new TenantTable(tenantBuckets::newTenant, tenantBuckets::release, nanoClock,
				spec.tenantIdle().toNanos(), spec.maxTenants());
		this.admission = new TenantAdmission(parts);
		if (store != null) {
			metrics.bucketStoreMode(policy, store::mode);
		}
		this.provider = new ProviderBuckets(parts);
		this.settlement = new UsageSettlement(parts, tenants, provider.tokens);
		this.counters = new ModelCounters(spec);
	}

	/**
	 * @param policy names the policy in meters and messages
	 * @param store where buckets live; may be {@code null} only when the spec needs none
	 *        ({@link BudgetSpec#needsBuckets()})
	 * @throws IllegalArgumentException when the spec needs buckets and there is no store
	 */
	public static BudgetGate create(String policy, BudgetSpec spec, @Nullable BucketStore store, GuardMetrics metrics) {
		return create(policy, spec, store, metrics, System::nanoTime);
	}

	/**
	 * @param nanoClock the clock tenants' idle time is measured on (the policy's)
	 * @see #create(String, BudgetSpec, BucketStore, GuardMetrics)
	 */
	public static BudgetGate create(String policy, BudgetSpec spec, @Nullable BucketStore store, GuardMetrics metrics,
			LongSupplier nanoClock) {
		Objects.requireNonNull(policy, "policy");
		Objects.requireNonNull(nanoClock, "nanoClock");
		Objects.requireNonNull(spec, "spec");
		Objects.requireNonNull(metrics, "metrics");
		spec.check();
		if (store == null && spec.needsBuckets()) {
			throw new IllegalArgumentException("budget needs a bucketStore for its tenant or provider limits, was none");
		}
		return new BudgetGate(policy, spec, store, metrics, nanoClock);
	}

	/** @return the spec this gate applies */
	public BudgetSpec spec() {
		return parts.spec;
	}

	/** @return the store, or {@code null} when the spec needs none */
	@Nullable
	public BucketStore store() {
		return parts.store;
	}

	// ---- what a request is ----

	/**
	 * @return the tenant of the request whose context this is: the context's {@link Tenant}, else
	 *         {@link BudgetSpec#defaultTenant()}
	 * @throws IllegalArgumentException when the context holds an invalid tenant
	 */
	public TenantBudget tenant(ContextView context) {
		return tenant(Tenant.from(context).map(Tenant::id).orElse(parts.spec.defaultTenant()));
	}

	/**
	 * @return the budget of the tenant with this id, resolved on first use and held while it is in
	 *         use ({@link BudgetSpec#tenantIdle}, {@link BudgetSpec#maxTenants})
	 */
	public TenantBudget tenant(String id) {
		return tenants.get(id);
	}

	/** @return how many tenants the gate holds now, at most about {@link BudgetSpec#maxTenants()} */
	public int tenantCount() {
		return tenants.size();
	}

	/**
	 * @param top how many of the most drained tenants to list, {@code >= 0}
	 * @return the count of tenants held and the {@code top} with the smallest share left of any of
	 *         their limits; reads each held tenant's buckets once
	 */
	public TenantSummary summary(int top) {
		if (top < 0) {
			throw new IllegalArgumentException("top must be >= 0, was " + top);
		}
		return tenants.summary(top, tenantBuckets::remaining);
	}

	/** Steps the sweep of idle tenants {@code rounds} times now (tests, and callers that want it at once). */
	void sweepTenants(int rounds) {
		tenants.sweepNow(rounds);
	}

	/** @return the request's model, else the spec's default model, else {@code unknown} */
	public String modelOf(@Nullable ChatRequest request) {
		return counters.modelOf(request);
	}

	/** @return the counter for {@code model}: its own (longest matching name), else the spec's */
	public TokenCounter counterFor(String model) {
		return counters.counterFor(model);
	}

	/** @return the prompt's tokens, counted with the model's counter */
	public int count(ChatRequest request, String model) {
		return counters.count(request, model);
	}

	/**
	 * Applies the prompt cap.
	 *
	 * @param counted the prompt's tokens ({@link #count})
	 * @param truncator the policy's truncator, or {@code null} for {@link PromptTruncator#tokenBudget()}
	 * @return the request itself when it fits, else the request shortened to the cap
	 * @throws PromptTooLargeException when it does not fit and is refused, or cannot be shortened to fit
	 */
	public ChatRequest capPrompt(ChatRequest request, int counted, String model, @Nullable PromptTruncator truncator) {
		return counters.capPrompt(request, counted, model, truncator);
	}

	/** @return what {@code promptTokens} of {@code model} cost, in nano-units of the currency */
	public long promptCost(String model, long promptTokens) {
		return parts.spec.prices().costNanos(model, promptTokens, 0L);
	}

	/** @return what the tokens cost, in nano-units of {@link PriceTable#currency()} */
	public long costNanos(String model, long promptTokens, long completionTokens) {
		return parts.spec.prices().costNanos(model, promptTokens, completionTokens);
	}

	// ---- tenants ----

	/** @return whether the tenant has any limit */
	public boolean limits(TenantBudget tenant) {
		return parts.store != null && tenant.limited();
	}

	/**
	 * Takes a request, the prompt's tokens and the prompt's cost from the tenant's budgets, keeping
	 * the reserves of more urgent priorities; on a refusal, gives back what it took. Answers on the
	 * calling thread with a store that answers at once.
	 */
	public void admit(TenantBudget tenant, Priority priority, long promptTokens, long promptCostNanos, Admission to) {
		try {
			admission.take(tenant, priority, promptTokens, promptCostNanos, to);
		}
		finally {
			tenants.touched(tenant);
		}
	}

	// ---- the provider key ----

	/** @return whether the policy limits a provider key */
	public boolean limitsProvider() {
		return provider.limited();
	}

	/** @return the provider key, or {@code null} */
	@Nullable
	public String providerKey() {
		return parts.spec.providerKey();
	}

	/** @return the tokens {@link #takeProvider} takes for a prompt of this size */
	public static long providerUnits(long promptTokens) {
		return Math.max(1L, promptTokens);
	}

	/**
	 * Takes one request and the prompt's tokens from the provider key's buckets. When they lack room,
	 * reserves both for later, in line behind the requests that reserved before (across every instance
	 * sharing the store), provided the wait is at most {@code maxWaitNanos}; otherwise takes nothing.
	 * Answers on the calling thread with a store that answers at once.
	 *
	 * @param to hears the outcome packed as a reservation ({@link Take#packReservation()}): reserved
	 *        with the wait before the attempt may be sent ({@code 0}: now), or refused with the wait
	 *        until the key's buckets would have room
	 */
	public void takeProvider(long promptTokens, long maxWaitNanos, ProviderTurn to) {
		provider.take(promptTokens, maxWaitNanos, to);
	}

	/**
	 * Puts back a reservation that was not used: the request ended while it waited for its turn.
	 *
	 * @param tokens the tokens reserved with it ({@link #providerUnits})
	 */
	public void releaseProvider(long tokens) {
		provider.release(tokens);
	}

	/** A request waits {@code waitNanos} for the provider key's buckets. */
	public void throttled(Priority priority, long waitNanos) {
		provider.throttled(priority, waitNanos);
	}

	/** @return the refusal of a request that would wait {@code waitNanos} for the key, more than allowed */
	public AdmissionRejectedException providerRefusal(Priority priority, long waitNanos, long allowedNanos) {
		return provider.refusal(priority, waitNanos, allowedNanos);
	}

	/** @return what the guard puts in each attempt's context so the client's rate-limit headers reach this gate */
	public RateLimitListener headerListener() {
		return provider.headerListener();
	}

	/**
	 * The provider answered {@code 429}: its {@code Retry-After} pauses the key's buckets for every
	 * request using them (without one, the reset of its exhausted window does), and its rate-limit
	 * headers correct them.
	 */
	public void rateLimited(RateLimitedException e) {
		provider.rateLimited(e);
	}

	// ---- what an attempt used ----

	/**
	 * Settles what an attempt used against what was taken ahead of it: more is taken regardless
	 * (a debt later refills pay first), less is given back.
	 *
	 * @param tenant the request's tenant
	 * @param tokens prompt and completion tokens the attempt used
	 * @param tenantTokensTaken tokens taken from the tenant ahead of it
	 * @param costNanos what it cost
	 * @param tenantCostTaken micro-units of the currency taken from the tenant ahead of it (as
	 *        {@link Admission#budgetAdmitted} said)
	 * @param providerTokensTaken tokens taken from the provider key ahead of it
	 */
	public void settle(TenantBudget tenant, long tokens, long tenantTokensTaken, long costNanos, long tenantCostTaken,
			long providerTokensTaken) {
		settlement.settle(tenant, tokens, tenantTokensTaken, costNanos, tenantCostTaken, providerTokensTaken);
	}

	/** Tells the meters what an attempt used and cost. */
	public void record(TenantBudget tenant, String model, boolean fromProvider, long promptTokens,
			long completionTokens, long costNanos, boolean wasted) {
		settlement.record(tenant, model, fromProvider, promptTokens, completionTokens, costNanos, wasted);
	}

	@Override
	public String toString() {
		return "BudgetGate(" + parts.policy + ", " + parts.store + ")";
	}
}
