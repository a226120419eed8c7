package dev.aiguard.boot.autoconfigure.properties;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * The budget of every policy with {@code budget: true}, {@code aiguard.budgets}. Buckets live in
 * the context's {@code BucketStore} bean: an in-process one when Bucket4j is on the class path and
 * the application defines none.
 *
 * <pre>
 * aiguard:
 *   budgets:
 *     prompt-cap: 8000
 *     prices:
 *       gpt-4o: { input: 2.50, output: 10.00 }
 *     tenant: { requests-per-minute: 60, cost-per-day: 5 }
 * </pre>
 */
public class BudgetsProperties {

	/** Largest prompt in tokens, counted before sending (call form); unset: no cap. */
	@Nullable
	private Integer promptCap;

	/** What a prompt over the cap gets: {@code refuse} or {@code truncate}. */
	private String onPromptOverCap = "refuse";

	/** Most content chunks an answer delivers before it ends with finish reason {@code length}; unset: no cap. */
	@Nullable
	private Long outputCap;

	/** The currency of prices and money budgets. */
	private String currency = "USD";

	/** Prices per model (or start of model names): input and output price per million tokens. */
	private Map<String, Price> prices = new LinkedHashMap<>();

	/** jtokkit encodings per model (or start of model names), e.g. {@code gpt-4o: o200k_base}; others are estimated. */
	private Map<String, String> encodings = new LinkedHashMap<>();

	/** What every tenant may spend. */
	private Limits tenant = new Limits();

	/** Tenants with limits of their own, by tenant id. */
	private Map<String, Limits> tenants = new LinkedHashMap<>();

	/** Fractions of every tenant budget kept for a priority and more urgent ones, e.g. {@code p0: 0.1}. */
	private Map<String, Double> reserves = new LinkedHashMap<>();

	/** The provider key the policies call and its limits. */
	private Provider provider = new Provider();

	/** Longest wait for the provider key's buckets without lanes (with lanes: the lane's max queue wait). */
	private Duration maxWait = Duration.ofSeconds(30);

	/** Tenant of requests whose Reactor Context names none. */
	private String defaultTenant = "default";

	/** Model priced and counted when a request names none. */
	@Nullable
	private String defaultModel;

	/** How long a tenant without requests is held; it is let go once its buckets are full again. */
	private Duration tenantIdle = Duration.ofMinutes(10);

	/** The most tenants a policy holds at once; a new one beyond it lets the longest idle of a sample go. */
	private int maxTenants = 10_000;

	/**
	 * How many tenants get meter series of their own (the first seen); the others are tagged
	 * {@code __other__}. 0 (default): none, tenant ids never become tag values.
	 */
	private int tenantSeries;

	public Duration getTenantIdle() {
		return tenantIdle;
	}

	public void setTenantIdle(Duration tenantIdle) {
		this.tenantIdle = tenantIdle;
	}

	public int getMaxTenants() {
		return maxTenants;
	}

	public void setMaxTenants(int maxTenants) {
		this.maxTenants = maxTenants;
	}

	public int getTenantSeries() {
		return tenantSeries;
	}

	public void setTenantSeries(int tenantSeries) {
		this.tenantSeries = tenantSeries;
	}

	public @Nullable Integer getPromptCap() {
		return promptCap;
	}

	public void setPromptCap(@Nullable Integer promptCap) {
		this.promptCap = promptCap;
	}

	public String getOnPromptOverCap() {
		return onPromptOverCap;
	}

	public void setOnPromptOverCap(String onPromptOverCap) {
		this.onPromptOverCap = onPromptOverCap;
	}

	public @Nullable Long getOutputCap() {
		return outputCap;
	}

	public void setOutputCap(@Nullable Long outputCap) {
		this.outputCap = outputCap;
	}

	public String getCurrency() {
		return currency;
	}

	public void setCurrency(String currency) {
		this.currency = currency;
	}

	public Map<String, Price> getPrices() {
		return prices;
	}

