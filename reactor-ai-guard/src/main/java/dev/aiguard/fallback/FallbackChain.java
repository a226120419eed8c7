package dev.aiguard.fallback;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import dev.aiguard.core.Source;

/**
 * The degradation ladder: fallback steps tried in order, best first, until one answers. Immutable
 * and shared; a walk of the ladder holds its own state.
 *
 * <pre>{@code
 * FallbackChain<ChatChunk> chain = FallbackChain.<ChatChunk>builder()
 *     .step(Fallback.model(req -> smallModel.stream(req), AiGuard.of(smallModelPolicy)))
 *     .step(Fallback.cache(cache))
 *     .step(Fallback.staticText("The assistant is busy right now. Please try again in a minute."))
 *     .triggers(FallbackTrigger.defaults())
 *     .timeout(Duration.ofSeconds(2))
 *     .build();
 *
 * Flux<ChatChunk> answer = chain.answer(
 *     new FallbackRequest(request, error, FallbackTrigger.BREAKER_OPEN, Priority.P0, CacheKeys.of(request)),
 *     laneScheduler, source -> log.info("answered from {}", source), metrics, "chat");
 * }</pre>
 *
 * <h2>Walking the ladder</h2>
 * A step that signals an error, or completes before its first element, or gives no first element
 * within the {@linkplain Builder#timeout(Duration) step timeout}, fails and the next step is
 * subscribed. The first element a step emits commits the walk to that step: from then on its
 * error is the walk's error. Falling to the next step after that would splice a second answer onto
 * the part of the first the user has already seen.
 *
 * @param <T> the chunk type
 */
public final class FallbackChain<T> {

	private final List<Fallback<T>> steps;
	private final Set<FallbackTrigger> triggers;
	@Nullable
	private final Duration timeout;
	@Nullable
	private final Scheduler timer;

	private FallbackChain(Builder<T> b) {
		this.steps = List.copyOf(b.steps);
		this.triggers = Collections.unmodifiableSet(EnumSet.copyOf(b.triggers));
		this.timeout = b.timeout;
		this.timer = b.timer;
	}

	/** @return an empty builder; the default triggers are {@link FallbackTrigger#defaults()} */
	public static <T> Builder<T> builder() {
		return new Builder<>();
	}

	/** @return the steps, best first */
	/**
	 * @return the chunk type of the first step that declares one ({@link Fallback#chunkType()}),
	 *         else {@code Object.class}
	 */
	public Class<?> chunkType() {
		for (Fallback<T> step : steps) {
			if (step.chunkType() != Object.class) {
				return step.chunkType();
			}
		}
		return Object.class;
	}

	public List<Fallback<T>> steps() {
		return steps;
	}

	/** @return the failures that enter this ladder */
	public Set<FallbackTrigger> triggers() {
		return triggers;
	}

	/** @return whether a failure of this kind enters the ladder */
	public boolean isEnteredBy(FallbackTrigger trigger) {
		return triggers.contains(trigger);
	}

	/** @return the longest a step may take to emit its first element, if limited */
	public Optional<Duration> timeout() {
		return Optional.ofNullable(timeout);
	}

	/**
	 * @return the scheduler step timeouts run on and step times are read from: the injected one,
	 *         else {@link Schedulers#parallel()} as of now
	 */
	public Scheduler timer() {
		return timer != null ? timer : Schedulers.parallel();
	}

	/**
	 * Walks the ladder with blocking steps on {@link Schedulers#boundedElastic()}, no listener,
	 * no metrics.
	 *
	 * @see #answer(FallbackRequest, Scheduler, Consumer, GuardMetrics, String)
	 */
	public Flux<T> answer(FallbackRequest request) {
		return answer(request, Schedulers.boundedElastic(), source -> {
		}, GuardMetrics.noop(), "fallback");
	}

	/**
	 * Walks the ladder for one request; each subscription is a new walk.
	 *
	 * <ul>
	 * <li>Steps that {@linkplain Fallback#mayBlock() may block} are called and subscribed on
	 * {@code blockingScheduler}; the others on the thread the walk is on (the subscriber's, or
	 * whichever thread ended the previous step).</li>
	 * <li>{@code onSourceChosen} is called exactly once, with the source of the step that emits the
	 * first element, before that element is delivered; never when every step fails. A throwing
	 * listener is isolated (its error goes to {@code Hooks.onErrorDropped}).</li>
	 * <li>When every step fails, the error is the last step's, with the request's cause and the
	 * earlier steps' errors added as suppressed (in that order).</li>
	 * <li>Metrics: {@code fallbackStepTime} for every step that ends (answer completed, failed,
	 * timed out), {@code fallbackStepFailed} for every step that fails (also a committed step that
	 * errors mid-answer), {@code cacheLookup} for every {@link Source#CACHE} step with a key (a hit
	 * when it emitted), and {@code answered} once the committed step completes. A cancelled walk
	 * records nothing more.</li>
	 * <li>Cancelling cancels the running step; no step is subscribed after that.</li>
	 * </ul>
	 *
	 * @param request the request and why it fell to the ladder
	 * @param blockingScheduler where blocking steps run (the request's lane scheduler)
	 * @param onSourceChosen told which source answers; must not block
	 * @param metrics where step times, failures, cache lookups and the answer are recorded
	 * @param policyName the policy name metrics are tagged with
	 */
	public Flux<T> answer(FallbackRequest request, Scheduler blockingScheduler,
			Consumer<? super Source> onSourceChosen, GuardMetrics metrics, String policyName) {
		Objects.requireNonNull(request, "request");
		Objects.requireNonNull(blockingScheduler, "blockingScheduler");
		Objects.requireNonNull(onSourceChosen, "onSourceChosen");
		Objects.requireNonNull(metrics, "metrics");
		Objects.requireNonNull(policyName, "policyName");
		return new FallbackWalk<>(this, request, blockingScheduler, timer(), onSourceChosen, metrics, policyName);
	}

