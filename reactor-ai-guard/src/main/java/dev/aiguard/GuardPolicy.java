package dev.aiguard;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerGate;
import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.CacheKeys;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.BudgetGate;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.GuardObserver;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.truncation.TruncationSpec;
import dev.aiguard.validation.OutputValidator;
import dev.aiguard.validation.StreamingValidator;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Outcome;

/**
 * Everything a guard does, configured once and shared. Immutable.
 *
 * <pre>{@code
 * GuardPolicy policy = GuardPolicy.builder("chat")
 *     .defaultPriority(Priority.P1)
 *     .stall(StallSpec.defaults()
 *         .firstTokenTimeout(Duration.ofSeconds(10))
 *         .idleTimeout(Duration.ofSeconds(30))
 *         .maxDuration(Duration.ofMinutes(5)))
 *     .metrics(new MicrometerGuardMetrics(registry))
 *     .onReport(report -> log.debug("{}", report))
 *     .build();
 * }</pre>
 */
public final class GuardPolicy {

	private final String name;
	private final Priority defaultPriority;
	private final StallSpec stall;
	private final GuardMetrics metrics;
	private final GuardObserver observer;
	private final List<Consumer<? super GuardReport>> reportListeners;
	@Nullable
	private final Scheduler timer;
	@Nullable
	private final Scheduler reportScheduler;
	private final Function<Throwable, Outcome> errorClassifier;
	@Nullable
	private final CircuitBreaker breaker;
	@Nullable
	private final PriorityLanes lanes;
	@Nullable
	private final LoadGovernor load;
	private final boolean blockingUpstream;
	private final RetryRules retry;
	/** Whether {@link Builder#retry} was called: only then does {@code maxAttempts} cap truncations too. */
	private final boolean retrySet;
	/** The config of a breaker the policy built itself, or {@code null}. */
	private final BreakerConfig breakerConfig;
	/** A path through a breaker tree each attempt passes, or {@code null}. */
	@Nullable
	private final BreakerPath breakerPath;
	@Nullable
	private final RetryBudget retryBudget;
	private final MidStreamPolicy<?> midStream;
	@Nullable
	private final TruncationSpec truncation;
	@Nullable
	private final FallbackChain<?> fallback;
	@Nullable
	private final ResponseCache<?> responseCache;
	private final Function<ChatRequest, Object> cacheKey;
	private final List<OutputValidator> validators;
	private final List<StreamingValidator> streamingValidators;
	/** What each priority sets differently; priorities without overrides are absent. */
	private final Map<Priority, PriorityOverrides> overrides;
	/** The settings each priority's requests read, by {@code Priority.ordinal()}, resolved once here. */
	private final Resolved[] resolved;
	@Nullable
	private final BudgetSpec budget;
	@Nullable
	private final BucketStore bucketStore;
	@Nullable
	private final BudgetGate budgetGate;

	/**
	 * The settings a request of one priority reads, resolved from the policy and the priority's
	 * overrides when the policy is built.
	 */
	// tailStall: deadlines do not apply to fallback answers and notices (the ladder has its own timeout)
	record Resolved(StallSpec stall, StallSpec tailStall, RetryRules retry, int maxAnswerAttempts,
			boolean countedByBreaker, int laneConcurrency) {
	}

