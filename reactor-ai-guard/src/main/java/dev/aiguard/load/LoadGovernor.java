package dev.aiguard.load;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * Moves a service through {@link LoadLevel}s from what the guard measures, and tells each
 * {@link Priority} how it is served at the current level ({@link #action(Priority)}).
 *
 * <p>Once per interval ({@link #decide()}, run on the clock's Scheduler after {@link #start()}) the
 * governor turns the interval's counts into an {@link IntervalStats}, feeds the request rate to a
 * {@link Forecaster}, scores health from its {@link HealthSignal}s and picks the level: the worst of
 * the score's level, the offered load's level and, once warmed up, WARNING when the forecast peak
 * reaches the overload line. The signals read a window of recent intervals and count only with
 * enough samples ({@link Builder#minSamples(int)}); the score is smoothed over decisions and raises
 * the level only after staying past the line for {@link Builder#riseAfter(Duration)}; the load and
 * the forecast raise it at once. Recovery waits the dwell time at the current level, goes one level
 * at a time, and only when every input allows it with a margin (hysteresis). {@link #hold(LoadLevel)}
 * pins the level. Each change is published as a {@link LoadEvent} to listeners and metrics, and
 * resizes the {@link PriorityLanes} when given.
 *
 * <p>Recording ({@link #arrived}, {@link #firstToken}, {@link #ended}) is on the guard's hot path:
 * lock-free striped counters, no allocation. {@link #action(Priority)} is one volatile read of a
 * precomputed table.
 *
 * <pre>{@code
 * LoadGovernor governor = LoadGovernor.builder("chat")
 *     .capacity(40.0)                       // requests per second the service sustains
 *     .lanes(lanes)                         // lane sizes follow the level
 *     .listener(e -> log.warn("{}", e))
 *     .build();
 * governor.start();
 * Flux<ChatChunk> answer = client.stream(request).transform(governor.admit());
 * }</pre>
 */
public final class LoadGovernor implements Disposable {

	private final String name;
	private final long intervalNanos;
	private final LoadRules rules;
	private final LoadCounters counters;
	private final LaneSizing laneSizing;
	private final LevelPublisher published;
	private final DecisionLoop loop;

	private LoadGovernor(GovernorSettings s, Forecaster forecaster) {
		this.name = s.name;
		this.intervalNanos = s.interval.toNanos();
		this.rules = s.rules;
		LoadAction[][] actions = s.rules.actionTable();
		this.counters = new LoadCounters(s.minSamples);
		WeightedSignals signals = new WeightedSignals(s.signals.values());
		LevelStateMachine levels = new LevelStateMachine(s, forecaster, signals, actions);
		this.laneSizing = new LaneSizing(s.lanes, s.laneResizing, s.rules);
		GuardMetrics metrics = GuardMetrics.isolated(s.metrics);
		this.published = new LevelPublisher(name, actions, levels, counters, laneSizing,
				s.listeners.toArray(new LoadListener[0]), metrics);
		this.loop = new DecisionLoop(s.clock, intervalNanos, published::decide, published::applyPending);
		metrics.loadGovernorCreated(name, () -> state().level().ordinal(), () -> state().score(),
				() -> state().load(), () -> state().forecastPeak(), signals.subScoreGauges(this::state));
	}

	/**
	 * @param name the governor's name: the {@code governor} tag of its metrics and the start of its messages
	 * @return a builder; {@link Builder#capacity(double)} is required
	 */
	public static Builder builder(String name) {
		return new Builder(name);
	}

	// ---- lifecycle ----

	/**
	 * Resolves the clock and runs {@link #decide()} every interval on it. Idempotent; does nothing
	 * once disposed. The lanes, when given, are sized for the current level. Returns this governor.
	 */
	public LoadGovernor start() {
		loop.start(published::started, published::resizeLanes);
		return this;
	}

	/** Stops the periodic decisions; recording and {@link #action(Priority)} keep working. */
	@Override
	public void dispose() {
		loop.dispose();
	}

	@Override
	public boolean isDisposed() {
		return loop.isDisposed();
	}

	// ---- recording (hot path) ----

	/** One request of {@code priority} offered, admitted or shed: the offered load. */
	public void arrived(Priority priority) {
		counters.arrived(priority);
	}

	/** A live attempt's first token arrived {@code ttftNanos} after it started. */
	public void firstToken(long ttftNanos) {
		counters.firstToken(ttftNanos);
	}

	/**
	 * A live attempt ended. {@link Outcome#SUCCESS} and the upstream faults ({@link Outcome#isUpstreamFault()})
	 * are attempts, the faults are failures; the other outcomes (cancelled, rejected, client errors)
	 * are not the service's doing and are not counted.
	 */
	public void ended(Outcome outcome) {
		counters.ended(outcome);
	}

	// ---- reading ----

	/** @return how a request of {@code priority} is served at the current level; one volatile read */
	public LoadAction action(Priority priority) {
		return published.action(priority.ordinal());
	}

	/** @return the current level */
	public LoadLevel level() {
		return published.state().level();
	}

	/** @return the last decision (or hold), immutable */
	public LoadState state() {
		return published.state();
	}

	/** @return the governor's name */
	public String name() {
		return name;
	}

	/** @return the rules the governor applies */
	public LoadRules rules() {
		return rules;
	}

	/**
	 * The refusal of a request that {@link #action(Priority)} sheds. Its retry-after hint is the
	 * earliest the governor can reach a level that serves {@code priority} (the rest of the dwell
	 * plus a dwell per further level), at least one interval.
	 *
	 * @return a typed {@code SHED} rejection whose message names the governor, priority and level
	 */
	public AdmissionRejectedException shed(Priority priority) {
		return published.shed(priority, nanos(), intervalNanos);
	}

	/** The governor as a Reactor operator, {@link Priority#P1} when the Context has no priority. See {@link #admit(Priority)}. */
	public <T> Function<Flux<T>, Flux<T>> admit() {
		return admit(Priority.P1);
	}

	/**
	 * The governor as a Reactor operator: each subscription counts as an arrival; when the action
	 * for its priority is {@link LoadAction#SHED} or {@link LoadAction#STATIC_OR_SHED} it fails at
	 * once with {@link #shed(Priority)}, otherwise the source passes through while the time to its
	 * first element and its outcome (complete: success; error: failure; cancel: not counted) are
	 * recorded.
	 *
	 * <pre>{@code
	 * client.stream(request)
	 *     .transform(governor.admit(Priority.P2))
	 *     .contextWrite(Priority.P0.asContext());
	 * }</pre>
	 *
	 * @param whenAbsent the priority of a subscriber whose Context has none
	 */
	public <T> Function<Flux<T>, Flux<T>> admit(Priority whenAbsent) {
		Objects.requireNonNull(whenAbsent, "whenAbsent");
		return flux -> new FluxLoadAdmit<>(flux, this, whenAbsent);
	}

	/** The governor's clock in nanoseconds (resolved on first use when not started). */
	long nanos() {
		return loop.nanos();
	}

	/**
	 * Makes one decision now from what was recorded since the previous one: what the timer runs
	 * every interval; tests and simulations may call it. Concurrent calls are serialised (a call
	 * that finds a decision running leaves its decision to that thread and returns at once).
	 *
	 * @return the state after the decisions made so far
	 */
	public LoadState decide() {
		loop.decide();
		return published.state();
	}

	/**
	 * Pins the level at {@code level} (an operator's override, a test that needs a steady level): the
	 * decisions keep computing score, load and forecast but do not move the level, and
	 * {@link LoadState#held()} is true. The hold is a {@link LoadEvent.Reason#HOLD} event, published
	 * even when the level does not change; a second hold replaces the first. Disposing the hold in
	 * force is a {@link LoadEvent.Reason#RELEASE} event: the decisions move the level from the held
	 * one by the usual rules, the dwell counted from the hold. Never blocks: when a decision runs on
	 * another thread, that thread publishes the hold (or release) as soon as the decision ends.
	 *
	 * @return releases this hold when disposed (idempotent; nothing once another hold replaced it)
	 */
	public Disposable hold(LoadLevel level) {
		return published.hold(Objects.requireNonNull(level, "level"), loop::drain);
	}

	/**
	 * Forgets what was measured (signal window, smoothed score and load, forecast) and returns to
	 * HEALTHY unless held: a {@link LoadEvent.Reason#RESET} event. Never blocks, like {@link #hold}.
	 */
	public void reset() {
		published.reset(loop::drain);
	}

	/** The lanes' sizes at {@code level}, by priority, from their built sizes. */
	int[] laneSizes(LoadLevel level) {
		return laneSizing.sizes(level);
	}

	@Override
	public String toString() {
		return "LoadGovernor{" + name + ", " + level() + '}';
	}

	/**
	 * Configures a {@link LoadGovernor}. Each setter checks its own value; {@link #build()} checks
	 * the values against each other. Every error is an {@link IllegalArgumentException} naming the
	 * field and the value.
	 */
	public static final class Builder {

		private final GovernorSettings settings;

		private Builder(String name) {
			this.settings = new GovernorSettings(name);
		}

		/** Required: requests per second the service sustains, > 0. */
		public Builder capacity(double requestsPerSecond) {
			settings.capacity(requestsPerSecond);
			return this;
		}

		/** Time between decisions, > 0 (default 1 s). */
		public Builder interval(Duration interval) {
			settings.interval(interval);
			return this;
		}

		/**
		 * The Scheduler that runs the decisions and gives the time. Default {@link Schedulers#parallel()},
		 * looked up at {@link LoadGovernor#start()} so a virtual-time scheduler installed before it applies.
		 */
		public Builder clock(Scheduler clock) {
			settings.clock = Objects.requireNonNull(clock, "clock");
			return this;
		}

		/** The forecaster of the request rate, one per governor (default {@code Holt.of(0.3, 0.1)}). */
		public Builder forecaster(Supplier<? extends Forecaster> forecaster) {
			settings.forecaster = Objects.requireNonNull(forecaster, "forecaster");
			return this;
		}

		/** Intervals forecast ahead, >= 1 (default 5). */
		public Builder horizon(int intervals) {
			settings.horizon(intervals);
			return this;
		}

		/** Forecast peak ÷ capacity from which the level is at least WARNING, > 0 (default 0.85). */
		public Builder overloadLine(double shareOfCapacity) {
			settings.overloadLine(shareOfCapacity);
			return this;
		}

		/** Load entering WARNING, > 0 (default 0.8); the first of {@link #loadThresholds}. */
		public Builder degradeAt(double load) {
			settings.degradeAt(load);
			return this;
		}

		/**
		 * Load under which WARNING is left, > 0 and below {@code degradeAt} (default 0.6). Every level
		 * is left below its threshold × {@code recoverBelow ÷ degradeAt}.
		 */
		public Builder recoverBelow(double load) {
			settings.recoverBelow(load);
			return this;
		}

		/**
		 * Loads (the smoothed offered rate ÷ capacity) entering WARNING, DEGRADED and CRITICAL,
		 * increasing. Default 0.8, ∞, ∞: the offered load alone takes the service to WARNING (the
		 * least urgent work gets cheaper and its lane smaller before the overload); DEGRADED and
		 * CRITICAL come from the health score, when the model visibly suffers. A finite value makes
		 * the offered load alone shed; {@code Double.POSITIVE_INFINITY} turns a level's load line off
		 * (DEGRADED's only together with CRITICAL's).
		 */
		public Builder loadThresholds(double warning, double degraded, double critical) {
			settings.loadThresholds(warning, degraded, critical);
			return this;
		}

		/** Health scores under which WARNING, DEGRADED and CRITICAL hold, decreasing, in (0, 100] (default 80, 60, 40). */
		public Builder scoreThresholds(double warning, double degraded, double critical) {
			settings.scoreThresholds(warning, degraded, critical);
			return this;
		}

		/** Minimum time at a level before recovering from it, >= 0 (default 30 s). */
		public Builder dwell(Duration dwell) {
			settings.dwell(dwell);
			return this;
		}

		/** Decisions on static thresholds before the forecast takes part, >= 0 (default 10). */
		public Builder warmupIntervals(int intervals) {
			settings.warmupIntervals(intervals);
			return this;
		}

		/**
		 * Adds a sub-score, or replaces the one of the same name in its place.
		 *
		 * @param weight its weight, a finite number > 0 (weights are renormalised over the signals with data)
		 */
		public Builder signal(HealthSignal signal, double weight) {
			settings.signal(signal, weight);
			return this;
		}

		/** Removes the sub-score named {@code signalName} (e.g. a default: cpu, memory, response-time, error-rate). */
		public Builder withoutSignal(String signalName) {
			settings.withoutSignal(signalName);
			return this;
		}

		/** Level × priority → action and lane factor (default {@link LoadRules#defaults()}). */
		public Builder rules(LoadRules rules) {
			settings.rules = Objects.requireNonNull(rules, "rules");
			return this;
		}

		/**
		 * Lanes whose concurrency follows the rules' factors of their built sizes at each level
		 * change, the permits a factor takes going to the nearest more urgent open lane
		 * ({@link LaneResizing#KEEP_TOTAL}): lanes in front of a model split its concurrency, and a
		 * level decides who uses it, not how much of it is used.
		 */
		public Builder lanes(PriorityLanes lanes) {
			return lanes(lanes, LaneResizing.KEEP_TOTAL);
		}

		/** As {@link #lanes(PriorityLanes)}; {@code resizing} says where the permits a factor takes go. */
		public Builder lanes(PriorityLanes lanes, LaneResizing resizing) {
			settings.lanes = Objects.requireNonNull(lanes, "lanes");
			settings.laneResizing = Objects.requireNonNull(resizing, "resizing");
			return this;
		}

		/** Adds a listener of level changes (non-blocking; what it throws is dropped). */
		public Builder listener(LoadListener listener) {
			settings.listeners.add(Objects.requireNonNull(listener, "listener"));
			return this;
		}

		/** Where the gauges {@code aiguard.load.*} and the level-change counter are reported. */
		public Builder metrics(GuardMetrics metrics) {
			settings.metrics = Objects.requireNonNull(metrics, "metrics");
			return this;
		}

		/**
		 * @throws IllegalArgumentException when capacity is missing, the load thresholds do not
		 *         increase, recoverBelow is not below degradeAt, the score thresholds do not decrease,
		 *         the signal window is shorter than the interval, or riseAfter is not shorter than the dwell
		 */
		public LoadGovernor build() {
			Forecaster f = settings.validate();
			return new LoadGovernor(settings, f);
		}

		/**
		 * How much of each interval's offered rate enters the load the levels read: an exponential
		 * moving average, in (0, 1] (default 0.3; 1 reads each interval's rate alone). Smoothing keeps
		 * the random spread of arrivals in one interval from crossing the degrade line on its own; the
		 * forecast (which sees the trend) makes up for the lag it adds on a real ramp.
		 *
		 * @throws IllegalArgumentException when not in (0, 1]
		 */
		public Builder loadSmoothing(double alpha) {
			settings.loadSmoothing(alpha);
			return this;
		}

		/**
		 * Share of each decision's health score in the smoothed score the levels read, in (0, 1]
		 * (default 0.3; 1 reads each decision alone). A decision without any data resets the average.
		 */
		public Builder scoreSmoothing(double alpha) {
			settings.scoreSmoothing(alpha);
			return this;
		}

		/**
		 * Samples (attempts for the error rate, first tokens for the response time) a rate signal needs
		 * in the signal window before it counts, >= 0 (default 10; 0: every one counts). Below it the
		 * signal is neutral: left out of the weighted mean. See {@link IntervalStats#minSamples()}.
		 */
		public Builder minSamples(int samples) {
			settings.minSamples(samples);
			return this;
		}

		/**
		 * The span the signals read, >= the interval (default 10 s, at least one interval): the totals
		 * of the last {@code ceil(window ÷ interval)} intervals. The offered load stays per interval.
		 */
		public Builder signalWindow(Duration window) {
			settings.signalWindow(window);
			return this;
		}

		/**
		 * How long the score must stay under a worse level's line before the level rises to it, >= 0
		 * and shorter than the dwell when there is one (default 3 s, at most half the dwell; 0: at
		 * once). Rises from the offered load and the forecast apply at once.
		 */
		public Builder riseAfter(Duration confirmation) {
			settings.riseAfter(confirmation);
			return this;
		}
	}
}