	/**
	 * As {@link #answer(FallbackRequest, Scheduler, Consumer, GuardMetrics, String)}, with step
	 * timeouts run and step times read on {@code timer} instead of the chain's own: the guard walks
	 * the ladder on its policy's timer, so one clock drives a whole request.
	 */
	public Flux<T> answer(FallbackRequest request, Scheduler blockingScheduler, Scheduler timer,
			Consumer<? super Source> onSourceChosen, GuardMetrics metrics, String policyName) {
		Objects.requireNonNull(request, "request");
		Objects.requireNonNull(blockingScheduler, "blockingScheduler");
		Objects.requireNonNull(timer, "timer");
		Objects.requireNonNull(onSourceChosen, "onSourceChosen");
		Objects.requireNonNull(metrics, "metrics");
		Objects.requireNonNull(policyName, "policyName");
		return new FallbackWalk<>(this, request, blockingScheduler, timer, onSourceChosen, metrics, policyName);
	}

	/**
	 * The ladder cut down to the steps whose source is in {@code sources}, in their order, with
	 * the same triggers, timeout and timer: what the guard walks first when the load governor
	 * prefers cheaper sources to the live model.
	 *
	 * @param sources the sources to keep
	 * @return the shorter ladder, or empty when no step has one of them
	 */
	public Optional<FallbackChain<T>> only(Set<Source> sources) {
		Objects.requireNonNull(sources, "sources");
		Builder<T> b = toBuilder();
		b.steps.removeIf(step -> !sources.contains(step.source()));
		return b.steps.isEmpty() ? Optional.empty() : Optional.of(new FallbackChain<>(b));
	}

	/** @return a builder holding this chain's settings, to derive a variant */
	public Builder<T> toBuilder() {
		Builder<T> b = new Builder<>();
		b.steps.addAll(steps);
		b.triggers = EnumSet.copyOf(triggers);
		b.timeout = timeout;
		b.timer = timer;
		return b;
	}

	@Override
	public String toString() {
		return "FallbackChain" + steps + " on " + triggers + (timeout == null ? "" : ", step timeout " + timeout);
	}

	/** Builds a {@link FallbackChain}; each setter checks its argument, {@link #build()} the whole. */
	public static final class Builder<T> {

		private final List<Fallback<T>> steps = new ArrayList<>();
		private EnumSet<FallbackTrigger> triggers = FallbackTrigger.defaults();
		private @Nullable Duration timeout;
		private @Nullable Scheduler timer;

		private Builder() {
		}

		/**
		 * Appends a step; steps are tried in the order they were added.
		 *
		 * @throws IllegalArgumentException when {@code step} is {@code null} or its source is
		 *         {@code null} or {@link Source#REALTIME}
		 */
		public Builder<T> step(Fallback<T> step) {
			if (step == null) {
				throw new IllegalArgumentException("step must not be null");
			}
			Source source = step.source();
			if (source == null || source == Source.REALTIME) {
				throw new IllegalArgumentException(
						"step source must be FALLBACK_MODEL, CACHE, LIGHTWEIGHT or STATIC, was " + source
								+ " (" + step + ")");
			}
			steps.add(step);
			return this;
		}

		/**
		 * @param enteredBy the failures that enter the ladder (default: all but
		 *        {@link FallbackTrigger#CLIENT_ERROR})
		 * @throws IllegalArgumentException when {@code null}, empty or holding {@code null}
		 */
		public Builder<T> triggers(Set<FallbackTrigger> enteredBy) {
			boolean valid = enteredBy != null && !enteredBy.isEmpty();
			if (valid) {
				// not contains(null): immutable sets throw on that
				for (FallbackTrigger t : enteredBy) {
					valid &= t != null;
				}
			}
			if (!valid) {
				throw new IllegalArgumentException(
						"triggers must name at least one trigger and no null, was " + enteredBy);
			}
			this.triggers = EnumSet.copyOf(enteredBy);
			return this;
		}

		/**
		 * @param firstElementTimeout the longest a step may take to emit its first element (or to
		 *        complete); past it the step is cancelled and counts as failed. Static steps are
		 *        never timed out. Default: none.
		 * @throws IllegalArgumentException when {@code null}, zero or negative
		 */
		public Builder<T> timeout(Duration firstElementTimeout) {
			if (firstElementTimeout == null || firstElementTimeout.isZero() || firstElementTimeout.isNegative()) {
				throw new IllegalArgumentException("timeout must be > 0, was " + firstElementTimeout);
			}
			this.timeout = firstElementTimeout;
			return this;
		}

		/**
		 * @param scheduler runs step timeouts and measures step times (default
		 *        {@link Schedulers#parallel()}, resolved when a walk starts)
		 * @throws IllegalArgumentException when {@code null}
		 */
		public Builder<T> timer(Scheduler scheduler) {
			if (scheduler == null) {
				throw new IllegalArgumentException("timer must not be null");
			}
			this.timer = scheduler;
			return this;
		}

		/**
		 * @throws IllegalArgumentException naming the field when there is no step, or a
		 *         {@link Source#STATIC} step is not the last one
		 */
		public FallbackChain<T> build() {
			if (steps.isEmpty()) {
				throw new IllegalArgumentException("steps must hold at least one step, was []");
			}
			for (int i = 0; i < steps.size() - 1; i++) {
				if (steps.get(i).source() == Source.STATIC) {
					throw new IllegalArgumentException("steps[" + i + "] is STATIC but not last of " + steps.size()
							+ " steps: a static answer cannot fail, so the steps after it would never run");
				}
			}
			return new FallbackChain<>(this);
		}
	}
}