	private GuardPolicy(Builder b) {
		this.name = b.name;
		this.defaultPriority = b.defaultPriority;
		this.stall = b.stall;
		this.metrics = GuardMetrics.isolated(b.metrics);
		this.observer = b.observer;
		this.reportListeners = List.copyOf(b.reportListeners);
		this.timer = b.timer;
		this.reportScheduler = b.reportScheduler;
		this.errorClassifier = b.errorClassifier;
		// a breaker of the policy's own reads the policy's clock, resolved at each read like every deadline
		// a live change keeps the breaker the policy built before it (GuardControl reconfigures it)
		this.breaker = b.breakerConfig == null ? b.breaker : b.inheritedBreaker != null ? b.inheritedBreaker
				: CircuitBreaker.builder(b.name).config(b.breakerConfig).metrics(b.metrics)
						.clock(() -> clock().nanos()).build();
		this.breakerConfig = b.breakerConfig;
		this.breakerPath = b.breakerPath;
		this.lanes = b.lanes;
		this.load = b.load;
		this.blockingUpstream = b.blockingUpstream;
		this.retry = b.retry;
		this.retrySet = b.retrySet;
		this.retryBudget = b.retryBudget;
		this.midStream = b.midStream;
		this.truncation = b.truncation;
		this.fallback = b.fallback;
		this.responseCache = b.responseCache;
		this.cacheKey = b.cacheKey;
		this.validators = List.copyOf(b.validators);
		this.streamingValidators = List.copyOf(b.streamingValidators);
		this.overrides = b.overrides.isEmpty() ? Map.of() : Collections.unmodifiableMap(new EnumMap<>(b.overrides));
		this.budget = b.budget;
		// the default store is in-process, on the policy's clock like every other time-based behaviour
		this.bucketStore = b.bucketStore != null ? b.bucketStore
				: b.budget != null && b.budget.needsBuckets() ? LocalBucketStore.create(() -> clock().nanos()) : null;
		this.budgetGate = b.budget == null ? null : BudgetGate.create(b.name, b.budget, bucketStore, metrics,
				() -> clock().nanos());
		Priority[] all = Priority.values();
		this.resolved = new Resolved[all.length];
		for (Priority p : all) {
			PriorityOverrides o = b.overrides.getOrDefault(p, PriorityOverrides.none());
			StallSpec s = o.stallOver(b.stall);
			RetryRules r = o.retry() != null ? o.retry() : b.retry;
			boolean capped = b.retrySet || o.retry() != null;
			resolved[p.ordinal()] = new Resolved(s, s.withoutDeadlines(), r, capped ? r.maxAttempts() : Integer.MAX_VALUE,
					o.countedByBreaker() == null || o.countedByBreaker(), o.laneConcurrency());
		}
	}

	/**
	 * @param name names the policy in metrics and reports; letters, digits, {@code . _ -}
	 */
	public static Builder builder(String name) {
		return new Builder(name);
	}

	public String name() {
		return name;
	}

	public Priority defaultPriority() {
		return defaultPriority;
	}

	public StallSpec stall() {
		return stall;
	}

	public GuardMetrics metrics() {
		return metrics;
	}

	/** @return who follows each request for tracing ({@link GuardObserver#noop()} by default) */
	public GuardObserver observer() {
		return observer;
	}

	public List<Consumer<? super GuardReport>> reportListeners() {
		return reportListeners;
	}

	/** @return the scheduler for deadlines and time: the policy's, else the stall spec's (resolved now). */
	public Scheduler timer() {
		return timer != null ? timer : stall.scheduler();
	}

	/** The clock of the last {@link #timer()} seen; immutable, so a racy update only costs a lookup. */
	@Nullable
	private TimeSource lastClock;

	/** @return the clock of {@link #timer()}, resolved once per scheduler instance */
	TimeSource clock() {
		TimeSource c = TimeSource.reuse(lastClock, timer());
		lastClock = c;
		return c;
	}

	/** @return where report listeners run; {@code null} = on the thread that ended the stream */
	@Nullable
	public Scheduler reportScheduler() {
		return reportScheduler;
	}

	/** @return maps an upstream error to an {@link Outcome} */
	public Function<Throwable, Outcome> errorClassifier() {
		return errorClassifier;
	}

	/**
	 * @return the breaker each attempt asks for permission, or {@code null}; with a
	 *         {@link #breakerPath()}, the path's endpoint breaker (the path asks its provider and the
	 *         system too)
	 */
	@Nullable
	public CircuitBreaker breaker() {
		return breakerPath != null ? breakerPath.endpoint().breaker() : breaker;
	}

	/** @return the path through a breaker tree each attempt passes, or {@code null} */
	@Nullable
	public BreakerPath breakerPath() {
		return breakerPath;
	}

	/** @return what each attempt asks for permission: the path, the breaker, or {@code null} */
	@Nullable
	public BreakerGate breakerGate() {
		return breakerPath != null ? breakerPath : breaker;
	}

	/** @return the policy's budgets, or {@code null} */
	@Nullable
	public BudgetSpec budget() {
		return budget;
	}

	/**
	 * @return where the budget buckets live: the one given to the builder, else an in-process
	 *         {@link LocalBucketStore} on the policy's clock when the budget limits tenants or a
	 *         provider key; {@code null} otherwise
	 */
	@Nullable
	public BucketStore bucketStore() {
		return bucketStore;
	}

	/** @return the budgets at work for this policy, or {@code null} without a budget */
	@Nullable
	public BudgetGate budgetGate() {
		return budgetGate;
	}

	/** @return the load governor asked before admission, or {@code null} */
	@Nullable
	public LoadGovernor load() {
		return load;
	}

	/** @return the lanes a request is admitted through, or {@code null} */
	@Nullable
	public PriorityLanes lanes() {
		return lanes;
	}

