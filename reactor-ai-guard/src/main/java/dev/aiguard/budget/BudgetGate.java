package dev.aiguard.budget;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Tenant;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.provider.RateLimitListener;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.provider.RateLimits;
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

	private final String policy;
	private final BudgetSpec spec;
	@Nullable
	private final BucketStore store;
	private final BucketStore.@Nullable Immediate now;
	private final GuardMetrics metrics;
	private final TenantTable tenants;
	private final ConcurrentHashMap<String, TokenCounter> countersByModel = new ConcurrentHashMap<>();
	@Nullable
	private final BucketSpec providerRequests;
	@Nullable
	private final BucketSpec providerTokens;
	private final RateLimitListener headers = this::heard;
	/** What a shared store last said the provider key's buckets hold, for the gauges. */
	private final ConcurrentHashMap<String, long[]> lastSeen = new ConcurrentHashMap<>();

	private BudgetGate(String policy, BudgetSpec spec, @Nullable BucketStore store, GuardMetrics metrics,
			LongSupplier nanoClock) {
		this.policy = policy;
		this.tenants = new TenantTable(this::newTenant, this::release, nanoClock, spec.tenantIdle().toNanos(),
				spec.maxTenants());
		this.spec = spec;
		this.store = store;
		this.now = store == null ? null : store.immediate();
		this.metrics = metrics;
		ProviderLimits p = spec.provider();
		this.providerRequests = p.requestsPerMinute() > 0
				? BucketSpec.of("provider.requests", p.requestsPerMinute(), Duration.ofMinutes(1)) : null;
		this.providerTokens = p.tokensPerMinute() > 0
				? BucketSpec.of("provider.tokens", p.tokensPerMinute(), Duration.ofMinutes(1)) : null;
		if (store != null) {
			metrics.bucketStoreMode(policy, store::mode);
			String key = spec.providerKey();
			if (key != null) {
				gauge("provider", key, REQUESTS, providerRequests);
				gauge("provider", key, TOKENS, providerTokens);
			}
		}
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
		return spec;
	}

	/** @return the store, or {@code null} when the spec needs none */
	@Nullable
	public BucketStore store() {
		return store;
	}

	// ---- what a request is ----

	/**
	 * @return the tenant of the request whose context this is: the context's {@link Tenant}, else
	 *         {@link BudgetSpec#defaultTenant()}
	 * @throws IllegalArgumentException when the context holds an invalid tenant
	 */
	public TenantBudget tenant(ContextView context) {
		return tenant(Tenant.from(context).map(Tenant::id).orElse(spec.defaultTenant()));
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
		return tenants.summary(top, this::remaining);
	}

	/** Steps the sweep of idle tenants {@code rounds} times now (tests, and callers that want it at once). */
	void sweepTenants(int rounds) {
		tenants.sweepNow(rounds);
	}

	/** Lets a tenant's buckets go when they are full (or whatever they hold): see {@link TenantTable}. */
	private boolean release(TenantBudget t, boolean evenIfDrained) {
		BucketStore.Immediate sync = now;
		if (sync != null) {
			for (int i = 0; i < 3; i++) {
				BucketSpec b = t.bucket(i);
				if (b != null && !sync.forget(b, t.id, evenIfDrained)) {
					return false; // the ones already let go were full: a new one starts the same
				}
			}
		}
		if (store != null) {
			metrics.budgetForgotten(policy, "tenant", t.id);
		}
		return true;
	}

	private TenantBudget newTenant(String id) {
		TenantBudget t = new TenantBudget(id, spec.limitsOf(id), spec);
		BucketStore.Immediate sync = now;
		if (sync != null) {
			t.requestsAt = resolve(sync, t.requests, id);
			t.tokensAt = resolve(sync, t.tokens, id);
			t.costAt = resolve(sync, t.cost, id);
		}
		if (store != null) {
			for (int i = 0; i < 3; i++) {
				BucketSpec b = t.bucket(i);
				if (b != null) {
					int at = i;
					metrics.budgetRemaining(policy, "tenant", id, LIMITS[i],
							sync != null ? () -> sync.available(b, id) : () -> t.seen[at]);
				}
			}
		}
		return t;
	}

	private void gauge(String scope, String id, String limit, @Nullable BucketSpec bucket) {
		if (bucket == null) {
			return;
		}
		LongSupplier remaining;
		BucketStore.Immediate sync = now;
		if (sync != null) {
			remaining = () -> sync.available(bucket, id);
		}
		else {
			long[] seen = lastSeen.computeIfAbsent(bucket.name() + '/' + id, k -> new long[] { bucket.capacity() });
			remaining = () -> seen[0];
		}
		metrics.budgetRemaining(policy, scope, id, limit, remaining);
	}

	/** @return what the tenant's bucket {@code i} (requests, tokens, cost) holds now, or last said it held */
	long remaining(TenantBudget t, int i) {
		BucketSpec b = t.bucket(i);
		BucketStore.Immediate sync = now;
		return b == null ? 0L : sync != null ? sync.available(b, t.id) : t.seen[i];
	}

	private void saw(BucketSpec bucket, String id, long remaining) {
		long[] seen = lastSeen.get(bucket.name() + '/' + id);
		if (seen != null) {
			seen[0] = remaining;
		}
	}

	/** @return the request's model, else the spec's default model, else {@code unknown} */
	public String modelOf(@Nullable ChatRequest request) {
		String model = request != null ? request.model() : null;
		if (model != null && !model.isBlank()) {
			return model;
		}
		String d = spec.defaultModel();
		return d != null ? d : "unknown";
	}

	/** @return the counter for {@code model}: its own (longest matching name), else the spec's */
	public TokenCounter counterFor(String model) {
		Map<String, TokenCounter> own = spec.counters();
		if (own.isEmpty()) {
			return spec.counter();
		}
		TokenCounter c = countersByModel.get(model);
		if (c == null) {
			c = countersByModel.computeIfAbsent(model, m -> {
				String best = null;
				for (String prefix : own.keySet()) {
					if (m.startsWith(prefix) && (best == null || prefix.length() > best.length())) {
						best = prefix;
					}
				}
				return best != null ? own.get(best) : spec.counter();
			});
		}
		return c;
	}

	/** @return the prompt's tokens, counted with the model's counter */
	public int count(ChatRequest request, String model) {
		return counterFor(model).count(request.messages());
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
		int cap = spec.promptCap();
		if (cap == 0 || counted <= cap) {
			return request;
		}
		if (spec.promptCapAction() == PromptCapAction.REFUSE) {
			throw new PromptTooLargeException(cap, counted);
		}
		TokenCounter counter = counterFor(model);
		ChatRequest shorter = (truncator != null ? truncator : PromptTruncator.tokenBudget()).truncate(request, cap, counter);
		if (shorter == null) {
			throw new PromptTooLargeException(cap, counted);
		}
		int after = counter.count(shorter.messages());
		if (after > cap) {
			throw new PromptTooLargeException(cap, after);
		}
		return shorter;
	}

	/** @return what {@code promptTokens} of {@code model} cost, in nano-units of the currency */
	public long promptCost(String model, long promptTokens) {
		return spec.prices().costNanos(model, promptTokens, 0L);
	}

	/** @return what the tokens cost, in nano-units of {@link PriceTable#currency()} */
	public long costNanos(String model, long promptTokens, long completionTokens) {
		return spec.prices().costNanos(model, promptTokens, completionTokens);
	}

	// ---- tenants ----

	/** @return whether the tenant has any limit */
	public boolean limits(TenantBudget tenant) {
		return store != null && tenant.limited();
	}

	/**
	 * Takes a request, the prompt's tokens and the prompt's cost from the tenant's budgets, keeping
	 * the reserves of more urgent priorities; on a refusal, gives back what it took. Answers on the
	 * calling thread with a store that answers at once.
	 */
	public void admit(TenantBudget tenant, Priority priority, long promptTokens, long promptCostNanos, Admission to) {
		try {
			take(tenant, priority, promptTokens, promptCostNanos, to);
		}
		finally {
			tenants.touched(tenant);
		}
	}

	private void take(TenantBudget tenant, Priority priority, long promptTokens, long promptCostNanos, Admission to) {
		long tokenUnits = Math.max(1L, promptTokens);
		long costUnits = Math.max(1L, costUnits(promptCostNanos));
		long[] floors = tenant.floors[priority.ordinal()];
		BucketStore.Immediate sync = now;
		if (sync == null) {
			new AsyncAdmission(tenant, priority, new long[] { 1L, tokenUnits, costUnits }, floors, to).step(0);
			return;
		}
		long r = tenant.requests == null ? 0L : take(sync, tenant.requestsAt, tenant.requests, tenant.id, 1L, floors[0]);
		if (!Take.isTaken(r)) {
			to.budgetRefused(refusal(tenant, priority, 0, r));
			return;
		}
		long t = tenant.tokens == null ? 0L : take(sync, tenant.tokensAt, tenant.tokens, tenant.id, tokenUnits, floors[1]);
		if (!Take.isTaken(t)) {
			giveBack(sync, tenant.requests, tenant.id, 1L);
			to.budgetRefused(refusal(tenant, priority, 1, t));
			return;
		}
		long c = tenant.cost == null ? 0L : take(sync, tenant.costAt, tenant.cost, tenant.id, costUnits, floors[2]);
		if (!Take.isTaken(c)) {
			giveBack(sync, tenant.requests, tenant.id, 1L);
			giveBack(sync, tenant.tokens, tenant.id, tokenUnits);
			to.budgetRefused(refusal(tenant, priority, 2, c));
			return;
		}
		to.budgetAdmitted(tenant.tokens == null ? 0L : tokenUnits, tenant.cost == null ? 0L : costUnits);
	}

	private static BucketStore.Immediate.@Nullable Resolved resolve(BucketStore.Immediate sync,
			@Nullable BucketSpec bucket, String id) {
		return bucket == null ? null : sync.resolve(bucket, id);
	}

	/** A take that did not say what is left: only {@link Take#isTaken} is read from it. */
	private static final long TAKEN_QUIETLY = Take.packTaken(0L);

	/**
	 * Takes {@code units} from the resolved bucket {@code at} unless that would leave less than
	 * {@code floor}; packed. Without a floor it takes quietly, and only a refusal asks for the wait.
	 */
	private static long take(BucketStore.Immediate sync, BucketStore.Immediate.Resolved at, BucketSpec bucket,
			String id, long units, long floor) {
		if (floor <= 0L) {
			// refused: ask again with the wait (the bucket may have refilled since, then it takes)
			return at.tryTakeQuietly(units) ? TAKEN_QUIETLY : at.tryTake(units);
		}
		long packed = at.tryTake(units);
		if (Take.isTaken(packed) && Take.remaining(packed) >= floor) {
			return packed; // the give-back below is built only when it may be needed
		}
		return keepFloor(packed, bucket, units, floor, () -> sync.giveBack(bucket, id, units));
	}

	private static long keepFloor(long packed, BucketSpec bucket, long units, long floor, Runnable giveBack) {
		if (floor <= 0L) {
			return packed;
		}
		if (Take.isTaken(packed)) {
			long remaining = Take.remaining(packed);
			if (remaining >= floor) {
				return packed;
			}
			giveBack.run();
			return Take.packRefused(refillNanos(bucket, floor - remaining));
		}
		long wait = Take.nanosToWait(packed);
		return Take.packRefused(wait == Long.MAX_VALUE ? wait : saturatedAdd(wait, refillNanos(bucket, floor)));
	}

	private static long refillNanos(BucketSpec bucket, long units) {
		double nanos = Math.ceil(units * (double) bucket.period().toNanos() / bucket.capacity());
		return nanos >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) nanos;
	}

	private static long saturatedAdd(long a, long b) {
		long s = a + b;
		return ((a ^ s) & (b ^ s)) < 0 ? Long.MAX_VALUE : s;
	}

	private static void giveBack(BucketStore.Immediate sync, @Nullable BucketSpec bucket, String id, long units) {
		if (bucket != null) {
			sync.giveBack(bucket, id, units);
		}
	}

	private AdmissionRejectedException refusal(TenantBudget tenant, Priority priority, int which, long packed) {
		String limit = which == 0 ? REQUESTS : which == 1 ? TOKENS : COST;
		metrics.budgetRejected(policy, priority, "tenant", limit);
		long wait = Take.nanosToWait(packed);
		String what = which == 0 ? tenant.limits.requestsPerMinute() + " requests per minute"
				: which == 1 ? tenant.limits.tokensPerMinute() + " tokens per minute"
						: tenant.limits.costPerDay().toPlainString() + " " + spec.prices().currency() + " per day";
		double floor = spec.floorFor(priority);
		return new AdmissionRejectedException(priority, AdmissionRejectedException.Reason.BUDGET,
				"tenant '" + tenant.id + "' is over its budget of " + what
						+ (floor > 0d ? " (the last " + Math.round(floor * 100) + " % is kept for more urgent priorities)" : "")
						+ (wait == Long.MAX_VALUE ? "; this request is larger than the whole budget" : ""),
				wait == Long.MAX_VALUE ? null : Duration.ofNanos(wait));
	}

	/** The same steps on a store with futures: one bucket after another, giving back on a refusal. */
	private final class AsyncAdmission {
		final TenantBudget tenant;
		final Priority priority;
		final long[] units;
		final long[] floors;
		final Admission to;

		AsyncAdmission(TenantBudget tenant, Priority priority, long[] units, long[] floors, Admission to) {
			this.tenant = tenant;
			this.priority = priority;
			this.units = units;
			this.floors = floors;
			this.to = to;
		}

		@Nullable
		BucketSpec bucket(int i) {
			return tenant.bucket(i);
		}

		void step(int i) {
			while (i < 3 && bucket(i) == null) {
				i++;
			}
			if (i == 3) {
				to.budgetAdmitted(tenant.tokens == null ? 0L : units[1], tenant.cost == null ? 0L : units[2]);
				return;
			}
			int at = i;
			BucketSpec b = bucket(at);
			CompletableFuture<Take> f;
			try {
				f = store.tryTake(b, tenant.id, units[at]);
			}
			catch (RuntimeException e) {
				f = CompletableFuture.failedFuture(e);
			}
			f.whenComplete((take, error) -> {
				if (error != null || take == null) {
					undo(at);
					metrics.budgetRejected(policy, priority, "tenant", "store");
					to.budgetRefused(new AdmissionRejectedException(priority, AdmissionRejectedException.Reason.BUDGET,
							"the budget store could not answer for tenant '" + tenant.id + "': " + error));
					return;
				}
				if (take.taken()) {
					tenant.seen[at] = take.remaining();
				}
				long packed = keepFloor(take.pack(), b, units[at], floors[at],
						() -> store.giveBack(b, tenant.id, units[at]));
				if (!Take.isTaken(packed)) {
					undo(at);
					to.budgetRefused(refusal(tenant, priority, at, packed));
					return;
				}
				step(at + 1);
			});
		}

		/** Gives back what the buckets before {@code i} took. */
		void undo(int i) {
			for (int j = 0; j < i; j++) {
				BucketSpec b = bucket(j);
				if (b != null) {
					store.giveBack(b, tenant.id, units[j]);
				}
			}
		}
	}

	// ---- the provider key ----

	/** @return whether the policy limits a provider key */
	public boolean limitsProvider() {
		return store != null && (providerRequests != null || providerTokens != null);
	}

	/** @return the provider key, or {@code null} */
	@Nullable
	public String providerKey() {
		return spec.providerKey();
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
		String key = spec.providerKey();
		long units = providerUnits(promptTokens);
		long maxWait = Math.max(0L, maxWaitNanos);
		BucketStore.Immediate sync = now;
		if (sync != null) {
			long r = providerRequests == null ? 0L : reserveNow(sync, providerRequests, key, 1L, maxWait);
			if (r < 0L) {
				to.providerAnswered(r);
				return;
			}
			long t = providerTokens == null ? 0L : reserveNow(sync, providerTokens, key, units, maxWait);
			if (t < 0L) {
				giveBack(sync, providerRequests, key, 1L);
				to.providerAnswered(t);
				return;
			}
			to.providerAnswered(Math.max(r, t));
			return;
		}
		reserveLater(providerRequests, key, 1L, maxWait).whenComplete((r, error) -> {
			if (error != null || r == null) {
				to.providerAnswered(Take.packRefused(Long.MAX_VALUE));
				return;
			}
			if (!r.taken()) {
				to.providerAnswered(r.packReservation());
				return;
			}
			reserveLater(providerTokens, key, units, maxWait).whenComplete((t, error2) -> {
				if (error2 != null || t == null || !t.taken()) {
					if (providerRequests != null) {
						store.giveBack(providerRequests, key, 1L);
					}
					to.providerAnswered(t == null ? Take.packRefused(Long.MAX_VALUE) : t.packReservation());
					return;
				}
				to.providerAnswered(Math.max(r.nanosToWait(), t.nanosToWait()));
			});
		});
	}

	/**
	 * The bucket's units now when it holds them (remembering what is left for the gauge), else a
	 * reservation.
	 *
	 * @return the reservation, packed ({@link Take#packReservation()})
	 */
	private long reserveNow(BucketStore.Immediate sync, BucketSpec bucket, String key, long units, long maxWait) {
		long taken = sync.tryTake(bucket, key, units);
		if (Take.isTaken(taken)) {
			saw(bucket, key, Take.remaining(taken));
			return 0L;
		}
		long reserved = sync.reserve(bucket, key, units, maxWait);
		if (reserved >= 0L) {
			saw(bucket, key, 0L);
		}
		return reserved;
	}

	/**
	 * {@link #reserveNow} through the futures, as one store operation: {@link BucketStore#reserve} takes
	 * the units when the bucket holds them (saying what is left) and reserves otherwise, so a store on a
	 * network answers "now, or a place in the line" within one deadline of its own. A missing bucket is
	 * reserved at once.
	 */
	private CompletableFuture<Take> reserveLater(@Nullable BucketSpec bucket, String key, long units, long maxWait) {
		if (bucket == null) {
			return CompletableFuture.completedFuture(Take.ofReserved(0L));
		}
		CompletableFuture<Take> reservation;
		try {
			reservation = store.reserve(bucket, key, units, maxWait);
		}
		catch (RuntimeException e) {
			return CompletableFuture.failedFuture(e);
		}
		return reservation.thenApply(reserved -> {
			if (reserved.taken()) {
				saw(bucket, key, reserved.nanosToWait() == 0L ? reserved.remaining() : 0L);
			}
			return reserved;
		});
	}

	/**
	 * Puts back a reservation that was not used: the request ended while it waited for its turn.
	 *
	 * @param tokens the tokens reserved with it ({@link #providerUnits})
	 */
	public void releaseProvider(long tokens) {
		String key = spec.providerKey();
		BucketStore.Immediate sync = now;
		if (sync != null) {
			giveBack(sync, providerRequests, key, 1L);
			if (tokens > 0L) {
				giveBack(sync, providerTokens, key, tokens);
			}
			return;
		}
		if (providerRequests != null) {
			store.giveBack(providerRequests, key, 1L);
		}
		if (providerTokens != null && tokens > 0L) {
			store.giveBack(providerTokens, key, tokens);
		}
	}

	/** A request waits {@code waitNanos} for the provider key's buckets. */
	public void throttled(Priority priority, long waitNanos) {
		metrics.budgetThrottled(policy, priority, String.valueOf(spec.providerKey()), waitNanos);
	}

	/** @return the refusal of a request that would wait {@code waitNanos} for the key, more than allowed */
	public AdmissionRejectedException providerRefusal(Priority priority, long waitNanos, long allowedNanos) {
		metrics.budgetRejected(policy, priority, "provider", REQUESTS);
		boolean never = waitNanos == Long.MAX_VALUE;
		return new AdmissionRejectedException(priority, AdmissionRejectedException.Reason.BUDGET,
				"provider key '" + spec.providerKey() + "' has no room for this request "
						+ (never ? "(the bucket store could not answer, or the request is larger than the key's budget)"
								: "for " + Duration.ofNanos(waitNanos).toMillis() + " ms, more than the "
										+ Duration.ofNanos(allowedNanos).toMillis() + " ms it may wait"),
				never ? null : Duration.ofNanos(waitNanos));
	}

	/** @return what the guard puts in each attempt's context so the client's rate-limit headers reach this gate */
	public RateLimitListener headerListener() {
		return headers;
	}

	/**
	 * The provider said how much is left ({@code x-ratelimit-remaining-*}): a local bucket holding more
	 * is brought down to it; a window with nothing left pauses the bucket until its reset.
	 */
	private void heard(RateLimits limits) {
		String key = spec.providerKey();
		if (store == null || key == null) {
			return;
		}
		correct(providerRequests, key, limits.remainingRequests(), limits.resetRequests());
		correct(providerTokens, key, limits.remainingTokens(), limits.resetTokens());
	}

	private void correct(@Nullable BucketSpec bucket, String key, long remaining, @Nullable Duration reset) {
		if (bucket == null || remaining < 0L) {
			return;
		}
		if (remaining == 0L && reset != null && !reset.isZero()) {
			pause(bucket, key, reset);
			return;
		}
		BucketStore.Immediate sync = now;
		if (sync != null) {
			long available = sync.available(bucket, key);
			if (available > remaining) {
				sync.takeRegardless(bucket, key, available - remaining);
			}
			return;
		}
		store.available(bucket, key).thenAccept(available -> {
			if (available != null && available > remaining) {
				store.takeRegardless(bucket, key, available - remaining);
			}
		});
	}

	private void pause(BucketSpec bucket, String key, Duration duration) {
		BucketStore.Immediate sync = now;
		if (sync != null) {
			sync.pause(bucket, key, duration);
		}
		else {
			store.pause(bucket, key, duration);
		}
	}

	/**
	 * The provider answered {@code 429}: its {@code Retry-After} pauses the key's buckets for every
	 * request using them (without one, the reset of its exhausted window does), and its rate-limit
	 * headers correct them.
	 */
	public void rateLimited(RateLimitedException e) {
		String key = spec.providerKey();
		if (!limitsProvider() || key == null) {
			return;
		}
		RateLimits limits = e.rateLimits();
		Duration pause = e.retryAfter().orElse(null);
		if (pause == null) {
			pause = limits.remainingTokens() == 0L ? limits.resetTokens() : limits.resetRequests();
		}
		if (limits.isKnown()) {
			heard(limits);
		}
		if (pause != null && !pause.isZero() && !pause.isNegative()) {
			if (providerRequests != null) {
				pause(providerRequests, key, pause);
			}
			if (providerTokens != null) {
				pause(providerTokens, key, pause);
			}
		}
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
		if (store == null) {
			return;
		}
		adjust(tenant.tokens, tenant.id, tokens - tenantTokensTaken);
		adjust(tenant.cost, tenant.id, costUnits(costNanos) - tenantCostTaken);
		tenants.touched(tenant);
		if (providerTokens != null) {
			adjust(providerTokens, spec.providerKey(), tokens - providerTokensTaken);
		}
	}

	private void adjust(@Nullable BucketSpec bucket, @Nullable String id, long more) {
		if (bucket == null || id == null || more == 0L) {
			return;
		}
		BucketStore.Immediate sync = now;
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

	/** Tells the meters what an attempt used and cost. */
	public void record(TenantBudget tenant, String model, boolean fromProvider, long promptTokens,
			long completionTokens, long costNanos, boolean wasted) {
		String source = fromProvider ? "provider" : "counted";
		metrics.tokensUsed(policy, model, tenant.id, source, promptTokens, completionTokens);
		String currency = spec.prices().currency();
		double amount = costNanos / 1e9;
		if (costNanos > 0L) {
			metrics.cost(policy, model, tenant.id, source, currency, amount);
		}
		if (wasted) {
			metrics.retryCost(policy, model, tenant.id, promptTokens, completionTokens, currency, amount);
		}
	}

	@Override
	public String toString() {
		return "BudgetGate(" + policy + ", " + store + ")";
	}
}
