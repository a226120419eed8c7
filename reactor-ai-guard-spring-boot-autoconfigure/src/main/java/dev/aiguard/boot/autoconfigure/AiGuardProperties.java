package dev.aiguard.boot.autoconfigure;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import dev.aiguard.core.Priority;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.load.LaneResizing;
import dev.aiguard.load.LoadAction;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Everything under {@code aiguard.*}: named policies (each becomes an {@code AiGuard} bean of that
 * name), named breakers and the priority lanes that policies share. A setting left unset takes the
 * library's default, which its description names.
 *
 * <pre>
 * aiguard:
 *   breakers:
 *     openai: { failure-rate-threshold: 0.5, minimum-calls: 10, open-wait: 15s }
 *   lanes:
 *     p0: { concurrency: 8 }
 *     p2: { concurrency: 2, max-queue-wait: 5s }
 *   policies:
 *     chat:
 *       breaker: openai
 *       lanes: true
 *       stall: { first-token-timeout: 10s, idle-timeout: 30s }
 *       retry: { max-attempts: 3 }
 *       fallback: { static-text: "The assistant is busy, please try again shortly." }
 * </pre>
 */
@ConfigurationProperties(AiGuardProperties.PREFIX)
public class AiGuardProperties {

	/** The prefix of every property. */
	public static final String PREFIX = "aiguard";

	/** Whether the guards, breakers and lanes are built from these properties. */
	private boolean enabled = true;

	/** Guard policies by name; each becomes an {@code AiGuard<ChatChunk>} bean with that name. */
	private Map<String, Policy> policies = new LinkedHashMap<>();

	/** Circuit breakers by name, shared by the policies that name them in {@code breaker}. */
	private Map<String, Breaker> breakers = new LinkedHashMap<>();

	/** A breaker hierarchy (system → providers → endpoints); policies pass it with {@code breaker-path}. */
	private BreakerTree breakerTree = new BreakerTree();

	/** The priority lanes shared by every policy with {@code lanes: true}. */
	private Lanes lanes = new Lanes();

	/** The retry budget shared by every policy with {@code retry.budget: true}. */
	private RetryBudget retryBudget = new RetryBudget();

	/** What the health contributor reports. */
	private Health health = new Health();

	/** Reports kept for the Actuator endpoint. */
	private Reports reports = new Reports();

	/** The load governor: overload levels from a health score, the offered load and its forecast. */
	private Load load = new Load();

	/** Budgets for every policy with {@code budget: true}: caps, prices, tenant budgets, provider limits. */
	private Budgets budgets = new Budgets();