	/** @return whether the upstream blocks and is subscribed on the lane's Scheduler */
	public boolean blockingUpstream() {
		return blockingUpstream;
	}

	/** @return when and how failed attempts are retried ({@link RetryRules#none()} by default) */
	public RetryRules retry() {
		return retry;
	}

	/**
	 * The settings a request of {@code priority} reads. Its {@code maxAnswerAttempts} is the most
	 * upstream calls a request makes for the start of its answer: the first attempt, retries and
	 * truncated retries together. That is {@link RetryRules#maxAttempts()} when a retry spec was set
	 * (for the policy or the priority); without one the policy never retries a failure, and
	 * truncations are bounded by {@link TruncationSpec#maxTruncations()} alone. Continuations are
	 * bounded by {@link MidStreamPolicy#maxContinuations()}.
	 */
	Resolved resolved(Priority priority) {
		return resolved[priority.ordinal()];
	}

	/**
	 * Puts the lane sizes of the priorities' overrides into the policy's lanes: a lane this policy
	 * sizes and {@code previous} sized otherwise (or not at all) is resized; a lane {@code previous}
	 * sized and this policy does not goes back to the size it was built with.
	 */
	void applyLaneSizes(@Nullable GuardPolicy previous) {
		PriorityLanes l = lanes;
		if (l == null) {
			return;
		}
		boolean sameLanes = previous != null && previous.lanes == l;
		for (Priority p : Priority.values()) {
			int now = resolved[p.ordinal()].laneConcurrency();
			int before = sameLanes ? previous.resolved[p.ordinal()].laneConcurrency() : -1;
			if (now == before) {
				continue;
			}
			if (now >= 0) {
				l.resize(p, now);
			}
			else {
				l.resize(p, l.spec(p).concurrency());
			}
		}
	}

	/** @return what {@code priority} sets differently from the policy ({@link PriorityOverrides#none()} when nothing) */
	public PriorityOverrides overrides(Priority priority) {
		return overrides.getOrDefault(priority, PriorityOverrides.none());
	}

	/** @return the stall spec requests of {@code priority} are watched by: the policy's, with the priority's overrides */
	public StallSpec stall(Priority priority) {
		return resolved[priority.ordinal()].stall();
	}

	/** @return the retry rules of {@code priority}: its override, else the policy's */
	public RetryRules retry(Priority priority) {
		return resolved[priority.ordinal()].retry();
	}

	/** @return whether the policy's breaker counts the attempts of {@code priority} */
	public boolean countedByBreaker(Priority priority) {
		return resolved[priority.ordinal()].countedByBreaker();
	}

	/** @return the config of the breaker the policy built itself ({@code breaker(BreakerConfig)}), or {@code null} */
	@Nullable
	public BreakerConfig breakerConfig() {
		return breakerConfig;
	}

	/**
	 * Every setting of the policy as a string, by a dotted name ({@code stall.firstTokenTimeout},
	 * {@code retry.maxAttempts}, {@code priority.P0.firstTokenTimeout}); collaborators without
	 * settings of their own (metrics, listeners, classifiers) are named by their {@code toString}.
	 * Two policies differ in a setting exactly when their maps differ at its name: a
	 * {@link PolicyChange} lists those names.
	 *
	 * @return an unmodifiable map in a stable order
	 */
	public Map<String, String> describe() {
		Map<String, String> d = new LinkedHashMap<>();
		d.put("defaultPriority", defaultPriority.name());
		describeStall(d, "stall.", stall);
		if (retrySet) {
			describeRetry(d, "retry.", retry);
		}
		else {
			d.put("retry", "unset (no retry)");
		}
		d.put("retryBudget", String.valueOf(retryBudget));
		d.put("midStream", midStream.toString());
		d.put("truncation", String.valueOf(truncation));
		d.put("fallback", String.valueOf(fallback));
		d.put("responseCache", String.valueOf(responseCache));
		d.put("cacheKey", String.valueOf(cacheKey));
		if (breakerConfig != null) {
			d.put("breaker", "own");
			d.put("breaker.config", breakerConfig.toString());
		}
		else {
			d.put("breaker", breaker == null ? "none" : breaker.name());
		}
		d.put("breakerPath", breakerPath == null ? "none" : breakerPath.toString());
		d.put("lanes", lanes == null ? "none" : lanes.name());
		d.put("load", load == null ? "none" : load.name());
		if (budget != null) {
			d.putAll(budget.describe());
		}
		else {
			d.put("budget", "none");
		}
		d.put("bucketStore", String.valueOf(bucketStore));
		d.put("blockingUpstream", String.valueOf(blockingUpstream));
		d.put("timer", String.valueOf(timer));
		d.put("reportScheduler", String.valueOf(reportScheduler));
		d.put("errorClassifier", String.valueOf(errorClassifier));
		d.put("metrics", String.valueOf(metrics));
		d.put("observer", String.valueOf(observer));
		d.put("onReport", String.valueOf(reportListeners));
		d.put("validate", String.valueOf(validators));
		d.put("validateStreaming", String.valueOf(streamingValidators));
		for (Map.Entry<Priority, PriorityOverrides> e : overrides.entrySet()) {
			PriorityOverrides o = e.getValue();
			String at = "priority." + e.getKey().name() + '.';
			if (o.stall() != null) {
				describeStall(d, at + "stall.", o.stall());
			}
			putIfSet(d, at + "firstTokenTimeout", o.firstTokenTimeout());
			putIfSet(d, at + "idleTimeout", o.idleTimeout());
			putIfSet(d, at + "maxDuration", o.maxDuration());
			if (o.retry() != null) {
				describeRetry(d, at + "retry.", o.retry());
			}
			putIfSet(d, at + "countedByBreaker", o.countedByBreaker());
			if (o.laneConcurrency() >= 0) {
				d.put(at + "laneConcurrency", String.valueOf(o.laneConcurrency()));
			}
		}
		return Collections.unmodifiableMap(d);
	}

