package dev.aiguard.budget;

import java.time.Duration;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

import dev.aiguard.core.Priority;
import dev.aiguard.core.Tenant;
import dev.aiguard.truncation.TokenCounter;
import org.jspecify.annotations.Nullable;

/**
 * A policy's budgets: caps on one request, the price of tokens, what each tenant may spend, and
 * the rate limits of the provider key the policy calls. Immutable and copy-on-write: every setter
 * checks its value and returns a new spec, so one spec is a template for many policies. Give it to
 * {@code GuardPolicy.Builder.budget(..)}; buckets live in the policy's {@link BucketStore}.
 *
 * <pre>{@code
 * BudgetSpec budget = BudgetSpec.defaults()
 *     .promptCap(8_000).onPromptOverCap(PromptCapAction.TRUNCATE)
 *     .outputCap(2_000)
 *     .prices(PriceTable.in("USD").model("gpt-4o-mini", new BigDecimal("0.15"), new BigDecimal("0.60")))
 *     .counter("gpt-4o", TokenCounter.jtokkit("o200k_base"))
 *     .tenants(TenantLimits.unlimited().requestsPerMinute(60).costPerDay(new BigDecimal("5")))
 *     .tenant("acme", TenantLimits.unlimited().requestsPerMinute(600))
 *     .reserve(Priority.P0, 0.10)
 *     .provider("openai-main", ProviderLimits.unlimited().requestsPerMinute(500).tokensPerMinute(200_000));
 * }</pre>
 *
 * <p>Unset, nothing is limited and nothing is counted. See {@code docs/budgets.md}.
 */
public final class BudgetSpec {

	private static final BudgetSpec DEFAULTS = new BudgetSpec(0, PromptCapAction.REFUSE, 0L, PriceTable.none(),
			TokenCounter.estimate(), Map.of(), TenantLimits.unlimited(), Map.of(), Map.of(), null,
			ProviderLimits.unlimited(), Duration.ofSeconds(30), "default", null, Duration.ofMinutes(10), 10_000);

	/** The most tenants with limits of their own. */
	public static final int MAX_TENANT_OVERRIDES = 10_000;

	private final int promptCap;
	private final PromptCapAction promptCapAction;
	private final long outputCap;
	private final PriceTable prices;
	private final TokenCounter counter;
	/** Model name or start of names, to its counter. */
	private final Map<String, TokenCounter> counters;
	private final TenantLimits tenants;
	private final Map<String, TenantLimits> tenantOverrides;
	private final Map<Priority, Double> reserves;
	@Nullable
	private final String providerKey;
	private final ProviderLimits provider;
	private final Duration maxWait;
	private final String defaultTenant;
	@Nullable
	private final String defaultModel;
	private final Duration tenantIdle;
	private final int maxTenants;

	private BudgetSpec(int promptCap, PromptCapAction promptCapAction, long outputCap, PriceTable prices,
			TokenCounter counter, Map<String, TokenCounter> counters, TenantLimits tenants,
			Map<String, TenantLimits> tenantOverrides, Map<Priority, Double> reserves, @Nullable String providerKey,
			ProviderLimits provider, Duration maxWait, String defaultTenant, @Nullable String defaultModel,
			Duration tenantIdle, int maxTenants) {
		this.tenantIdle = tenantIdle;
		this.maxTenants = maxTenants;
		this.promptCap = promptCap;
		this.promptCapAction = promptCapAction;
		this.outputCap = outputCap;
		this.prices = prices;
		this.counter = counter;
		this.counters = counters;
		this.tenants = tenants;
		this.tenantOverrides = tenantOverrides;
		this.reserves = reserves;
		this.providerKey = providerKey;
		this.provider = provider;
		this.maxWait = maxWait;
		this.defaultTenant = defaultTenant;
		this.defaultModel = defaultModel;
	}

	/** @return nothing capped, priced or limited; the estimate counter; 30 s wait for a provider bucket */
	public static BudgetSpec defaults() {
		return DEFAULTS;
	}