	public void setPrices(Map<String, Price> prices) {
		this.prices = prices;
	}

	public Map<String, String> getEncodings() {
		return encodings;
	}

	public void setEncodings(Map<String, String> encodings) {
		this.encodings = encodings;
	}

	public Limits getTenant() {
		return tenant;
	}

	public void setTenant(Limits tenant) {
		this.tenant = tenant;
	}

	public Map<String, Limits> getTenants() {
		return tenants;
	}

	public void setTenants(Map<String, Limits> tenants) {
		this.tenants = tenants;
	}

	public Map<String, Double> getReserves() {
		return reserves;
	}

	public void setReserves(Map<String, Double> reserves) {
		this.reserves = reserves;
	}

	public Provider getProvider() {
		return provider;
	}

	public void setProvider(Provider provider) {
		this.provider = provider;
	}

	public Duration getMaxWait() {
		return maxWait;
	}

	public void setMaxWait(Duration maxWait) {
		this.maxWait = maxWait;
	}

	public String getDefaultTenant() {
		return defaultTenant;
	}

	public void setDefaultTenant(String defaultTenant) {
		this.defaultTenant = defaultTenant;
	}

	public @Nullable String getDefaultModel() {
		return defaultModel;
	}

	public void setDefaultModel(@Nullable String defaultModel) {
		this.defaultModel = defaultModel;
	}

	/** A model's prices per million tokens. */
	public static class Price {

		/** Price of a million prompt tokens. */
		@Nullable
		private BigDecimal input;

		/** Price of a million completion tokens. */
		@Nullable
		private BigDecimal output;

		public @Nullable BigDecimal getInput() {
			return input;
		}

		public void setInput(@Nullable BigDecimal input) {
			this.input = input;
		}

		public @Nullable BigDecimal getOutput() {
			return output;
		}

		public void setOutput(@Nullable BigDecimal output) {
			this.output = output;
		}
	}

	/** What a tenant may spend; an unset limit does not apply. */
	public static class Limits {

		/** Requests per minute. */
		@Nullable
		private Long requestsPerMinute;

		/** Prompt and completion tokens per minute. */
		@Nullable
		private Long tokensPerMinute;

		/** Money per day, in the budgets' currency. */
		@Nullable
		private BigDecimal costPerDay;

		public @Nullable Long getRequestsPerMinute() {
			return requestsPerMinute;
		}

		public void setRequestsPerMinute(@Nullable Long requestsPerMinute) {
			this.requestsPerMinute = requestsPerMinute;
		}

		public @Nullable Long getTokensPerMinute() {
			return tokensPerMinute;
		}

		public void setTokensPerMinute(@Nullable Long tokensPerMinute) {
			this.tokensPerMinute = tokensPerMinute;
		}

		public @Nullable BigDecimal getCostPerDay() {
			return costPerDay;
		}

		public void setCostPerDay(@Nullable BigDecimal costPerDay) {
			this.costPerDay = costPerDay;
		}
	}

	/** A provider key and its published limits. */
	public static class Provider {

		/** The key's name (an alias, never the secret); unset: no provider limits. */
		@Nullable
		private String key;

		/** Requests per minute. */
		@Nullable
		private Long requestsPerMinute;

		/** Tokens per minute. */
		@Nullable
		private Long tokensPerMinute;

		public @Nullable String getKey() {
			return key;
		}

		public void setKey(@Nullable String key) {
			this.key = key;
		}

		public @Nullable Long getRequestsPerMinute() {
			return requestsPerMinute;
		}

		public void setRequestsPerMinute(@Nullable Long requestsPerMinute) {
			this.requestsPerMinute = requestsPerMinute;
		}

		public @Nullable Long getTokensPerMinute() {
			return tokensPerMinute;
		}

		public void setTokensPerMinute(@Nullable Long tokensPerMinute) {
			this.tokensPerMinute = tokensPerMinute;
		}
	}
}
