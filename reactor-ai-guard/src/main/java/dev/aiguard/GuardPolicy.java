package dev.aiguard;

import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerGate;
import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.BreakerSpec;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.BudgetGate;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackSpec;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.GuardObserver;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.retry.RetrySpec;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.truncation.TruncationSpec;
import dev.aiguard.validation.OutputValidator;
import dev.aiguard.validation.StreamingValidator;
import dev.aiguard.validation.ValidationSpec;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;

/**
 * Everything a guard does, configured once and shared. Immutable. A policy is made of the
 * capabilities' own specs ({@link StallSpec}, {@link RetrySpec}, {@link BreakerSpec},
 * {@link FallbackSpec}, {@link ValidationSpec}, {@link BudgetSpec}, {@link TruncationSpec}), each
 * checking its own settings, and of what each priority sets differently ({@link PriorityOverrides}).
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
	private final GuardMetrics metrics;
	private final GuardObserver observer;
	private final List<Consumer<? super GuardReport>> reportListeners;
	private final @Nullable Scheduler timer;
	private final @Nullable Scheduler reportScheduler;
	private final Function<Throwable, Outcome> errorClassifier;
	private final boolean blockingUpstream;
	// the capabilities' specs
	private final StallSpec stall;
	private final RetrySpec retry;
	private final @Nullable TruncationSpec truncation;
	private final BreakerSpec breakerSpec;
	private final FallbackSpec fallback;
	private final ValidationSpec validation;
	private final @Nullable BudgetSpec budget;
	private final @Nullable PriorityLanes lanes;
	private final @Nullable LoadGovernor load;
	/** What each priority sets differently, and what its requests read. */
	private final PrioritySettings priorities;
	// what the policy builds from its specs
	/** The shared breaker, or the one the policy built from its config, or {@code null}. */
	private final @Nullable CircuitBreaker breaker;
	private final @Nullable BucketStore bucketStore;
	private final @Nullable BudgetGate budgetGate;

	/**
	 * The settings a request of one priority reads, resolved when the policy is built; deadlines do
	 * not apply to fallback answers and notices ({@code tailStall}), {@code maxAnswerAttempts} is
	 * {@link RetrySpec#maxAnswerAttempts}, continuations are bounded by {@link MidStreamPolicy}.
	 */
	record Resolved(StallSpec stall, StallSpec tailStall, RetryRules retry, int maxAnswerAttempts,
			boolean countedByBreaker, int laneConcurrency) {
	}

	private GuardPolicy(PolicyBuilder b) {
		this.name = b.name;
		this.defaultPriority = b.defaultPriority;
		this.metrics = GuardMetrics.isolated(b.metrics);
		this.observer = b.observer;
		this.reportListeners = List.copyOf(b.reportListeners);
		this.timer = b.timer;
		this.reportScheduler = b.reportScheduler;
		this.errorClassifier = b.errorClassifier;
		this.blockingUpstream = b.blockingUpstream;
		this.stall = b.stall;
		this.retry = b.retry;
		this.truncation = b.truncation;
		this.breakerSpec = b.breaker;
		this.fallback = b.fallback;
		this.validation = b.validation;
		this.budget = b.budget;
		this.lanes = b.lanes;
		this.load = b.load;
		this.priorities = new PrioritySettings(b.overrides, stall, retry);
		// a breaker of the policy's own reads the policy's clock, resolved at each read like every deadline
		// a live change keeps the breaker the policy built before it (GuardControl reconfigures it)
		BreakerConfig own = breakerSpec.config();
		this.breaker = own == null ? breakerSpec.breaker() : b.inheritedBreaker != null ? b.inheritedBreaker
				: CircuitBreaker.builder(name).config(own).metrics(b.metrics).clock(() -> clock().nanos()).build();
		// the default store is in-process, on the policy's clock like every other time-based behaviour
		this.bucketStore = b.bucketStore != null ? b.bucketStore
				: budget != null && budget.needsBuckets() ? LocalBucketStore.create(() -> clock().nanos()) : null;
		this.budgetGate = budget == null ? null
				: BudgetGate.create(name, budget, bucketStore, metrics, () -> clock().nanos());
	}

	/** @param name names the policy in metrics and reports; letters, digits, {@code . _ -} */
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
	private @Nullable TimeSource lastClock;

	/** @return the clock of {@link #timer()}, resolved once per scheduler instance */
	TimeSource clock() {
		TimeSource c = TimeSource.reuse(lastClock, timer());
		lastClock = c;
		return c;
	}

	/** @return where report listeners run; {@code null} = on the thread that ended the stream */
	public @Nullable Scheduler reportScheduler() {
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
	public @Nullable CircuitBreaker breaker() {
		BreakerPath path = breakerSpec.path();
		return path != null ? path.endpoint().breaker() : breaker;
	}

	/** @return the path through a breaker tree each attempt passes, or {@code null} */
	public @Nullable BreakerPath breakerPath() {
		return breakerSpec.path();
	}

	/** @return what each attempt asks for permission: the path, the breaker, or {@code null} */
	public @Nullable BreakerGate breakerGate() {
		BreakerPath path = breakerSpec.path();
		return path != null ? path : breaker;
	}

	/** @return the policy's budgets, or {@code null} */
	public @Nullable BudgetSpec budget() {
		return budget;
	}

	/**
	 * @return where the budget buckets live: the one given to the builder, else an in-process
	 *         {@link LocalBucketStore} on the policy's clock when the budget limits tenants or a
	 *         provider key; {@code null} otherwise
	 */
	public @Nullable BucketStore bucketStore() {
		return bucketStore;
	}

	/** @return the budgets at work for this policy, or {@code null} without a budget */
	public @Nullable BudgetGate budgetGate() {
		return budgetGate;
	}

	/** @return the load governor asked before admission, or {@code null} */
	public @Nullable LoadGovernor load() {
		return load;
	}

	/** @return the lanes a request is admitted through, or {@code null} */
	public @Nullable PriorityLanes lanes() {
		return lanes;
	}

	/** @return whether the upstream blocks and is subscribed on the lane's Scheduler */
	public boolean blockingUpstream() {
		return blockingUpstream;
	}

	/** @return when and how failed attempts are retried ({@link RetryRules#none()} by default) */
	public RetryRules retry() {
		return retry.rules();
	}

	/** @return the settings a request of {@code priority} reads */
	Resolved resolved(Priority priority) {
		return priorities.resolved(priority);
	}

	/**
	 * Puts the lane sizes of the priorities' overrides into the policy's lanes: a lane this policy
	 * sizes and {@code previous} sized otherwise (or not at all) is resized; a lane {@code previous}
	 * sized and this policy does not goes back to the size it was built with.
	 */
	void applyLaneSizes(@Nullable GuardPolicy previous) {
		PriorityLanes l = lanes;
		if (l != null) {
			priorities.applyLaneSizes(l, previous != null && previous.lanes == l ? previous.priorities : null);
		}
	}

	/** @return what {@code priority} sets differently from the policy ({@link PriorityOverrides#none()} when nothing) */
	public PriorityOverrides overrides(Priority priority) {
		return priorities.overrides(priority);
	}

	/** @return the stall spec requests of {@code priority} are watched by: the policy's, with the priority's overrides */
	public StallSpec stall(Priority priority) {
		return priorities.resolved(priority).stall();
	}

	/** @return the retry rules of {@code priority}: its override, else the policy's */
	public RetryRules retry(Priority priority) {
		return priorities.resolved(priority).retry();
	}

	/** @return whether the policy's breaker counts the attempts of {@code priority} */
	public boolean countedByBreaker(Priority priority) {
		return priorities.resolved(priority).countedByBreaker();
	}

	/** @return the config of the breaker the policy built itself ({@code breaker(BreakerConfig)}), or {@code null} */
	public @Nullable BreakerConfig breakerConfig() {
		return breakerSpec.config();
	}

	/**
	 * Every setting of the policy as a string, by a dotted name ({@code stall.firstTokenTimeout},
	 * {@code priority.P0.firstTokenTimeout}); collaborators without settings of their own (metrics,
	 * listeners, classifiers) are named by their {@code toString}. Two policies differ in a setting
	 * exactly when their maps differ at its name, which a {@link PolicyChange} lists.
	 *
	 * @return an unmodifiable map in a stable order
	 */
	public Map<String, String> describe() {
		return PolicyDescription.describe(toBuilder());
	}

	/** @return the shared budget retries draw from, or {@code null} for none */
	public @Nullable RetryBudget retryBudget() {
		return retry.budget();
	}

	/** @return what happens when an attempt fails after tokens reached the subscriber */
	public MidStreamPolicy<?> midStream() {
		return retry.midStream();
	}

	/** @return how prompts are shrunk on context-length errors (call form), or {@code null} */
	public @Nullable TruncationSpec truncation() {
		return truncation;
	}

	/** @return the degradation ladder, or {@code null} */
	public @Nullable FallbackChain<?> fallback() {
		return fallback.chain();
	}

	/** @return where complete realtime answers are stored (call form), or {@code null} */
	public @Nullable ResponseCache<?> responseCache() {
		return fallback.responseCache();
	}

	/** @return the cache key of a request */
	public Function<ChatRequest, Object> cacheKey() {
		return fallback.cacheKey();
	}

	/** @return what judges each realtime attempt's answer when it ends; empty by default */
	public List<OutputValidator> validators() {
		return validation.validators();
	}

	/** @return what watches each chunk of a realtime attempt and may cut it; empty by default */
	public List<StreamingValidator> streamingValidators() {
		return validation.streamingValidators();
	}

	/** @return the validation capability, which the policy's validation stage is built from */
	ValidationSpec validation() {
		return validation;
	}

	/** @return whether any output validator is configured */
	boolean validates() {
		return validation.validates();
	}

	/** @return a builder holding this policy's settings, to derive a variant */
	public Builder toBuilder() {
		Builder b = new Builder(name);
		b.defaultPriority = defaultPriority;
		b.metrics = metrics;
		b.observer = observer;
		b.reportListeners.addAll(reportListeners);
		b.timer = timer;
		b.reportScheduler = reportScheduler;
		b.errorClassifier = errorClassifier;
		b.blockingUpstream = blockingUpstream;
		b.stall = stall;
		b.retry = retry;
		b.truncation = truncation;
		// a copy with a config builds its own breaker, with its own state, from the same config
		b.breaker = breakerSpec;
		b.fallback = fallback;
		b.validation = validation;
		b.budget = budget;
		// a derived policy keeps the buckets: a live change of budgets keeps what tenants spent
		b.bucketStore = bucketStore;
		b.lanes = lanes;
		b.load = load;
		b.overrides.putAll(priorities.overrides());
		return b;
	}

	@Override
	public String toString() {
		return PolicyDescription.toString(this, priorities.overrides());
	}

	/**
	 * Builds a {@link GuardPolicy}; each setter checks its argument (through the capability's spec)
	 * and {@link #build()} checks the whole.
	 */
	public static final class Builder extends PolicyBuilder {

		private Builder(String name) {
			super(name);
		}

		/** @throws IllegalArgumentException naming the field and value when the policy is invalid */
		public GuardPolicy build() {
			check();
			GuardPolicy policy = new GuardPolicy(this);
			LoadGovernor governor = load;
			if (governor != null) {
				governor.start();
			}
			return policy;
		}
	}
}