	private BudgetSpec with(int promptCap, PromptCapAction promptCapAction, long outputCap, PriceTable prices,
			TokenCounter counter, Map<String, TokenCounter> counters, TenantLimits tenants,
			Map<String, TenantLimits> tenantOverrides, Map<Priority, Double> reserves, @Nullable String providerKey,
			ProviderLimits provider, Duration maxWait, String defaultTenant, @Nullable String defaultModel) {
		return new BudgetSpec(promptCap, promptCapAction, outputCap, prices, counter, counters, tenants,
				tenantOverrides, reserves, providerKey, provider, maxWait, defaultTenant, defaultModel, tenantIdle,
				maxTenants);
	}

	/**
	 * @param tokens the largest prompt a request may send, counted before sending, {@code > 0}; what
	 *        happens to a larger one is {@link #onPromptOverCap}. Applies in the guard's call form,
	 *        which knows the request.
	 */
	public BudgetSpec promptCap(int tokens) {
		if (tokens <= 0) {
			throw new IllegalArgumentException("budget.promptCap must be > 0, was " + tokens);
		}
		return with(tokens, promptCapAction, outputCap, prices, counter, counters, tenants, tenantOverrides, reserves,
				providerKey, provider, maxWait, defaultTenant, defaultModel);
	}

	/** @param action what a prompt over the cap gets: shortened by the policy's truncator, or refused (default) */
	public BudgetSpec onPromptOverCap(PromptCapAction action) {
		Objects.requireNonNull(action, "budget.onPromptOverCap");
		return with(promptCap, action, outputCap, prices, counter, counters, tenants, tenantOverrides, reserves,
				providerKey, provider, maxWait, defaultTenant, defaultModel);
	}

	/**
	 * @param contentChunks the most content chunks an answer delivers, {@code > 0}: the answer then
	 *        ends as complete with finish reason {@code length} and its upstream is cancelled. The
	 *        guard counts content chunks, which OpenAI and Anthropic streams send about one token at a
	 *        time.
	 */
	public BudgetSpec outputCap(long contentChunks) {
		if (contentChunks <= 0) {
			throw new IllegalArgumentException("budget.outputCap must be > 0, was " + contentChunks);
		}
		return with(promptCap, promptCapAction, contentChunks, prices, counter, counters, tenants, tenantOverrides,
				reserves, providerKey, provider, maxWait, defaultTenant, defaultModel);
	}

	/** @param table what tokens cost, per model */
	public BudgetSpec prices(PriceTable table) {
		Objects.requireNonNull(table, "budget.prices");
		return with(promptCap, promptCapAction, outputCap, table, counter, counters, tenants, tenantOverrides, reserves,
				providerKey, provider, maxWait, defaultTenant, defaultModel);
	}

	/** @param tokenCounter counts prompts of models without a counter of their own (default {@link TokenCounter#estimate()}) */
	public BudgetSpec counter(TokenCounter tokenCounter) {
		Objects.requireNonNull(tokenCounter, "budget.counter");
		return with(promptCap, promptCapAction, outputCap, prices, tokenCounter, counters, tenants, tenantOverrides,
				reserves, providerKey, provider, maxWait, defaultTenant, defaultModel);
	}

	/**
	 * @param model a model name, or the start of the names it counts for (the longest match wins)
	 * @param tokenCounter its counter, e.g. {@code TokenCounter.jtokkit("o200k_base")} built once at start-up
	 */
	public BudgetSpec counter(String model, TokenCounter tokenCounter) {
		Objects.requireNonNull(model, "model");
		Objects.requireNonNull(tokenCounter, "budget.counter." + model);
		if (model.isBlank()) {
			throw new IllegalArgumentException("budget.counter model must not be blank, was '" + model + "'");
		}
		Map<String, TokenCounter> next = new LinkedHashMap<>(counters);
		next.put(model, tokenCounter);
		return with(promptCap, promptCapAction, outputCap, prices, counter, Collections.unmodifiableMap(next), tenants,
				tenantOverrides, reserves, providerKey, provider, maxWait, defaultTenant, defaultModel);
	}