	private static void describeStall(Map<String, String> d, String at, StallSpec s) {
		d.put(at + "firstTokenTimeout", orNone(s.firstTokenTimeout()));
		d.put(at + "idleTimeout", orNone(s.idleTimeout()));
		d.put(at + "maxDuration", orNone(s.maxDuration()));
		d.put(at + "heartbeatsExtendIdle", String.valueOf(s.heartbeatsExtendIdle()));
		d.put(at + "requireTerminal", String.valueOf(s.requireTerminal()));
		d.put(at + "idleChecks", String.valueOf(s.idleChecks()));
	}

	private static void describeRetry(Map<String, String> d, String at, RetryRules r) {
		d.put(at + "maxAttempts", String.valueOf(r.maxAttempts()));
		d.put(at + "minBackoff", r.minBackoff().toString());
		d.put(at + "maxBackoff", r.maxBackoff().toString());
		d.put(at + "maxRetryAfter", r.maxRetryAfter().toString());
		d.put(at + "jitter", String.valueOf(r.jitter()));
		d.put(at + "retryOn", String.valueOf(r.retryOn()));
	}

	private static void putIfSet(Map<String, String> d, String key, @Nullable Object value) {
		if (value != null) {
			d.put(key, value.toString());
		}
	}

	private static String orNone(@Nullable Duration d) {
		return d == null ? "none" : d.toString();
	}

	/** @return the shared budget retries draw from, or {@code null} for none */
	@Nullable
	public RetryBudget retryBudget() {
		return retryBudget;
	}

	/** @return what happens when an attempt fails after tokens reached the subscriber */
	public MidStreamPolicy<?> midStream() {
		return midStream;
	}

	/** @return how prompts are shrunk on context-length errors (call form), or {@code null} */
	@Nullable
	public TruncationSpec truncation() {
		return truncation;
	}

	/** @return the degradation ladder, or {@code null} */
	@Nullable
	public FallbackChain<?> fallback() {
		return fallback;
	}

	/** @return where complete realtime answers are stored (call form), or {@code null} */
	@Nullable
	public ResponseCache<?> responseCache() {
		return responseCache;
	}

	/** @return the cache key of a request */
	public Function<ChatRequest, Object> cacheKey() {
		return cacheKey;
	}

	/** @return what judges each realtime attempt's answer when it ends; empty by default */
	public List<OutputValidator> validators() {
		return validators;
	}

	/** @return what watches each chunk of a realtime attempt and may cut it; empty by default */
	public List<StreamingValidator> streamingValidators() {
		return streamingValidators;
	}

	/** @return whether any output validator is configured */
	boolean validates() {
		return !validators.isEmpty() || !streamingValidators.isEmpty();
	}

