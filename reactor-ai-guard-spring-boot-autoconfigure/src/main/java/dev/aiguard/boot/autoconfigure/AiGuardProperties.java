package dev.aiguard.boot.autoconfigure;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.aiguard.boot.autoconfigure.properties.BreakerProperties;
import dev.aiguard.boot.autoconfigure.properties.BreakerTreeProperties;
import dev.aiguard.boot.autoconfigure.properties.BudgetsProperties;
import dev.aiguard.boot.autoconfigure.properties.FallbackProperties;
import dev.aiguard.boot.autoconfigure.properties.HealthProperties;
import dev.aiguard.boot.autoconfigure.properties.LanesProperties;
import dev.aiguard.boot.autoconfigure.properties.LoadProperties;
import dev.aiguard.boot.autoconfigure.properties.MidStreamProperties;
import dev.aiguard.boot.autoconfigure.properties.ReportsProperties;
import dev.aiguard.boot.autoconfigure.properties.RetryBudgetProperties;
import dev.aiguard.boot.autoconfigure.properties.RetryProperties;
import dev.aiguard.boot.autoconfigure.properties.StallProperties;
import dev.aiguard.boot.autoconfigure.properties.TruncationProperties;
import dev.aiguard.boot.autoconfigure.properties.ValidationProperties;
import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;

/**
 * Everything under {@code aiguard.*}: named policies (each becomes an {@code AiGuard} bean of that
 * name), named breakers and the priority lanes that policies share. A setting left unset takes the
 * library's default, which its description names. Each capability's settings are a class of
 * {@link dev.aiguard.boot.autoconfigure.properties}; this class holds them and the policies.
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
	private Map<String, BreakerProperties> breakers = new LinkedHashMap<>();

	/** A breaker hierarchy (system → providers → endpoints); policies pass it with {@code breaker-path}. */
	@NestedConfigurationProperty
	private BreakerTreeProperties breakerTree = new BreakerTreeProperties();

	/** The priority lanes shared by every policy with {@code lanes: true}. */
	@NestedConfigurationProperty
	private LanesProperties lanes = new LanesProperties();

	/** The retry budget shared by every policy with {@code retry.budget: true}. */
	@NestedConfigurationProperty
	private RetryBudgetProperties retryBudget = new RetryBudgetProperties();

	/** What the health contributor reports. */
	@NestedConfigurationProperty
	private HealthProperties health = new HealthProperties();

	/** Reports kept for the Actuator endpoint. */
	@NestedConfigurationProperty
	private ReportsProperties reports = new ReportsProperties();

	/** The load governor: overload levels from a health score, the offered load and its forecast. */
	@NestedConfigurationProperty
	private LoadProperties load = new LoadProperties();

	/** Budgets for every policy with {@code budget: true}: caps, prices, tenant budgets, provider limits. */
	@NestedConfigurationProperty
	private BudgetsProperties budgets = new BudgetsProperties();

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

	public Map<String, BreakerProperties> getBreakers() {
		return breakers;
	}

	public void setBreakers(Map<String, BreakerProperties> breakers) {
		this.breakers = breakers;
	}

	public BreakerTreeProperties getBreakerTree() {
		return breakerTree;
	}

	public void setBreakerTree(BreakerTreeProperties breakerTree) {
		this.breakerTree = breakerTree;
	}

	public LanesProperties getLanes() {
		return lanes;
	}

	public void setLanes(LanesProperties lanes) {
		this.lanes = lanes;
	}

	public RetryBudgetProperties getRetryBudget() {
		return retryBudget;
	}

	public void setRetryBudget(RetryBudgetProperties retryBudget) {
		this.retryBudget = retryBudget;
	}

	public HealthProperties getHealth() {
		return health;
	}

	public void setHealth(HealthProperties health) {
		this.health = health;
	}

	public ReportsProperties getReports() {
		return reports;
	}

	public void setReports(ReportsProperties reports) {
		this.reports = reports;
	}

	public LoadProperties getLoad() {
		return load;
	}

	public void setLoad(LoadProperties load) {
		this.load = load;
	}

	public BudgetsProperties getBudgets() {
		return budgets;
	}

	public void setBudgets(BudgetsProperties budgets) {
		this.budgets = budgets;
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
		@NestedConfigurationProperty
		private StallProperties stall = new StallProperties();

		/** Retries before the first token. */
		@NestedConfigurationProperty
		private RetryProperties retry = new RetryProperties();

		/** Prompt truncation on context-length errors (call form). */
		@NestedConfigurationProperty
		private TruncationProperties truncation = new TruncationProperties();

		/** What happens when an answer fails after tokens were delivered. */
		@NestedConfigurationProperty
		private MidStreamProperties midStream = new MidStreamProperties();

		/** The fallback ladder's steps that properties can express. */
		@NestedConfigurationProperty
		private FallbackProperties fallback = new FallbackProperties();

		/** Output validation: which answers count as invalid. */
		@NestedConfigurationProperty
		private ValidationProperties validate = new ValidationProperties();

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

		public StallProperties getStall() {
			return stall;
		}

		public void setStall(StallProperties stall) {
			this.stall = stall;
		}

		public RetryProperties getRetry() {
			return retry;
		}

		public void setRetry(RetryProperties retry) {
			this.retry = retry;
		}

		public TruncationProperties getTruncation() {
			return truncation;
		}

		public void setTruncation(TruncationProperties truncation) {
			this.truncation = truncation;
		}

		public MidStreamProperties getMidStream() {
			return midStream;
		}

		public void setMidStream(MidStreamProperties midStream) {
			this.midStream = midStream;
		}

		public FallbackProperties getFallback() {
			return fallback;
		}

		public void setFallback(FallbackProperties fallback) {
			this.fallback = fallback;
		}

		public ValidationProperties getValidate() {
			return validate;
		}

		public void setValidate(ValidationProperties validate) {
			this.validate = validate;
		}
	}

	/** @return the names of the policies, in configuration order */
	List<String> policyNames() {
		return new ArrayList<>(policies.keySet());
	}
}