	/** @param limits what every tenant may spend, unless it has limits of its own ({@link #tenant}) */
	public BudgetSpec tenants(TenantLimits limits) {
		Objects.requireNonNull(limits, "budget.tenants");
		return with(promptCap, promptCapAction, outputCap, prices, counter, counters, limits, tenantOverrides, reserves,
				providerKey, provider, maxWait, defaultTenant, defaultModel);
	}

	/**
	 * @param tenantId a tenant ({@link Tenant} rules)
	 * @param limits what that tenant may spend, instead of {@link #tenants}
	 */
	public BudgetSpec tenant(String tenantId, TenantLimits limits) {
		Objects.requireNonNull(limits, "budget.tenant." + tenantId);
		String id = Tenant.of(tenantId).id();
		if (tenantOverrides.size() >= MAX_TENANT_OVERRIDES && !tenantOverrides.containsKey(id)) {
			throw new IllegalArgumentException("budget.tenant: at most " + MAX_TENANT_OVERRIDES
					+ " tenants may have limits of their own, was one more ('" + id + "')");
		}
		Map<String, TenantLimits> next = new LinkedHashMap<>(tenantOverrides);
		next.put(id, limits);
		return with(promptCap, promptCapAction, outputCap, prices, counter, counters, tenants,
				Collections.unmodifiableMap(next), reserves, providerKey, provider, maxWait, defaultTenant, defaultModel);
	}

	/**
	 * Keeps the last {@code fraction} of every tenant budget for requests of {@code priority} and
	 * more urgent ones: {@code reserve(P0, 0.10)} lets only P0 use the last 10 %. Reserves of several
	 * priorities nest: a request may not go below the largest reserve of the priorities more urgent
	 * than its own.
	 *
	 * @param fraction in {@code (0, 1)}
	 */
	public BudgetSpec reserve(Priority priority, double fraction) {
		Objects.requireNonNull(priority, "priority");
		if (!(fraction > 0d && fraction < 1d)) {
			throw new IllegalArgumentException("budget.reserve." + priority.name() + " must be in (0, 1), was " + fraction);
		}
		if (priority.ordinal() == Priority.values().length - 1) {
			throw new IllegalArgumentException("budget.reserve." + priority.name()
					+ " reserves for no one: it is the least urgent priority, was " + fraction);
		}
		Map<Priority, Double> next = new EnumMap<>(Priority.class);
		next.putAll(reserves);
		next.put(priority, fraction);
		return with(promptCap, promptCapAction, outputCap, prices, counter, counters, tenants, tenantOverrides,
				Collections.unmodifiableMap(next), providerKey, provider, maxWait, defaultTenant, defaultModel);
	}

	/**
	 * @param key names the provider key (an account, an API key's alias, never the secret itself):
	 *        1–64 letters, digits, {@code . _ -}. Every policy naming the same key in the same store
	 *        shares its buckets.
	 * @param limits the key's published limits
	 */
	public BudgetSpec provider(String key, ProviderLimits limits) {
		Objects.requireNonNull(key, "budget.provider.key");
		Objects.requireNonNull(limits, "budget.provider.limits");
		if (!key.matches("[A-Za-z0-9._-]{1,64}")) {
			throw new IllegalArgumentException("budget.provider.key must be 1-64 letters, digits, '.', '_' or '-', was '"
					+ key + "'");
		}
		return with(promptCap, promptCapAction, outputCap, prices, counter, counters, tenants, tenantOverrides, reserves,
				key, limits, maxWait, defaultTenant, defaultModel);
	}

