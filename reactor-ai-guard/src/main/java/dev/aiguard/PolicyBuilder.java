package dev.aiguard;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.UnaryOperator;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.BreakerSpec;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.fallback.CacheKeys;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackSpec;
import dev.aiguard.fallback.ResponseCache;
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
 * The settings of a {@link GuardPolicy} while it is being built, and the setters of
 * {@link GuardPolicy.Builder}. Each capability's settings are held as that capability's spec
 * ({@link RetrySpec}, {@link BreakerSpec}, {@link FallbackSpec}, {@link ValidationSpec},
 * {@link StallSpec}, {@link BudgetSpec}, {@link TruncationSpec}); a setter hands its argument to the
 * spec, which checks it and names the field. {@link #check()} checks what only the whole policy can.
 */
abstract class PolicyBuilder {

	final String name;
	Priority defaultPriority = Priority.P1;
	StallSpec stall = StallSpec.defaults();
	GuardMetrics metrics = GuardMetrics.noop();
	GuardObserver observer = GuardObserver.noop();
	final List<Consumer<? super GuardReport>> reportListeners = new ArrayList<>();
	@Nullable
	Scheduler timer;
	@Nullable
	Scheduler reportScheduler;
	Function<Throwable, Outcome> errorClassifier = ErrorClassifier::outcomeOf;
	BreakerSpec breaker = BreakerSpec.none();
	@Nullable
	PriorityLanes lanes;
	@Nullable
	LoadGovernor load;
	@Nullable
	BudgetSpec budget;
	@Nullable
	BucketStore bucketStore;
	boolean blockingUpstream;
	RetrySpec retry = RetrySpec.defaults();
	@Nullable
	TruncationSpec truncation;
	FallbackSpec fallback = FallbackSpec.none();
	ValidationSpec validation = ValidationSpec.none();
	final EnumMap<Priority, PriorityOverrides> overrides = new EnumMap<>(Priority.class);
	/** Set by a live change: the breaker the policy in force built from its config, kept by the new one. */
	@Nullable
	CircuitBreaker inheritedBreaker;

	PolicyBuilder(String name) {
		this.name = name;
	}

	private GuardPolicy.Builder self() {
		return (GuardPolicy.Builder) this;
	}

	/** @param priority used when the subscriber's context carries none (default P1) */
	public GuardPolicy.Builder defaultPriority(Priority priority) {
		this.defaultPriority = require("defaultPriority", priority);
		return self();
	}

	/** @param spec deadlines and completeness check (default: no deadlines, terminal required) */
	public GuardPolicy.Builder stall(StallSpec spec) {
		this.stall = require("stall", spec);
		return self();
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
	public GuardPolicy.Builder adjustStall(UnaryOperator<StallSpec> change) {
		require("adjustStall", change);
		return stall(change.apply(stall));
	}

	/** @param guardMetrics where meters are recorded (default: nowhere) */
	public GuardPolicy.Builder metrics(GuardMetrics guardMetrics) {
		this.metrics = require("metrics", guardMetrics);
		return self();
	}

	/**
	 * @param guardObserver follows each request (admission, attempts, backoffs, breaker decisions,
	 *        fallback steps, end) for tracing, e.g. an {@link dev.aiguard.metrics.ObservationGuardObserver}
	 *        (default: nobody)
	 */
	public GuardPolicy.Builder observer(GuardObserver guardObserver) {
		this.observer = require("observer", guardObserver);
		return self();
	}

	/**
	 * Adds a listener that receives one {@link GuardReport} per request, after the terminal
	 * signal. A throwing listener is isolated (its error goes to {@code Hooks.onErrorDropped}).
	 * Listeners must not block; give them a {@link #reportScheduler(Scheduler)} if they might.
	 */
	public GuardPolicy.Builder onReport(Consumer<? super GuardReport> listener) {
		reportListeners.add(require("onReport", listener));
		return self();
	}

	/** @param scheduler drives every deadline and clock of the guard (default: the stall spec's) */
	public GuardPolicy.Builder timer(Scheduler scheduler) {
		this.timer = require("timer", scheduler);
		return self();
	}

	/** @param scheduler where report listeners run (default: the thread that ended the stream) */
	public GuardPolicy.Builder reportScheduler(Scheduler scheduler) {
		this.reportScheduler = require("reportScheduler", scheduler);
		return self();
	}

	/**
	 * @param classifier maps an upstream error to an outcome; the default,
	 *        {@link ErrorClassifier#outcomeOf}, knows the library's provider, stall, breaker and
	 *        admission exceptions and treats anything else as {@link Outcome#FAILURE}
	 */
	public GuardPolicy.Builder errorClassifier(Function<Throwable, Outcome> classifier) {
		this.errorClassifier = require("errorClassifier", classifier);
		return self();
	}

	/**
	 * @param circuitBreaker asked for permission by every attempt; one outcome recorded per attempt
	 *        (share one breaker between policies with a {@code BreakerRegistry})
	 */
	public GuardPolicy.Builder breaker(CircuitBreaker circuitBreaker) {
		this.breaker = breaker.breaker(circuitBreaker);
		return self();
	}

	/**
	 * @param path every attempt passes each level of a breaker tree (system, provider, endpoint)
	 *        with one permit per level, settled once with the attempt's outcome; a refusal names the
	 *        level that refused, and the fallback ladder learns the path (a
	 *        {@code Fallback.siblings} step goes to a sibling endpoint). Replaces
	 *        {@link #breaker(CircuitBreaker)} and {@link #breaker(BreakerConfig)}.
	 */
	public GuardPolicy.Builder breaker(BreakerPath path) {
		this.breaker = breaker.path(path);
		return self();
	}

	/**
	 * @return the breaker tree path set with {@link #breaker(BreakerPath)}, or {@code null}: lets
	 *         code that completes a builder it did not start (a Spring Boot customizer, say) add a
	 *         {@code Fallback.siblings} step for the tree of that path
	 */
	public @Nullable BreakerPath breakerPath() {
		return breaker.path();
	}

	/**
	 * A breaker of the policy's own, named after the policy, built with {@code config}, reporting
	 * to the policy's metrics and reading the policy's {@link #timer} for its open wait — so one
	 * clock drives the whole request. Use {@link #breaker(CircuitBreaker)} to share a breaker
	 * between policies; that one keeps the clock it was built with.
	 */
	public GuardPolicy.Builder breaker(BreakerConfig config) {
		this.breaker = breaker.config(config);
		return self();
	}

	/**
	 * @param priorityLanes every request waits for a permit of its priority's lane (or borrows a
	 *        lower lane's) before its first attempt, and holds it across retries
	 */
	public GuardPolicy.Builder lanes(PriorityLanes priorityLanes) {
		this.lanes = require("lanes", priorityLanes);
		return self();
	}

	/**
	 * @param governor asked before admission: each request counts as an arrival, and the
	 *        governor's {@link LoadGovernor#action(dev.aiguard.core.Priority) action} for its
	 *        priority decides whether it is served live, by the fallback ladder's cheaper steps
	 *        first ({@link dev.aiguard.fallback.FallbackTrigger#LOAD}), by the static answer, or
	 *        shed with {@code AdmissionRejectedException(SHED)}; live attempts report their time
	 *        to first token and outcome to it. {@link GuardPolicy.Builder#build()} starts the
	 *        governor (idempotent).
	 */
	public GuardPolicy.Builder load(LoadGovernor governor) {
		this.load = require("load", governor);
		return self();
	}

	/**
	 * @param spec the policy's budgets: the prompt cap (call form), the output cap, prices, tenant
	 *        budgets and the provider key's limits; see {@link BudgetSpec}. A spec that limits
	 *        tenants or a provider key keeps its buckets in the {@link #bucketStore}.
	 */
	public GuardPolicy.Builder budget(BudgetSpec spec) {
		this.budget = require("budget", spec);
		return self();
	}

	/** Changes the budget in the builder (for {@code toBuilder()} and {@link GuardControl#update}); starts from {@link BudgetSpec#defaults()} when none is set. */
	public GuardPolicy.Builder adjustBudget(UnaryOperator<BudgetSpec> change) {
		return budget(require("budget", change.apply(budget != null ? budget : BudgetSpec.defaults())));
	}

	/** The policy has no budget any more. */
	public GuardPolicy.Builder withoutBudget() {
		this.budget = null;
		return self();
	}

	/**
	 * @param store where budget buckets live (default: an in-process {@link LocalBucketStore} on the
	 *        policy's clock, which needs {@code com.bucket4j:bucket4j_jdk17-core}); share one store
	 *        between the policies that draw on the same tenants and provider keys
	 */
	public GuardPolicy.Builder bucketStore(BucketStore store) {
		this.bucketStore = require("bucketStore", store);
		return self();
	}

	/**
	 * @param blocking whether the upstream blocks the thread that subscribes it (a blocking SDK,
	 *        {@code Flux.fromIterable} over a blocking iterator): it is then subscribed on the
	 *        lane's Scheduler (or {@code boundedElastic} without lanes). Default false.
	 */
	public GuardPolicy.Builder blockingUpstream(boolean blocking) {
		this.blockingUpstream = blocking;
		return self();
	}

	/** @param spec when and how attempts that failed before their first token are retried */
	public GuardPolicy.Builder retry(RetryRules spec) {
		this.retry = retry.rules(spec);
		return self();
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
	public GuardPolicy.Builder adjustRetry(UnaryOperator<RetryRules> change) {
		require("adjustRetry", change);
		return retry(change.apply(retry.rules()));
	}

	/** @param budget shared limit on retries as a share of requests (gRPC / Envoy style) */
	public GuardPolicy.Builder retryBudget(RetryBudget budget) {
		this.retry = retry.budget(budget);
		return self();
	}

	/** @param policy what happens when an attempt fails after tokens reached the subscriber */
	public GuardPolicy.Builder midStream(MidStreamPolicy<?> policy) {
		this.retry = retry.midStream(policy);
		return self();
	}

	/** @param spec how the prompt is shrunk after a context-length error (call form only) */
	public GuardPolicy.Builder truncation(TruncationSpec spec) {
		this.truncation = require("truncation", spec);
		return self();
	}

	/**
	 * @param chain the degradation ladder; its chunk type must be the guarded stream's
	 */
	public GuardPolicy.Builder fallback(FallbackChain<?> chain) {
		this.fallback = fallback.chain(chain);
		return self();
	}

	/**
	 * @param cache where complete, successful realtime answers are stored (call form only);
	 *        its chunk type must be the guarded stream's. Pair it with a {@code Fallback.cache}
	 *        step to answer from it.
	 */
	public GuardPolicy.Builder responseCache(ResponseCache<?> cache) {
		this.fallback = fallback.responseCache(cache);
		return self();
	}

	/** @param keyFunction the cache key of a request (default {@link CacheKeys#standard()}) */
	public GuardPolicy.Builder cacheKey(Function<ChatRequest, Object> keyFunction) {
		this.fallback = fallback.cacheKey(keyFunction);
		return self();
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
	public GuardPolicy.Builder validate(OutputValidator... outputValidators) {
		this.validation = validation.validate(outputValidators);
		return self();
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
	public GuardPolicy.Builder forPriority(Priority priority, UnaryOperator<PriorityOverrides> change) {
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
		return self();
	}

	/**
	 * Adds validators that watch each content chunk of a realtime attempt while it streams and
	 * can cut it (a {@link dev.aiguard.validation.RepetitionDetector}); the chunks delivered before
	 * the cut stand as a partial answer, handled by the mid-stream policy.
	 */
	public GuardPolicy.Builder validateStreaming(StreamingValidator... watchers) {
		this.validation = validation.validateStreaming(watchers);
		return self();
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
	public GuardPolicy.Builder withoutValidation() {
		this.validation = ValidationSpec.none();
		return self();
	}

	/** A live change: the new policy keeps {@code previous}'s own breaker rather than building another. */
	GuardPolicy.Builder inheritBreaker(GuardPolicy previous) {
		this.inheritedBreaker = breaker.config() != null && previous.breakerConfig() != null ? previous.breaker() : null;
		return self();
	}

	/** Checks what no single setter can: the name, overrides against the policy, the budget's store. */
	void check() {
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
	}

	private static <V> V require(String field, @Nullable V value) {
		if (value == null) {
			throw new IllegalArgumentException(field + " must not be null");
		}
		return value;
	}
}