	/** @return a builder holding this policy's settings, to derive a variant */
	public Builder toBuilder() {
		Builder b = new Builder(name);
		b.defaultPriority = defaultPriority;
		b.stall = stall;
		b.metrics = metrics;
		b.observer = observer;
		b.reportListeners.addAll(reportListeners);
		b.timer = timer;
		b.reportScheduler = reportScheduler;
		b.errorClassifier = errorClassifier;
		b.breaker = breaker;
		b.lanes = lanes;
		b.load = load;
		b.budget = budget;
		// a derived policy keeps the buckets: a live change of budgets keeps what tenants spent
		b.bucketStore = bucketStore;
		b.blockingUpstream = blockingUpstream;
		b.retry = retry;
		b.retrySet = retrySet;
		if (breakerConfig != null) {
			// a copy builds its own breaker, with its own state, from the same config
			b.breakerConfig = breakerConfig;
			b.breaker = null;
		}
		b.breakerPath = breakerPath;
		b.retryBudget = retryBudget;
		b.midStream = midStream;
		b.truncation = truncation;
		b.fallback = fallback;
		b.responseCache = responseCache;
		b.cacheKey = cacheKey;
		b.validators.addAll(validators);
		b.streamingValidators.addAll(streamingValidators);
		b.overrides.putAll(overrides);
		return b;
	}

	@Override
	public String toString() {
		return "GuardPolicy{" + name + ", defaultPriority=" + defaultPriority + ", stall=" + stall
				+ (breakerGate() != null ? ", breaker=" + breakerGate().name() : "") + (lanes != null ? ", lanes=" + lanes.name() : "")
				+ (load != null ? ", load=" + load.name() : "") + ", retry=" + retry + ", midStream=" + midStream + (truncation != null ? ", truncation=" + truncation : "")
				+ (fallback != null ? ", fallback=" + fallback : "") + (overrides.isEmpty() ? "" : ", overrides=" + overrides)
				+ (validators.isEmpty() ? "" : ", validators=" + validators)
				+ (streamingValidators.isEmpty() ? "" : ", streamingValidators=" + streamingValidators) + '}';
	}

	/** Builds a {@link GuardPolicy}; each setter checks its argument. */
	public static final class Builder {

		private String name;
		private Priority defaultPriority = Priority.P1;
		private StallSpec stall = StallSpec.defaults();
		private GuardMetrics metrics = GuardMetrics.noop();
		private GuardObserver observer = GuardObserver.noop();
		private final List<Consumer<? super GuardReport>> reportListeners = new ArrayList<>();
		private Scheduler timer;
		private Scheduler reportScheduler;
		private Function<Throwable, Outcome> errorClassifier = ErrorClassifier::outcomeOf;
		private CircuitBreaker breaker;
		private PriorityLanes lanes;
		private LoadGovernor load;
		private BudgetSpec budget;
		private BucketStore bucketStore;
		private BreakerConfig breakerConfig;
		private BreakerPath breakerPath;
		private boolean blockingUpstream;
		private RetryRules retry = RetryRules.none();
		private boolean retrySet;
		private RetryBudget retryBudget;
		private MidStreamPolicy<?> midStream = MidStreamPolicy.fail();
		private TruncationSpec truncation;
		private FallbackChain<?> fallback;
		private ResponseCache<?> responseCache;
		private Function<ChatRequest, Object> cacheKey = CacheKeys.standard();
		private final List<OutputValidator> validators = new ArrayList<>();
		private final List<StreamingValidator> streamingValidators = new ArrayList<>();
		private final EnumMap<Priority, PriorityOverrides> overrides = new EnumMap<>(Priority.class);
		/** Set by a live change: the breaker the policy in force built from its config, kept by the new one. */
		@Nullable
		private CircuitBreaker inheritedBreaker;

		private Builder(String name) {
			this.name = name;
		}

		/** @param priority used when the subscriber's context carries none (default P1) */
		public Builder defaultPriority(Priority priority) {
			this.defaultPriority = require("defaultPriority", priority);
			return this;
		}

		/** @param spec deadlines and completeness check (default: no deadlines, terminal required) */
		public Builder stall(StallSpec spec) {
			this.stall = require("stall", spec);
			return this;
		}

		/**
		 * Changes the builder's stall spec rather than replacing it: handy on a builder holding a
		 * policy in force ({@code toBuilder()}, {@link GuardControl#update}).
		 *
		 * <pre>{@code
		 * control.update("ops", b -> b.adjustStall(s -> s.firstTokenTimeout(Duration.ofSeconds(3))));
		 * }</pre>
		 *
		 * @param change receives the stall spec so far and returns the new one
		 */
		public Builder adjustStall(UnaryOperator<StallSpec> change) {
			require("adjustStall", change);
			return stall(change.apply(stall));
		}