	/**
	 * @param wait the longest a request waits for its provider key's bucket, {@code >= 0} (default
	 *        30 s); with lanes, the lane's {@code maxQueueWait} bounds it instead. A request whose wait
	 *        would be longer is refused at once ({@code AdmissionRejectedException}, reason
	 *        {@code BUDGET}, with the wait as {@code retryAfter}).
	 */
	public BudgetSpec maxWait(Duration wait) {
		Objects.requireNonNull(wait, "budget.maxWait");
		if (wait.isNegative()) {
			throw new IllegalArgumentException("budget.maxWait must be >= 0, was " + wait);
		}
		return with(promptCap, promptCapAction, outputCap, prices, counter, counters, tenants, tenantOverrides, reserves,
				providerKey, provider, wait, defaultTenant, defaultModel);
	}

	/** @param tenantId the tenant of requests whose Context names none (default {@code default}) */
	public BudgetSpec defaultTenant(String tenantId) {
		return with(promptCap, promptCapAction, outputCap, prices, counter, counters, tenants, tenantOverrides, reserves,
				providerKey, provider, maxWait, Tenant.of(Objects.requireNonNull(tenantId, "budget.defaultTenant")).id(),
				defaultModel);
	}

	/**
	 * @param model the model priced and counted when a request names none (the transform form, or
	 *        a client with a default model)
	 */
	public BudgetSpec defaultModel(String model) {
		Objects.requireNonNull(model, "budget.defaultModel");
		if (model.isBlank()) {
			throw new IllegalArgumentException("budget.defaultModel must not be blank, was '" + model + "'");
		}
		return with(promptCap, promptCapAction, outputCap, prices, counter, counters, tenants, tenantOverrides, reserves,
				providerKey, provider, maxWait, defaultTenant, model);
	}

	/**
	 * How long the gate keeps a tenant it has not seen: after {@code idle} without a request, the
	 * tenant is let go once its buckets are full again (a full bucket loses nothing when dropped; a
	 * drained one is kept until it has refilled), with its {@code aiguard.budget.remaining} gauges.
	 *
	 * @param idle {@code > 0} (default 10 minutes)
	 */
	public BudgetSpec tenantIdle(Duration idle) {
		Objects.requireNonNull(idle, "budget.tenantIdle");
		if (idle.isZero() || idle.isNegative()) {
			throw new IllegalArgumentException("budget.tenantIdle must be > 0, was " + idle);
		}
		return new BudgetSpec(promptCap, promptCapAction, outputCap, prices, counter, counters, tenants, tenantOverrides,
				reserves, providerKey, provider, maxWait, defaultTenant, defaultModel, idle, maxTenants);
	}

	/**
	 * The most tenants the gate holds at once (and so the most tenant buckets in a local store, three
	 * per tenant). A new tenant beyond it makes room by letting go of the longest idle of a sample of
	 * held tenants, even one whose buckets are not full: that tenant starts full when it returns, so
	 * the cap errs on the side of admitting, never refuses a tenant for being new.
	 *
	 * @param tenants {@code >= 1} (default 10 000)
	 */
	public BudgetSpec maxTenants(int tenants) {
		if (tenants < 1) {
			throw new IllegalArgumentException("budget.maxTenants must be >= 1, was " + tenants);
		}
		return new BudgetSpec(promptCap, promptCapAction, outputCap, prices, counter, counters, this.tenants,
				tenantOverrides, reserves, providerKey, provider, maxWait, defaultTenant, defaultModel, tenantIdle, tenants);
	}

	/** @return how long a tenant without requests is held ({@link #tenantIdle(Duration)}) */
	public Duration tenantIdle() {
		return tenantIdle;
	}

	/** @return the most tenants held at once ({@link #maxTenants(int)}) */
	public int maxTenants() {
		return maxTenants;
	}

	/** @return the prompt cap in tokens, {@code 0} when none */
	public int promptCap() {
		return promptCap;
	}

	public PromptCapAction promptCapAction() {
		return promptCapAction;
	}