	public boolean isEnabled() {
		return enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public Map<String, Policy> getPolicies() {
		return policies;
	}

	public void setPolicies(Map<String, Policy> policies) {
		this.policies = policies;
	}

	public Map<String, Breaker> getBreakers() {
		return breakers;
	}

	public void setBreakers(Map<String, Breaker> breakers) {
		this.breakers = breakers;
	}

	public BreakerTree getBreakerTree() {
		return breakerTree;
	}

	public void setBreakerTree(BreakerTree breakerTree) {
		this.breakerTree = breakerTree;
	}

	public Lanes getLanes() {
		return lanes;
	}

	public void setLanes(Lanes lanes) {
		this.lanes = lanes;
	}

	public RetryBudget getRetryBudget() {
		return retryBudget;
	}

	public void setRetryBudget(RetryBudget retryBudget) {
		this.retryBudget = retryBudget;
	}

	public Health getHealth() {
		return health;
	}

	public void setHealth(Health health) {
		this.health = health;
	}

	public Reports getReports() {
		return reports;
	}

	public void setReports(Reports reports) {
		this.reports = reports;
	}

	public Load getLoad() {
		return load;
	}

	public void setLoad(Load load) {
		this.load = load;
	}

	public Budgets getBudgets() {
		return budgets;
	}

	public void setBudgets(Budgets budgets) {
		this.budgets = budgets;
	}

	/**
	 * The budget of every policy with {@code budget: true}. Buckets live in the context's
	 * {@code BucketStore} bean: an in-process one when Bucket4j is on the class path and the
	 * application defines none.
	 */
	public static class Budgets {

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

	/**
	 * A breaker hierarchy: the system, its providers and their model endpoints. Built when at least one
	 * provider is listed. Each level's settings are copied from a breaker under {@code aiguard.breakers}
	 * (that breaker is built too, on its own); the library's defaults otherwise.
	 *
	 * <pre>
	 * aiguard:
	 *   breaker-tree:
	 *     name: llm
	 *     providers:
	 *       openai: gpt-4o, gpt-4o-mini
	 *       anthropic: claude-sonnet
	 *     endpoint-config: endpoint
	 *     system-p0-probe-share: 0.05
	 *     p0-probe-window: 2s
	 *   policies:
	 *     chat: { breaker-path: openai/gpt-4o }
	 * </pre>
	 */
	public static class BreakerTree {

		/** The tree's name: its system breaker's name and the first part of every breaker's in it. */
		private String name = "llm";

		/** Providers and their model endpoints, in order (the order a siblings fallback tries them in). */
		private Map<String, List<String>> providers = new LinkedHashMap<>();

		/** The breaker under {@code aiguard.breakers} whose settings every endpoint takes. */
		@Nullable
		private String endpointConfig;

		/** The breaker whose settings every provider takes (its trip policy becomes the correlation rule). */
		@Nullable
		private String providerConfig;

		/** The breaker whose settings the system takes (its trip policy becomes the correlation rule). */
		@Nullable
		private String systemConfig;

		/** The fewest failing children that trip a parent, at least 2. */
		private int childrenToTrip = 2;

		/** The share of a parent's children with traffic that must be failing for it to trip, in (0, 1]. */
		private double childrenShareToTrip = 0.5;

		/** For this long after a breaker of the tree enters HALF_OPEN, only P0 calls probe. Unset: off. */
		@Nullable
		private Duration p0ProbeWindow;

		/** While the system breaker is OPEN, this share of P0 calls still passes (0 to 0.5). Unset: off. */
		@Nullable
		private Double systemP0ProbeShare;

		public String getName() {
			return name;
		}

		public void setName(String name) {
			this.name = name;
		}

		public Map<String, List<String>> getProviders() {
			return providers;
		}

		public void setProviders(Map<String, List<String>> providers) {
			this.providers = providers;
		}

		public @Nullable String getEndpointConfig() {
			return endpointConfig;
		}

		public void setEndpointConfig(@Nullable String endpointConfig) {
			this.endpointConfig = endpointConfig;
		}

		public @Nullable String getProviderConfig() {
			return providerConfig;
		}

		public void setProviderConfig(@Nullable String providerConfig) {
			this.providerConfig = providerConfig;
		}

		public @Nullable String getSystemConfig() {
			return systemConfig;
		}

		public void setSystemConfig(@Nullable String systemConfig) {
			this.systemConfig = systemConfig;
		}

		public int getChildrenToTrip() {
			return childrenToTrip;
		}

		public void setChildrenToTrip(int childrenToTrip) {
			this.childrenToTrip = childrenToTrip;
		}

		public double getChildrenShareToTrip() {
			return childrenShareToTrip;
		}

		public void setChildrenShareToTrip(double childrenShareToTrip) {
			this.childrenShareToTrip = childrenShareToTrip;
		}

		public @Nullable Duration getP0ProbeWindow() {
			return p0ProbeWindow;
		}

		public void setP0ProbeWindow(@Nullable Duration p0ProbeWindow) {
			this.p0ProbeWindow = p0ProbeWindow;
		}

		public @Nullable Double getSystemP0ProbeShare() {
			return systemP0ProbeShare;
		}

		public void setSystemP0ProbeShare(@Nullable Double systemP0ProbeShare) {
			this.systemP0ProbeShare = systemP0ProbeShare;
		}
	}

	/** The {@code aiguardBreakers} health contributor: one indicator per breaker. */
	public static class Health {

		/**
		 * The health status of an OPEN or FORCED_OPEN breaker. UP keeps the instance in the load
		 * balancer through a model outage (the fallbacks still answer, and a restart would not heal
		 * the provider); set DOWN or OUT_OF_SERVICE to take it out.
		 */
		private String openStatus = "UP";

		/** The health status of a HALF_OPEN breaker. */
		private String halfOpenStatus = "UP";

		public String getOpenStatus() {
			return openStatus;
		}

		public void setOpenStatus(String openStatus) {
			this.openStatus = openStatus;
		}

		public String getHalfOpenStatus() {
			return halfOpenStatus;
		}

		public void setHalfOpenStatus(String halfOpenStatus) {
			this.halfOpenStatus = halfOpenStatus;
		}
	}

	/** Recent reports shown by the {@code aiguard} Actuator endpoint. */
	public static class Reports {

		/** How many of the most recent reports (all policies together) are kept, 1 to 10000. */
		private int recent = 50;

		public int getRecent() {
			return recent;
		}

		public void setRecent(int recent) {
			this.recent = recent;
		}
	}

	/** One guard policy. */
	public static class Policy {

		/** Priority of a request whose Reactor Context names none. */
		private Priority defaultPriority = Priority.P1;

		/** Name of the breaker (under {@code aiguard.breakers}) this policy's attempts pass; none when unset. */
		@Nullable
		private String breaker;

		/**
		 * {@code provider/endpoint} in {@code aiguard.breaker-tree}: each attempt passes the system, that
		 * provider and that endpoint; instead of {@code breaker}.
		 */
		@Nullable
		private String breakerPath;

		/** Whether requests are admitted through the shared lanes ({@code aiguard.lanes}). */
		private boolean lanes;

		/** Whether the upstream call blocks (a blocking SDK): it is then called on the lanes' threads. */
		private boolean blockingUpstream;

		/**
		 * Whether requests pass the load governor (shed, counted, timed). Unset: yes when the
		 * context has a governor ({@code aiguard.load.enabled=true} or a bean of one's own); true
		 * requires one; false keeps this policy out.
		 */
		@Nullable
		private Boolean load;

		/** Stall deadlines. */
		private Stall stall = new Stall();

		/** Retries before the first token. */
		private Retry retry = new Retry();

		/** Prompt truncation on context-length errors (call form). */
		private Truncation truncation = new Truncation();

		/** What happens when an answer fails after tokens were delivered. */
		private MidStream midStream = new MidStream();

		/** The fallback ladder's steps that properties can express. */
		private Fallback fallback = new Fallback();

		/** Output validation: which answers count as invalid. */
		private Validate validate = new Validate();

		/** Whether the policy has the budgets of {@code aiguard.budgets}. */
		private boolean budget;

		public boolean isBudget() {
			return budget;
		}

		public void setBudget(boolean budget) {
			this.budget = budget;
		}

		public Priority getDefaultPriority() {
			return defaultPriority;
		}

		public void setDefaultPriority(Priority defaultPriority) {
			this.defaultPriority = defaultPriority;
		}

		public @Nullable String getBreaker() {
			return breaker;
		}

		public void setBreaker(@Nullable String breaker) {
			this.breaker = breaker;
		}

		public @Nullable String getBreakerPath() {
			return breakerPath;
		}

		public void setBreakerPath(@Nullable String breakerPath) {
			this.breakerPath = breakerPath;
		}

		public boolean isLanes() {
			return lanes;
		}

		public void setLanes(boolean lanes) {
			this.lanes = lanes;
		}

		public boolean isBlockingUpstream() {
			return blockingUpstream;
		}

		public void setBlockingUpstream(boolean blockingUpstream) {
			this.blockingUpstream = blockingUpstream;
		}

		public @Nullable Boolean getLoad() {
			return load;
		}

		public void setLoad(@Nullable Boolean load) {
			this.load = load;
		}

		public Stall getStall() {
			return stall;
		}

		public void setStall(Stall stall) {
			this.stall = stall;
		}

		public Retry getRetry() {
			return retry;
		}

		public void setRetry(Retry retry) {
			this.retry = retry;
		}

		public Truncation getTruncation() {
			return truncation;
		}

		public void setTruncation(Truncation truncation) {
			this.truncation = truncation;
		}

		public MidStream getMidStream() {
			return midStream;
		}

		public void setMidStream(MidStream midStream) {
			this.midStream = midStream;
		}

		public Fallback getFallback() {
			return fallback;
		}

		public void setFallback(Fallback fallback) {
			this.fallback = fallback;
		}

		public Validate getValidate() {
			return validate;
		}

		public void setValidate(Validate validate) {
			this.validate = validate;
		}
	}

	/**
	 * The output validators of a policy ({@code dev.aiguard.validation}); an answer they reject is
	 * an attempt with outcome {@code INVALID}. Validators that need code (a refusal pattern, a JSON
	 * schema, one's own) are added by an {@code AiGuardPolicyCustomizer}.
	 */
	public static class Validate {

		/** Whether an answer without content (no text, whitespace only, no tool call) is invalid. */
		private boolean emptyAnswer;

		/** Finish reasons that make an answer invalid, e.g. {@code content_filter}; empty: none checked. */
		private List<String> finishReasons = new ArrayList<>();

		/** The repetition detector, cutting an answer that loops. */
		private Repetition repetition = new Repetition();

		public boolean isEmptyAnswer() {
			return emptyAnswer;
		}

		public void setEmptyAnswer(boolean emptyAnswer) {
			this.emptyAnswer = emptyAnswer;
		}

		public List<String> getFinishReasons() {
			return finishReasons;
		}

		public void setFinishReasons(List<String> finishReasons) {
			this.finishReasons = finishReasons;
		}

		public Repetition getRepetition() {
			return repetition;
		}

		public void setRepetition(Repetition repetition) {
			this.repetition = repetition;
		}
	}

	/** The repetition detector's settings; an unset one keeps the detector's default. */
	public static class Repetition {

		/** Whether the detector watches the policy's answers. */
		private boolean enabled;

		/** Chunks per n-gram, 1 to 32. Default: 4. */
		@Nullable
		private Integer ngram;

		/** Longest repeated unit, in chunks, 1 to 4096. Default: 64. */
		@Nullable
		private Integer maxPeriod;

		/** Repeats in a row before the cut, at least 2. Default: 5. */
		@Nullable
		private Integer minRepeats;

		/** Chunks the repetition spans at least, at least 2. Default: 64. */
		@Nullable
		private Integer minSpan;

		public boolean isEnabled() {
			return enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public @Nullable Integer getNgram() {
			return ngram;
		}

		public void setNgram(@Nullable Integer ngram) {
			this.ngram = ngram;
		}

		public @Nullable Integer getMaxPeriod() {
			return maxPeriod;
		}

		public void setMaxPeriod(@Nullable Integer maxPeriod) {
			this.maxPeriod = maxPeriod;
		}

		public @Nullable Integer getMinRepeats() {
			return minRepeats;
		}

		public void setMinRepeats(@Nullable Integer minRepeats) {
			this.minRepeats = minRepeats;
		}

		public @Nullable Integer getMinSpan() {
			return minSpan;
		}

		public void setMinSpan(@Nullable Integer minSpan) {
			this.minSpan = minSpan;
		}
	}

	/** Stall deadlines of a policy; an unset deadline does not apply. */
	public static class Stall {

		/** From subscription to the first content chunk; unset: no first-token deadline. */
		@Nullable
		private Duration firstTokenTimeout;

		/** Between content chunks once content has started; unset: no idle deadline. */
		@Nullable
		private Duration idleTimeout;

		/** From subscription to the end of the answer; unset: no overall deadline. */
		@Nullable
		private Duration maxDuration;

		/** Whether heartbeats (pings, comments) extend the idle deadline. Default: false. */
		@Nullable
		private Boolean heartbeatsExtendIdle;

		/** Whether a stream that completes without a terminal marker or finish reason is INCOMPLETE. Default: true. */
		@Nullable
		private Boolean requireTerminal;

		public @Nullable Duration getFirstTokenTimeout() {
			return firstTokenTimeout;
		}

		public void setFirstTokenTimeout(@Nullable Duration firstTokenTimeout) {
			this.firstTokenTimeout = firstTokenTimeout;
		}

		public @Nullable Duration getIdleTimeout() {
			return idleTimeout;
		}

		public void setIdleTimeout(@Nullable Duration idleTimeout) {
			this.idleTimeout = idleTimeout;
		}

		public @Nullable Duration getMaxDuration() {
			return maxDuration;
		}

		public void setMaxDuration(@Nullable Duration maxDuration) {
			this.maxDuration = maxDuration;
		}

		public @Nullable Boolean getHeartbeatsExtendIdle() {
			return heartbeatsExtendIdle;
		}

		public void setHeartbeatsExtendIdle(@Nullable Boolean heartbeatsExtendIdle) {
			this.heartbeatsExtendIdle = heartbeatsExtendIdle;
		}

		public @Nullable Boolean getRequireTerminal() {
			return requireTerminal;
		}

		public void setRequireTerminal(@Nullable Boolean requireTerminal) {
			this.requireTerminal = requireTerminal;
		}
	}

	/** Retries of a policy; without {@code max-attempts} the policy never retries. */
	public static class Retry {

		/** Upstream calls for the start of an answer, the first one included (1 = no retry); unset: no retries. */
		@Nullable
		private Integer maxAttempts;

		/** Shortest backoff before a retry. Default: 500ms. */
		@Nullable
		private Duration minBackoff;

		/** Longest backoff before a retry. Default: 8s. */
		@Nullable
		private Duration maxBackoff;

		/** Longest provider Retry-After the guard waits for; a longer one fails the request. Default: 60s. */
		@Nullable
		private Duration maxRetryAfter;

		/** Jitter factor 0..1 (1 = full jitter). Default: 1. */
		@Nullable
		private Double jitter;

		/** Whether retries draw on the shared retry budget ({@code aiguard.retry-budget}). */
		private boolean budget;

		public @Nullable Integer getMaxAttempts() {
			return maxAttempts;
		}

		public void setMaxAttempts(@Nullable Integer maxAttempts) {
			this.maxAttempts = maxAttempts;
		}

		public @Nullable Duration getMinBackoff() {
			return minBackoff;
		}

		public void setMinBackoff(@Nullable Duration minBackoff) {
			this.minBackoff = minBackoff;
		}

		public @Nullable Duration getMaxBackoff() {
			return maxBackoff;
		}

		public void setMaxBackoff(@Nullable Duration maxBackoff) {
			this.maxBackoff = maxBackoff;
		}

		public @Nullable Duration getMaxRetryAfter() {
			return maxRetryAfter;
		}

		public void setMaxRetryAfter(@Nullable Duration maxRetryAfter) {
			this.maxRetryAfter = maxRetryAfter;
		}

		public @Nullable Double getJitter() {
			return jitter;
		}

		public void setJitter(@Nullable Double jitter) {
			this.jitter = jitter;
		}

		public boolean isBudget() {
			return budget;
		}

		public void setBudget(boolean budget) {
			this.budget = budget;
		}
	}

	/** The retry budget shared by the policies that ask for it. */
	public static class RetryBudget {

		/** Retries allowed per request in the window, 0..1. Default: 0.1. */
		private double ratio = 0.1;

		/** Retries always allowed per second, whatever the ratio. Default: 10. */
		private int minRetriesPerSecond = 10;

		/** How far back requests and retries are counted. Default: 10s. */
		private Duration window = Duration.ofSeconds(10);

		public double getRatio() {
			return ratio;
		}

		public void setRatio(double ratio) {
			this.ratio = ratio;
		}

		public int getMinRetriesPerSecond() {
			return minRetriesPerSecond;
		}

		public void setMinRetriesPerSecond(int minRetriesPerSecond) {
			this.minRetriesPerSecond = minRetriesPerSecond;
		}

		public Duration getWindow() {
			return window;
		}

		public void setWindow(Duration window) {
			this.window = window;
		}
	}

	/** Prompt truncation on context-length errors. */
	public static class Truncation {

		/** Whether a too-long prompt is shrunk and sent again (call form only). */
		private boolean enabled;

		/** Truncations per request at most. Default: 2. */
		@Nullable
		private Integer maxTruncations;

		/** Output tokens kept free when the request sets no max tokens. Default: 1024. */
		@Nullable
		private Integer reservedOutputTokens;

		/** What a prompt shrinks to when the provider does not say the limit, between 0 and 1. Default: 0.75. */
		@Nullable
		private Double shrinkFactor;

		public boolean isEnabled() {
			return enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public @Nullable Integer getMaxTruncations() {
			return maxTruncations;
		}

		public void setMaxTruncations(@Nullable Integer maxTruncations) {
			this.maxTruncations = maxTruncations;
		}

		public @Nullable Integer getReservedOutputTokens() {
			return reservedOutputTokens;
		}

		public void setReservedOutputTokens(@Nullable Integer reservedOutputTokens) {
			this.reservedOutputTokens = reservedOutputTokens;
		}

		public @Nullable Double getShrinkFactor() {
			return shrinkFactor;
		}

		public void setShrinkFactor(@Nullable Double shrinkFactor) {
			this.shrinkFactor = shrinkFactor;
		}
	}

	/** What a policy does when an answer fails after tokens were delivered. */
	public static class MidStream {

		/** {@code fail} (PartialStreamException), {@code notice} (append the notice text and complete) or {@code continue}. */
		private MidStreamMode mode = MidStreamMode.FAIL;

		/** The text appended in {@code notice} mode. */
		@Nullable
		private String notice;

		/** Continuation requests per answer in {@code continue} mode. Default: 2. */
		private int maxContinuations = 2;

		/** How a continuation is asked for in {@code continue} mode. */
		private ContinuationMode continuation = ContinuationMode.USER_CONTINUE;

		public MidStreamMode getMode() {
			return mode;
		}

		public void setMode(MidStreamMode mode) {
			this.mode = mode;
		}

		public @Nullable String getNotice() {
			return notice;
		}

		public void setNotice(@Nullable String notice) {
			this.notice = notice;
		}

		public int getMaxContinuations() {
			return maxContinuations;
		}

		public void setMaxContinuations(int maxContinuations) {
			this.maxContinuations = maxContinuations;
		}

		public ContinuationMode getContinuation() {
			return continuation;
		}

		public void setContinuation(ContinuationMode continuation) {
			this.continuation = continuation;
		}
	}

	/** Mid-stream failure handling. */
	public enum MidStreamMode {
		/** End with {@code PartialStreamException}. */
		FAIL,
		/** Append a notice chunk and complete. */
		NOTICE,
		/** Ask the model to continue where it stopped. */
		CONTINUE
	}

	/** How a continuation request is phrased. */
	public enum ContinuationMode {
		/** The partial answer as an assistant message, then a user message asking to continue. */
		USER_CONTINUE,
		/** The partial answer as an assistant message the model extends (Anthropic-style prefill). */
		ASSISTANT_PREFILL
	}

	/**
	 * The fallback ladder properties can express: a static text. A ladder with steps that need code
	 * (a cache, another model) is set by an {@code AiGuardPolicyCustomizer}, which replaces this one.
	 */
	public static class Fallback {

		/** A fixed answer served when every other step failed; unset: none. */
		@Nullable
		private String staticText;

		/**
		 * What enters the ladder. Default: every trigger but {@code CLIENT_ERROR}. Leave out
		 * {@code BUDGET} to hand a budget's refusal, with its retry-after, to the caller (an HTTP 429).
		 */
		private Set<FallbackTrigger> triggers = EnumSet.copyOf(FallbackTrigger.defaults());

		/** How long a step may take to its first chunk before the next step runs; unset: no limit. */
		@Nullable
		private Duration timeout;

		public @Nullable String getStaticText() {
			return staticText;
		}

		public void setStaticText(@Nullable String staticText) {
			this.staticText = staticText;
		}

		public Set<FallbackTrigger> getTriggers() {
			return triggers;
		}

		public void setTriggers(Set<FallbackTrigger> triggers) {
			this.triggers = triggers;
		}

		public @Nullable Duration getTimeout() {
			return timeout;
		}

		public void setTimeout(@Nullable Duration timeout) {
			this.timeout = timeout;
		}
	}

	/** The breaker's trip policies (see docs/breaker.md). */
	public enum TripPolicyKind {
		/** The failure and slow-call rates of the window against their thresholds. */
		FAILURE_RATE,
		/** Rates that decay with age, recent calls weighing more. */
		DECAYED_FAILURE_RATE,
		/** Time to first token against a learned baseline. */
		ADAPTIVE_TTFT,
		/** A score of time to first token and failures against {@code baseline-ttft}. */
		PERFORMANCE_SCORE,
		/** The p95 (or {@code ttft-percentile}) time to first token of the last minute against {@code ttft-percentile-limit}. */
		TTFT_PERCENTILE
	}

	/** A circuit breaker; an unset setting takes {@code BreakerConfig.defaults()}'s value. */
	public static class Breaker {

		/** Failure rate 0..1 at which the breaker opens. */
		@Nullable
		private Double failureRateThreshold;

		/** Slow-call rate 0..1 at which the breaker opens. */
		@Nullable
		private Double slowCallRateThreshold;

		/** A call whose first token takes longer than this is slow. */
		@Nullable
		private Duration slowTimeToFirstToken;

		/** Calls in the window before a rate is judged. */
		@Nullable
		private Integer minimumCalls;

		/** A count window of this many calls; exclusive with {@code window-buckets}. */
		@Nullable
		private Integer windowSize;

		/** A time window of this many buckets of {@code bucket-length}; exclusive with {@code window-size}. */
		@Nullable
		private Integer windowBuckets;

		/** The length of one bucket of a time window. */
		@Nullable
		private Duration bucketLength;

		/** How long the breaker stays open before probing. */
		@Nullable
		private Duration openWait;

		/** Factor the open wait grows by on each re-open (1 = constant). */
		@Nullable
		private Double openWaitMultiplier;

		/** The longest open wait. */
		@Nullable
		private Duration maxOpenWait;

		/** Random spread 0..1 of the open wait. */
		@Nullable
		private Double openWaitJitter;

		/** Probe calls let through in HALF_OPEN. */
		@Nullable
		private Integer halfOpenProbes;

		/** Healthy probes that close the breaker; at most {@code half-open-probes}. */
		@Nullable
		private Integer successesToClose;

		/** How long HALF_OPEN may last before the breaker opens again. */
		@Nullable
		private Duration maxTimeInHalfOpen;

		/** The least time spent in HALF_OPEN and in CLOSED after a re-close; at most {@code open-wait}. */
		@Nullable
		private Duration minimumDwell;

		/** Share 0..1 of calls let through as probes in HALF_OPEN, instead of a count of probes. */
		@Nullable
		private Double halfOpenProbeRatio;

		/** Band 0..1 below the thresholds the probes must reach to close the breaker. */
		@Nullable
		private Double hysteresis;

		/** Whether client errors (400, 401, 403, 404) count as failures. Default: false. */
		@Nullable
		private Boolean recordClientErrors;

		public @Nullable Double getHalfOpenProbeRatio() {
			return halfOpenProbeRatio;
		}

		public void setHalfOpenProbeRatio(@Nullable Double halfOpenProbeRatio) {
			this.halfOpenProbeRatio = halfOpenProbeRatio;
		}

		public @Nullable Double getHysteresis() {
			return hysteresis;
		}

		public void setHysteresis(@Nullable Double hysteresis) {
			this.hysteresis = hysteresis;
		}

		public @Nullable Boolean getRecordClientErrors() {
			return recordClientErrors;
		}

		public void setRecordClientErrors(@Nullable Boolean recordClientErrors) {
			this.recordClientErrors = recordClientErrors;
		}

		/**
		 * What trips the breaker; several trip it when any of them would. Default: failure-rate.
		 */
		private List<TripPolicyKind> tripPolicy = new ArrayList<>(List.of(TripPolicyKind.FAILURE_RATE));

		/** The time to first token a healthy model reaches; required by the performance-score trip policy. */
		@Nullable
		private Duration baselineTtft;

		/** Whether the trip policy acts on the trend of its pressure (trips before the threshold is crossed). */
		private boolean predictive;

		/** Added to {@code slow-time-to-first-token} per prompt token (the guard's call form estimates its request's tokens). Default: 0. */
		@Nullable
		private Duration slowTimeToFirstTokenPerPromptToken;

		/** Failures in a row that trip the breaker at once; 0 is off (the default). */
		@Nullable
		private Integer consecutiveFailuresToTrip;

		/** How long the trip pressure must last before the breaker trips; shorter spikes are ignored. Default: 0. */
		@Nullable
		private Duration tripDelay;

		/** After a re-close, the period over which the admitted share of calls grows from 0 to all. Default: 0. */
		@Nullable
		private Duration rampUp;

		/** The period after start during which tripping needs {@code warm-up-threshold-factor} times the pressure. Default: 0. */
		@Nullable
		private Duration warmUp;

		/** The pressure a trip needs during warm-up (1 to 100). Default: 2. */
		@Nullable
		private Double warmUpThresholdFactor;

		/** The time to first token the percentile must stay under; required by the ttft-percentile trip policy. */
		@Nullable
		private Duration ttftPercentileLimit;

		/** Which percentile the ttft-percentile trip policy reads, 0.5 to below 1. Default: 0.95. */
		@Nullable
		private Double ttftPercentile;

		/** A starting baseline for the adaptive-ttft trip policy, so it judges from the first call. */
		@Nullable
		private Duration adaptiveTtftBaseline;

		public @Nullable Duration getSlowTimeToFirstTokenPerPromptToken() {
			return slowTimeToFirstTokenPerPromptToken;
		}

		public void setSlowTimeToFirstTokenPerPromptToken(@Nullable Duration slowTimeToFirstTokenPerPromptToken) {
			this.slowTimeToFirstTokenPerPromptToken = slowTimeToFirstTokenPerPromptToken;
		}

		public @Nullable Integer getConsecutiveFailuresToTrip() {
			return consecutiveFailuresToTrip;
		}

		public void setConsecutiveFailuresToTrip(@Nullable Integer consecutiveFailuresToTrip) {
			this.consecutiveFailuresToTrip = consecutiveFailuresToTrip;
		}

		public @Nullable Duration getTripDelay() {
			return tripDelay;
		}

		public void setTripDelay(@Nullable Duration tripDelay) {
			this.tripDelay = tripDelay;
		}

		public @Nullable Duration getRampUp() {
			return rampUp;
		}

		public void setRampUp(@Nullable Duration rampUp) {
			this.rampUp = rampUp;
		}

		public @Nullable Duration getWarmUp() {
			return warmUp;
		}

		public void setWarmUp(@Nullable Duration warmUp) {
			this.warmUp = warmUp;
		}

		public @Nullable Double getWarmUpThresholdFactor() {
			return warmUpThresholdFactor;
		}

		public void setWarmUpThresholdFactor(@Nullable Double warmUpThresholdFactor) {
			this.warmUpThresholdFactor = warmUpThresholdFactor;
		}

		public @Nullable Duration getTtftPercentileLimit() {
			return ttftPercentileLimit;
		}

		public void setTtftPercentileLimit(@Nullable Duration ttftPercentileLimit) {
			this.ttftPercentileLimit = ttftPercentileLimit;
		}

		public @Nullable Double getTtftPercentile() {
			return ttftPercentile;
		}

		public void setTtftPercentile(@Nullable Double ttftPercentile) {
			this.ttftPercentile = ttftPercentile;
		}

		public @Nullable Duration getAdaptiveTtftBaseline() {
			return adaptiveTtftBaseline;
		}

		public void setAdaptiveTtftBaseline(@Nullable Duration adaptiveTtftBaseline) {
			this.adaptiveTtftBaseline = adaptiveTtftBaseline;
		}

		public List<TripPolicyKind> getTripPolicy() {
			return tripPolicy;
		}

		public void setTripPolicy(List<TripPolicyKind> tripPolicy) {
			this.tripPolicy = tripPolicy;
		}

		public @Nullable Duration getBaselineTtft() {
			return baselineTtft;
		}

		public void setBaselineTtft(@Nullable Duration baselineTtft) {
			this.baselineTtft = baselineTtft;
		}

		public boolean isPredictive() {
			return predictive;
		}

		public void setPredictive(boolean predictive) {
			this.predictive = predictive;
		}

		public @Nullable Double getFailureRateThreshold() {
			return failureRateThreshold;
		}

		public void setFailureRateThreshold(@Nullable Double failureRateThreshold) {
			this.failureRateThreshold = failureRateThreshold;
		}

		public @Nullable Double getSlowCallRateThreshold() {
			return slowCallRateThreshold;
		}

		public void setSlowCallRateThreshold(@Nullable Double slowCallRateThreshold) {
			this.slowCallRateThreshold = slowCallRateThreshold;
		}

		public @Nullable Duration getSlowTimeToFirstToken() {
			return slowTimeToFirstToken;
		}

		public void setSlowTimeToFirstToken(@Nullable Duration slowTimeToFirstToken) {
			this.slowTimeToFirstToken = slowTimeToFirstToken;
		}

		public @Nullable Integer getMinimumCalls() {
			return minimumCalls;
		}

		public void setMinimumCalls(@Nullable Integer minimumCalls) {
			this.minimumCalls = minimumCalls;
		}

		public @Nullable Integer getWindowSize() {
			return windowSize;
		}

		public void setWindowSize(@Nullable Integer windowSize) {
			this.windowSize = windowSize;
		}

		public @Nullable Integer getWindowBuckets() {
			return windowBuckets;
		}

		public void setWindowBuckets(@Nullable Integer windowBuckets) {
			this.windowBuckets = windowBuckets;
		}

		public @Nullable Duration getBucketLength() {
			return bucketLength;
		}

		public void setBucketLength(@Nullable Duration bucketLength) {
			this.bucketLength = bucketLength;
		}

		public @Nullable Duration getOpenWait() {
			return openWait;
		}

		public void setOpenWait(@Nullable Duration openWait) {
			this.openWait = openWait;
		}

		public @Nullable Double getOpenWaitMultiplier() {
			return openWaitMultiplier;
		}

		public void setOpenWaitMultiplier(@Nullable Double openWaitMultiplier) {
			this.openWaitMultiplier = openWaitMultiplier;
		}

		public @Nullable Duration getMaxOpenWait() {
			return maxOpenWait;
		}

		public void setMaxOpenWait(@Nullable Duration maxOpenWait) {
			this.maxOpenWait = maxOpenWait;
		}

		public @Nullable Double getOpenWaitJitter() {
			return openWaitJitter;
		}

		public void setOpenWaitJitter(@Nullable Double openWaitJitter) {
			this.openWaitJitter = openWaitJitter;
		}

		public @Nullable Integer getHalfOpenProbes() {
			return halfOpenProbes;
		}

		public void setHalfOpenProbes(@Nullable Integer halfOpenProbes) {
			this.halfOpenProbes = halfOpenProbes;
		}

		public @Nullable Integer getSuccessesToClose() {
			return successesToClose;
		}

		public void setSuccessesToClose(@Nullable Integer successesToClose) {
			this.successesToClose = successesToClose;
		}

		public @Nullable Duration getMinimumDwell() {
			return minimumDwell;
		}

		public void setMinimumDwell(@Nullable Duration minimumDwell) {
			this.minimumDwell = minimumDwell;
		}

		public @Nullable Duration getMaxTimeInHalfOpen() {
			return maxTimeInHalfOpen;
		}

		public void setMaxTimeInHalfOpen(@Nullable Duration maxTimeInHalfOpen) {
			this.maxTimeInHalfOpen = maxTimeInHalfOpen;
		}
	}

	/** The shared priority lanes: none, or all three of p0, p1 and p2. */
	public static class Lanes {

		/** The lanes' name in metrics. Default: {@code lanes}. */
		private String name = "lanes";

		/** The interactive lane. */
		@Nullable
		private Lane p0;

		/** The assistive lane. */
		@Nullable
		private Lane p1;

		/** The batch lane. */
		@Nullable
		private Lane p2;

		public String getName() {
			return name;
		}

		public void setName(String name) {
			this.name = name;
		}

		public @Nullable Lane getP0() {
			return p0;
		}

		public void setP0(@Nullable Lane p0) {
			this.p0 = p0;
		}

		public @Nullable Lane getP1() {
			return p1;
		}

		public void setP1(@Nullable Lane p1) {
			this.p1 = p1;
		}

		public @Nullable Lane getP2() {
			return p2;
		}

		public void setP2(@Nullable Lane p2) {
			this.p2 = p2;
		}

		/** @return the configured lanes by priority, most urgent first */
		public Map<Priority, Lane> configured() {
			Map<Priority, Lane> lanes = new LinkedHashMap<>();
			if (p0 != null) {
				lanes.put(Priority.P0, p0);
			}
			if (p1 != null) {
				lanes.put(Priority.P1, p1);
			}
			if (p2 != null) {
				lanes.put(Priority.P2, p2);
			}
			return lanes;
		}
	}

	/** One lane; an unset setting takes {@code LaneSpec.of(concurrency)}'s value. */
	public static class Lane {

		/** Streams of this lane in flight at once (0: the lane only borrows). */
		private int concurrency = 1;

		/** Requests waiting at most. Default: 256. */
		@Nullable
		private Integer maxQueueSize;

		/** Longest wait in the queue before rejection. Default: 30s. */
		@Nullable
		private Duration maxQueueWait;

		/** Whether this lane may use idle permits of less urgent lanes. Default: true. */
		@Nullable
		private Boolean borrowFromLower;

		/** Permits that only this lane's own requests may use. Default: 0. */
		@Nullable
		private Integer reservedForOwn;

		/** A request waiting this long is promoted one priority; unset: never. */
		@Nullable
		private Duration agingAfter;

		public int getConcurrency() {
			return concurrency;
		}

		public void setConcurrency(int concurrency) {
			this.concurrency = concurrency;
		}

		public @Nullable Integer getMaxQueueSize() {
			return maxQueueSize;
		}

		public void setMaxQueueSize(@Nullable Integer maxQueueSize) {
			this.maxQueueSize = maxQueueSize;
		}

		public @Nullable Duration getMaxQueueWait() {
			return maxQueueWait;
		}

		public void setMaxQueueWait(@Nullable Duration maxQueueWait) {
			this.maxQueueWait = maxQueueWait;
		}

		public @Nullable Boolean getBorrowFromLower() {
			return borrowFromLower;
		}

		public void setBorrowFromLower(@Nullable Boolean borrowFromLower) {
			this.borrowFromLower = borrowFromLower;
		}

		public @Nullable Integer getReservedForOwn() {
			return reservedForOwn;
		}

		public void setReservedForOwn(@Nullable Integer reservedForOwn) {
			this.reservedForOwn = reservedForOwn;
		}

		public @Nullable Duration getAgingAfter() {
			return agingAfter;
		}

		public void setAgingAfter(@Nullable Duration agingAfter) {
			this.agingAfter = agingAfter;
		}
	}

	/**
	 * The load governor ({@code dev.aiguard.load.LoadGovernor}), one per application, attached to
	 * every policy unless the policy says {@code load: false}. An unset setting takes the
	 * governor's default, which its description names.
	 */
	public static class Load {

		/** Whether a load governor is built, started with the context and attached to the policies. */
		private boolean enabled;

		/** The governor's name in metrics and messages. */
		private String name = "load";

		/** Requests per second the service sustains, > 0; required when enabled. */
		@Nullable
		private Double capacity;

		/** Time between decisions. Default: 1s. */
		@Nullable
		private Duration interval;

		/** Intervals the request rate is forecast ahead. Default: 5. */
		@Nullable
		private Integer horizon;

		/** Forecast peak, as a share of capacity, that raises the level to at least WARNING. Default: 0.85. */
		@Nullable
		private Double overloadLine;

		/** Load (offered rate / capacity) that enters WARNING. Default: 0.8. */
		@Nullable
		private Double degradeAt;

		/** Load under which WARNING is left; each level is left below its threshold times recover-below / degrade-at. Default: 0.6. */
		@Nullable
		private Double recoverBelow;

		/** Loads entering WARNING, DEGRADED and CRITICAL (three increasing numbers, the first replaces degrade-at; Infinity turns a line off, DEGRADED's only with CRITICAL's). Default: 0.8, Infinity, Infinity: the load alone goes no further than WARNING. */
		@Nullable
		private List<Double> loadThresholds;

		/** Share of each interval's offered rate in the smoothed load the levels read, in (0, 1]; 1 reads each interval alone. Default: 0.3. */
		@Nullable
		private Double loadSmoothing;

		/** Whether the shared lanes (aiguard.lanes) are sized by the governor's rules at each level. */
		private boolean lanes = true;

		/** Where the permits a level takes from a lane go: keep-total (to the nearest more urgent open lane) or scale (dropped). Default: keep-total. */
		private LaneResizing laneResizing = LaneResizing.KEEP_TOTAL;

		/** Health scores under which WARNING, DEGRADED and CRITICAL hold (three decreasing numbers, 0..100). Default: 80, 60, 40. */
		@Nullable
		private List<Double> scoreThresholds;

		/** Least time at a level before recovering from it. Default: 30s. */
		@Nullable
		private Duration dwell;

		/** Decisions on current values only, before the forecast takes part. Default: 10. */
		@Nullable
		private Integer warmupIntervals;

		/** The request-rate forecast: Holt's linear smoothing. */
		private Forecast forecast = new Forecast();

		/**
		 * Weights of the health signals by name: cpu (0.20), memory (0.15), response-time (0.35),
		 * error-rate (0.30); 0 leaves a signal out.
		 */
		private Map<String, Double> signals = new LinkedHashMap<>();

		/**
		 * Overrides of the rules, by level ({@code warning}, {@code degraded}, {@code critical},
		 * {@code healthy}) and priority ({@code p0}, {@code p1}, {@code p2}): an action and a lane factor.
		 */
		private Map<String, Map<String, Rule>> rules = new LinkedHashMap<>();

		public boolean isEnabled() {
			return enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public String getName() {
			return name;
		}

		public void setName(String name) {
			this.name = name;
		}

		public @Nullable Double getCapacity() {
			return capacity;
		}

		public void setCapacity(@Nullable Double capacity) {
			this.capacity = capacity;
		}

		public @Nullable Duration getInterval() {
			return interval;
		}

		public void setInterval(@Nullable Duration interval) {
			this.interval = interval;
		}

		public @Nullable Integer getHorizon() {
			return horizon;
		}

		public void setHorizon(@Nullable Integer horizon) {
			this.horizon = horizon;
		}

		public @Nullable Double getOverloadLine() {
			return overloadLine;
		}

		public void setOverloadLine(@Nullable Double overloadLine) {
			this.overloadLine = overloadLine;
		}

		public @Nullable Double getDegradeAt() {
			return degradeAt;
		}

		public void setDegradeAt(@Nullable Double degradeAt) {
			this.degradeAt = degradeAt;
		}

		public @Nullable Double getRecoverBelow() {
			return recoverBelow;
		}

		public void setRecoverBelow(@Nullable Double recoverBelow) {
			this.recoverBelow = recoverBelow;
		}

		public @Nullable Double getLoadSmoothing() {
			return loadSmoothing;
		}

		public void setLoadSmoothing(@Nullable Double loadSmoothing) {
			this.loadSmoothing = loadSmoothing;
		}

		public boolean isLanes() {
			return lanes;
		}

		public void setLanes(boolean lanes) {
			this.lanes = lanes;
		}

		public LaneResizing getLaneResizing() {
			return laneResizing;
		}

		public void setLaneResizing(LaneResizing laneResizing) {
			this.laneResizing = laneResizing;
		}

		public @Nullable List<Double> getLoadThresholds() {
			return loadThresholds;
		}

		public void setLoadThresholds(@Nullable List<Double> loadThresholds) {
			this.loadThresholds = loadThresholds;
		}

		public @Nullable List<Double> getScoreThresholds() {
			return scoreThresholds;
		}

		public void setScoreThresholds(@Nullable List<Double> scoreThresholds) {
			this.scoreThresholds = scoreThresholds;
		}

		public @Nullable Duration getDwell() {
			return dwell;
		}

		public void setDwell(@Nullable Duration dwell) {
			this.dwell = dwell;
		}

		public @Nullable Integer getWarmupIntervals() {
			return warmupIntervals;
		}

		public void setWarmupIntervals(@Nullable Integer warmupIntervals) {
			this.warmupIntervals = warmupIntervals;
		}

		public Forecast getForecast() {
			return forecast;
		}

		public void setForecast(Forecast forecast) {
			this.forecast = forecast;
		}

		public Map<String, Double> getSignals() {
			return signals;
		}

		public void setSignals(Map<String, Double> signals) {
			this.signals = signals;
		}

		public Map<String, Map<String, Rule>> getRules() {
			return rules;
		}

		public void setRules(Map<String, Map<String, Rule>> rules) {
			this.rules = rules;
		}
	}

	/** Holt's smoothing of the request rate. */
	public static class Forecast {

		/** Level smoothing, between 0 and 1. Default: 0.3. */
		private double alpha = 0.3;

		/** Trend smoothing, between 0 and 1. Default: 0.1. */
		private double beta = 0.1;

		public double getAlpha() {
			return alpha;
		}

		public void setAlpha(double alpha) {
			this.alpha = alpha;
		}

		public double getBeta() {
			return beta;
		}

		public void setBeta(double beta) {
			this.beta = beta;
		}
	}

	/** What one priority gets at one level; an unset part keeps the default rules' value. */
	public static class Rule {

		/** realtime, cheaper-first, fallback-first, static-or-shed or shed. */
		@Nullable
		private LoadAction action;

		/** The lane's capacity as a share (0..1) of its configured concurrency; 0 closes it, any share above keeps one permit. */
		@Nullable
		private Double laneFactor;

		public @Nullable LoadAction getAction() {
			return action;
		}

		public void setAction(@Nullable LoadAction action) {
			this.action = action;
		}

		public @Nullable Double getLaneFactor() {
			return laneFactor;
		}

		public void setLaneFactor(@Nullable Double laneFactor) {
			this.laneFactor = laneFactor;
		}
	}

	/** @return the names of the policies, in configuration order */
	List<String> policyNames() {
		return new ArrayList<>(policies.keySet());
	}
}