		/** @param guardMetrics where meters are recorded (default: nowhere) */
		public Builder metrics(GuardMetrics guardMetrics) {
			this.metrics = require("metrics", guardMetrics);
			return this;
		}

		/**
		 * @param guardObserver follows each request (admission, attempts, backoffs, breaker decisions,
		 *        fallback steps, end) for tracing, e.g. an {@link dev.aiguard.metrics.ObservationGuardObserver}
		 *        (default: nobody)
		 */
		public Builder observer(GuardObserver guardObserver) {
			this.observer = require("observer", guardObserver);
			return this;
		}

		/**
		 * Adds a listener that receives one {@link GuardReport} per request, after the terminal
		 * signal. A throwing listener is isolated (its error goes to {@code Hooks.onErrorDropped}).
		 * Listeners must not block; give them a {@link #reportScheduler(Scheduler)} if they might.
		 */
		public Builder onReport(Consumer<? super GuardReport> listener) {
			reportListeners.add(require("onReport", listener));
			return this;
		}

		/** @param scheduler drives every deadline and clock of the guard (default: the stall spec's) */
		public Builder timer(Scheduler scheduler) {
			this.timer = require("timer", scheduler);
			return this;
		}

		/** @param scheduler where report listeners run (default: the thread that ended the stream) */
		public Builder reportScheduler(Scheduler scheduler) {
			this.reportScheduler = require("reportScheduler", scheduler);
			return this;
		}

		/**
		 * @param classifier maps an upstream error to an outcome; the default,
		 *        {@link ErrorClassifier#outcomeOf}, knows the library's provider, stall, breaker and
		 *        admission exceptions and treats anything else as {@link Outcome#FAILURE}
		 */
		public Builder errorClassifier(Function<Throwable, Outcome> classifier) {
			this.errorClassifier = require("errorClassifier", classifier);
			return this;
		}

		/**
		 * @param circuitBreaker asked for permission by every attempt; one outcome recorded per attempt
		 *        (share one breaker between policies with a {@code BreakerRegistry})
		 */
		public Builder breaker(CircuitBreaker circuitBreaker) {
			this.breaker = require("breaker", circuitBreaker);
			this.breakerConfig = null;
			this.breakerPath = null;
			return this;
		}

		/**
		 * @param path every attempt passes each level of a breaker tree (system, provider, endpoint)
		 *        with one permit per level, settled once with the attempt's outcome; a refusal names the
		 *        level that refused, and the fallback ladder learns the path (a
		 *        {@code Fallback.siblings} step goes to a sibling endpoint). Replaces
		 *        {@link #breaker(CircuitBreaker)} and {@link #breaker(BreakerConfig)}.
		 */
		public Builder breaker(BreakerPath path) {
			this.breakerPath = require("breaker", path);
			this.breaker = null;
			this.breakerConfig = null;
			return this;
		}

		/**
		 * @return the breaker tree path set with {@link #breaker(BreakerPath)}, or {@code null}: lets
		 *         code that completes a builder it did not start (a Spring Boot customizer, say) add a
		 *         {@code Fallback.siblings} step for the tree of that path
		 */
		public @Nullable BreakerPath breakerPath() {
			return breakerPath;
		}

		/**
		 * A breaker of the policy's own, named after the policy, built with {@code config}, reporting
		 * to the policy's metrics and reading the policy's {@link #timer} for its open wait — so one
		 * clock drives the whole request. Use {@link #breaker(CircuitBreaker)} to share a breaker
		 * between policies; that one keeps the clock it was built with.
		 */
		public Builder breaker(BreakerConfig config) {
			this.breakerConfig = require("breaker", config);
			this.breaker = null;
			this.breakerPath = null;
			return this;
		}

		/**
		 * @param priorityLanes every request waits for a permit of its priority's lane (or borrows a
		 *        lower lane's) before its first attempt, and holds it across retries
		 */
		public Builder lanes(PriorityLanes priorityLanes) {
			this.lanes = require("lanes", priorityLanes);
			return this;
		}

		/**
		 * @param governor asked before admission: each request counts as an arrival, and the
		 *        governor's {@link LoadGovernor#action(dev.aiguard.core.Priority) action} for its
		 *        priority decides whether it is served live, by the fallback ladder's cheaper steps
		 *        first ({@link dev.aiguard.fallback.FallbackTrigger#LOAD}), by the static answer, or
		 *        shed with {@code AdmissionRejectedException(SHED)}; live attempts report their time
		 *        to first token and outcome to it. {@link #build()} starts the governor (idempotent).
		 */
		public Builder load(LoadGovernor governor) {
			this.load = require("load", governor);
			return this;
		}