	/** @return the output cap in content chunks, {@code 0} when none */
	public long outputCap() {
		return outputCap;
	}

	public PriceTable prices() {
		return prices;
	}

	public TokenCounter counter() {
		return counter;
	}

	/** @return counters by model name or start of name */
	public Map<String, TokenCounter> counters() {
		return counters;
	}

	public TenantLimits tenants() {
		return tenants;
	}

	/** @return tenants with limits of their own */
	public Map<String, TenantLimits> tenantOverrides() {
		return tenantOverrides;
	}

	/** @return the limits of {@code tenantId} */
	public TenantLimits limitsOf(String tenantId) {
		TenantLimits own = tenantOverrides.get(tenantId);
		return own != null ? own : tenants;
	}

	/** @return reserved fractions by priority */
	public Map<Priority, Double> reserves() {
		return reserves;
	}

	@Nullable
	public String providerKey() {
		return providerKey;
	}

	public ProviderLimits provider() {
		return provider;
	}

	public Duration maxWait() {
		return maxWait;
	}

	public String defaultTenant() {
		return defaultTenant;
	}

	@Nullable
	public String defaultModel() {
		return defaultModel;
	}

	/** @return whether any tenant or provider bucket is needed (and so a {@link BucketStore}) */
	public boolean needsBuckets() {
		if (tenants.limited() || provider.limited()) {
			return true;
		}
		for (TenantLimits own : tenantOverrides.values()) {
			if (own.limited()) {
				return true;
			}
		}
		return false;
	}

	/**
	 * The fraction of a tenant budget a request of {@code priority} must leave: the largest reserve
	 * of a more urgent priority.
	 */
	public double floorFor(Priority priority) {
		double floor = 0d;
		for (Map.Entry<Priority, Double> r : reserves.entrySet()) {
			if (r.getKey().ordinal() < priority.ordinal()) {
				floor = Math.max(floor, r.getValue());
			}
		}
		return floor;
	}

	/**
	 * Checks the settings against each other; {@code GuardPolicy.Builder.build()} calls it.
	 *
	 * @throws IllegalArgumentException naming the field and the value
	 */
	public void check() {
		if (provider.limited() && providerKey == null) {
			throw new IllegalArgumentException("budget.provider.key must be set with the provider limits, was unset");
		}
		if (!reserves.isEmpty() && !needsBuckets()) {
			throw new IllegalArgumentException("budget.reserve needs tenant limits, was " + reserves
					+ " without any");
		}
	}

	/** @return every setting by a dotted name, for {@code GuardPolicy.describe()} */
	public Map<String, String> describe() {
		Map<String, String> d = new LinkedHashMap<>();
		d.put("budget.promptCap", promptCap == 0 ? "none" : promptCap + " (" + promptCapAction + ")");
		d.put("budget.outputCap", outputCap == 0 ? "none" : String.valueOf(outputCap));
		d.put("budget.prices", prices.toString());
		d.put("budget.counter", String.valueOf(counter));
		d.put("budget.counters", String.valueOf(counters));
		d.put("budget.tenants", tenants.toString());
		d.put("budget.tenantOverrides", String.valueOf(tenantOverrides));
		d.put("budget.reserves", String.valueOf(reserves));
		d.put("budget.provider", providerKey == null ? "none" : providerKey + ": " + provider);
		d.put("budget.maxWait", maxWait.toString());
		d.put("budget.defaultTenant", defaultTenant);
		d.put("budget.defaultModel", String.valueOf(defaultModel));
		d.put("budget.tenantIdle", tenantIdle.toString());
		d.put("budget.maxTenants", String.valueOf(maxTenants));
		return d;
	}

	@Override
	public boolean equals(Object o) {
		return o instanceof BudgetSpec b && b.describe().equals(describe());
	}

	@Override
	public int hashCode() {
		return describe().hashCode();
	}

	@Override
	public String toString() {
		return "BudgetSpec" + describe();
	}
}