		/**
		 * @param spec the policy's budgets: the prompt cap (call form), the output cap, prices, tenant
		 *        budgets and the provider key's limits; see {@link BudgetSpec}. A spec that limits
		 *        tenants or a provider key keeps its buckets in the {@link #bucketStore}.
		 */
		public Builder budget(BudgetSpec spec) {
			this.budget = require("budget", spec);
			return this;
		}

		/** Changes the budget in the builder (for {@code toBuilder()} and {@link GuardControl#update}); starts from {@link BudgetSpec#defaults()} when none is set. */
		public Builder adjustBudget(UnaryOperator<BudgetSpec> change) {
			return budget(require("budget", change.apply(budget != null ? budget : BudgetSpec.defaults())));
		}

		/** The policy has no budget any more. */
		public Builder withoutBudget() {
			this.budget = null;
			return this;
		}

		/**
		 * @param store where budget buckets live (default: an in-process {@link LocalBucketStore} on the
		 *        policy's clock, which needs {@code com.bucket4j:bucket4j_jdk17-core}); share one store
		 *        between the policies that draw on the same tenants and provider keys
		 */
		public Builder bucketStore(BucketStore store) {
			this.bucketStore = require("bucketStore", store);
			return this;
		}

		/**
		 * @param blocking whether the upstream blocks the thread that subscribes it (a blocking SDK,
		 *        {@code Flux.fromIterable} over a blocking iterator): it is then subscribed on the
		 *        lane's Scheduler (or {@code boundedElastic} without lanes). Default false.
		 */
		public Builder blockingUpstream(boolean blocking) {
			this.blockingUpstream = blocking;
			return this;
		}

		/** @param spec when and how attempts that failed before their first token are retried */
		public Builder retry(RetryRules spec) {
			this.retry = require("retry", spec);
			this.retrySet = true;
			return this;
		}

		/**
		 * Changes the builder's retry rules rather than replacing them (starting from
		 * {@link RetryRules#none()} when none were set); like {@link #retry(RetryRules)}, the policy
		 * then has a retry spec.
		 *
		 * <pre>{@code
		 * control.update("ops", b -> b.adjustRetry(r -> r.maxAttempts(2)));
		 * }</pre>
		 *
		 * @param change receives the retry rules so far and returns the new ones
		 */
		public Builder adjustRetry(UnaryOperator<RetryRules> change) {
			require("adjustRetry", change);
			return retry(change.apply(retry));
		}

		/** @param budget shared limit on retries as a share of requests (gRPC / Envoy style) */
		public Builder retryBudget(RetryBudget budget) {
			this.retryBudget = require("retryBudget", budget);
			return this;
		}

		/** @param policy what happens when an attempt fails after tokens reached the subscriber */
		public Builder midStream(MidStreamPolicy<?> policy) {
			this.midStream = require("midStream", policy);
			return this;
		}

		/** @param spec how the prompt is shrunk after a context-length error (call form only) */
		public Builder truncation(TruncationSpec spec) {
			this.truncation = require("truncation", spec);
			return this;
		}

		/**
		 * @param chain the degradation ladder; its chunk type must be the guarded stream's
		 */
		public Builder fallback(FallbackChain<?> chain) {
			this.fallback = require("fallback", chain);
			return this;
		}

		/**
		 * @param cache where complete, successful realtime answers are stored (call form only);
		 *        its chunk type must be the guarded stream's. Pair it with a {@code Fallback.cache}
		 *        step to answer from it.
		 */
		public Builder responseCache(ResponseCache<?> cache) {
			this.responseCache = require("responseCache", cache);
			return this;
		}

		/** @param keyFunction the cache key of a request (default {@link CacheKeys#standard()}) */
		public Builder cacheKey(Function<ChatRequest, Object> keyFunction) {
			this.cacheKey = require("cacheKey", keyFunction);
			return this;
		}

		/**
		 * Adds validators that judge each realtime attempt's answer when its stream completed, in
		 * order; the first that rejects it decides. A rejected attempt fails with an
		 * {@link dev.aiguard.validation.InvalidOutputException}, outcome {@link Outcome#INVALID}: a
		 * breaker failure, retried when the validator allows it and nothing reached the subscriber,
		 * else the fallback ladder ({@link dev.aiguard.fallback.FallbackTrigger#INVALID_OUTPUT}) or
		 * the mid-stream policy. Validators read {@code ChatChunk} answers.
		 *
		 * <pre>{@code
		 * builder.validate(Validators.emptyAnswer(), Validators.finishReason("content_filter", "length"));
		 * }</pre>
		 */
		public Builder validate(OutputValidator... outputValidators) {
			require("validate", outputValidators);
			for (OutputValidator v : outputValidators) {
				validators.add(require("validate", v));
			}
			return this;
		}

		/**
		 * Sets what requests of {@code priority} do differently: their deadlines, retry rules,
		 * whether the breaker counts them, their lane's size. {@code change} receives the priority's
		 * overrides so far ({@link PriorityOverrides#none()} at first) and returns the new ones.
		 *
		 * <pre>{@code
		 * builder.forPriority(Priority.P0, p -> p.firstTokenTimeout(Duration.ofSeconds(5)).retry(RetryRules.backoff(3, Duration.ofMillis(200))))
		 *        .forPriority(Priority.P2, p -> p.firstTokenTimeout(Duration.ofSeconds(30)).retry(RetryRules.none()));
		 * }</pre>
		 *
		 * @throws IllegalArgumentException naming the field as {@code priority.P0.<setting>} when a
		 *         setting is invalid
		 */
		public Builder forPriority(Priority priority, UnaryOperator<PriorityOverrides> change) {
			require("forPriority.priority", priority);
			require("forPriority.change", change);
			String at = "priority." + priority.name();
			PriorityOverrides next;
			try {
				next = change.apply(overrides.getOrDefault(priority, PriorityOverrides.none()));
			}
			catch (IllegalArgumentException invalid) {
				throw new IllegalArgumentException(at + '.' + invalid.getMessage(), invalid);
			}
			require(at, next);
			if (next.isEmpty()) {
				overrides.remove(priority);
			}
			else {
				overrides.put(priority, next);
			}
			return this;
		}

		/**
		 * Adds validators that watch each content chunk of a realtime attempt while it streams and
		 * can cut it (a {@link dev.aiguard.validation.RepetitionDetector}); the chunks delivered before
		 * the cut stand as a partial answer, handled by the mid-stream policy.
		 */
		public Builder validateStreaming(StreamingValidator... watchers) {
			require("validateStreaming", watchers);
			for (StreamingValidator v : watchers) {
				streamingValidators.add(require("validateStreaming", v));
			}
			return this;
		}

		/**
		 * Removes every validator added so far, output and streaming: for a variant of a policy
		 * whose guard reads chunks the validators cannot (they read {@code ChatChunk} answers), e.g.
		 * a Spring AI advisor sharing the settings of a {@code ChatChunk} guard.
		 *
		 * <pre>{@code
		 * GuardPolicy forAdvisor = chat.toBuilder().withoutValidation().build();
		 * }</pre>
		 */
		public Builder withoutValidation() {
			validators.clear();
			streamingValidators.clear();
			return this;
		}

		/** A live change: the new policy keeps {@code previous}'s own breaker rather than building another. */
		Builder inheritBreaker(GuardPolicy previous) {
			this.inheritedBreaker = breakerConfig != null && previous.breakerConfig != null ? previous.breaker : null;
			return this;
		}

		/**
		 * @throws IllegalArgumentException naming the field and value when the policy is invalid
		 */
		public GuardPolicy build() {
			if (name == null || name.isBlank() || !name.matches("[A-Za-z0-9._-]+")) {
				throw new IllegalArgumentException(
						"name must be non-empty letters, digits, '.', '_' or '-', was '" + name + "'");
			}
			for (Map.Entry<Priority, PriorityOverrides> e : overrides.entrySet()) {
				if (e.getValue().laneConcurrency() >= 0 && lanes == null) {
					throw new IllegalArgumentException("priority." + e.getKey().name() + ".laneConcurrency needs the "
							+ "policy's lanes(..), was " + e.getValue().laneConcurrency() + " without lanes");
				}
			}
			if (budget != null) {
				budget.check();
				if (budget.needsBuckets() && bucketStore == null && !LocalStoreSupport.available()) {
					throw new IllegalArgumentException("budget needs a bucketStore(..), or com.bucket4j:bucket4j_jdk17-core on "
							+ "the class path for the in-process store, for its limits " + budget.tenants() + " / "
							+ budget.provider() + "; was neither");
				}
			}
			GuardPolicy policy = new GuardPolicy(this);
			if (load != null) {
				load.start();
			}
			return policy;
		}

		private static <V> V require(String field, V value) {
			if (value == null) {
				throw new IllegalArgumentException(field + " must not be null");
			}
			return value;
		}
	}
}
