package dev.aiguard.load;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.DoubleSupplier;
import java.util.function.Function;
import java.util.function.Supplier;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.internal.Callbacks;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;
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
 * reaches the overload line. Escalation is immediate; recovery waits the dwell time at the current
 * level, goes one level at a time, and only when every input allows it with a margin
 * (hysteresis). Each change is published as a {@link LoadEvent} to listeners and metrics, and
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

	private static final Priority[] PRIORITIES = Priority.values();
	private static final LoadLevel[] LEVELS = LoadLevel.values();
	private static final long UNSET = Long.MIN_VALUE;
	/** A recovering score must clear its level's threshold by this much. */
	static final double SCORE_MARGIN = 5.0;

	private final String name;
	private final double capacity;
	private final long intervalNanos;
	@Nullable
	private final Scheduler clock;
	private final Forecaster forecaster;
	private final int horizon;
	private final double overloadLine;
	/** Load entering WARNING, DEGRADED, CRITICAL. */
	private final double[] loadThresholds;
	/** Each level is left below its load threshold times this. */
	private final double recoveryRatio;
	private final double smoothing;
	/** Score under which WARNING, DEGRADED, CRITICAL hold. */
	private final double[] scoreThresholds;
	private final long dwellNanos;
	private final int warmupIntervals;
	private final HealthSignal[] signals;
	private final double[] weights;
	private final LoadRules rules;
	/** [level][priority], never changed. */
	private final LoadAction[][] actions;
	@Nullable
	private final PriorityLanes lanes;
	private final LaneResizing laneResizing;
	private final int[] laneBase;
	private final LoadListener[] listeners;
	private final GuardMetrics metrics;

	// ---- recording: monotonic striped counters, read as deltas by the decision ----
	private final LongAdder[] arrivals = new LongAdder[PRIORITIES.length];
	private final LongAdder firstTokens = new LongAdder();
	private final LongAdder ttftNanos = new LongAdder();
	private final LongAdder successes = new LongAdder();
	private final LongAdder failures = new LongAdder();

	// ---- owned by the decision loop ----
	private final long[] seenArrivals = new long[PRIORITIES.length];
	private long seenFirstTokens;
	private long seenTtftNanos;
	private long seenSuccesses;
	private long seenFailures;
	private long lastDecisionNanos = UNSET;
	/** The offered rate smoothed over intervals (decision loop only); NaN before the first decision. */
	private double smoothedRate = Double.NaN;

	// ---- published ----
	private volatile LoadState state;
	/** The actions of the current level, by priority. */
	private volatile LoadAction[] current;
	@Nullable
	private volatile TimeSource time;
	@Nullable
	private volatile Disposable task;

	private volatile int wip;
	private static final AtomicIntegerFieldUpdater<LoadGovernor> WIP =
			AtomicIntegerFieldUpdater.newUpdater(LoadGovernor.class, "wip");

	/** 0 new, 1 started, 2 disposed. */
	private volatile int lifecycle;
	private static final AtomicIntegerFieldUpdater<LoadGovernor> LIFECYCLE =
			AtomicIntegerFieldUpdater.newUpdater(LoadGovernor.class, "lifecycle");

	private LoadGovernor(Builder b, Forecaster forecaster) {
		this.name = b.name;
		this.capacity = b.capacity;
		this.intervalNanos = b.interval.toNanos();
		this.clock = b.clock;
		this.forecaster = forecaster;
		this.horizon = b.horizon;
		this.overloadLine = b.overloadLine;
		this.loadThresholds = new double[] {b.degradeAt, b.degradedAt, b.criticalAt};
		this.recoveryRatio = b.recoverBelow / b.degradeAt;
		this.smoothing = b.smoothing;
		this.scoreThresholds = b.scoreThresholds.clone();
		this.dwellNanos = b.dwell.toNanos();
		this.warmupIntervals = b.warmupIntervals;
		this.signals = new HealthSignal[b.signals.size()];
		this.weights = new double[b.signals.size()];
		int i = 0;
		for (Map.Entry<String, WeightedSignal> e : b.signals.entrySet()) {
			signals[i] = e.getValue().signal;
			weights[i] = e.getValue().weight;
			i++;
		}
		this.rules = b.rules;
		this.actions = b.rules.actionTable();
		this.lanes = b.lanes;
		this.laneResizing = b.laneResizing;
		this.laneBase = new int[PRIORITIES.length];
		if (lanes != null) {
			for (Priority p : PRIORITIES) {
				laneBase[p.ordinal()] = lanes.spec(p).concurrency();
			}
		}
		this.listeners = b.listeners.toArray(new LoadListener[0]);
		this.metrics = GuardMetrics.isolated(b.metrics);
		for (int p = 0; p < arrivals.length; p++) {
			arrivals[p] = new LongAdder();
		}
		Map<String, Double> noScores = new LinkedHashMap<>();
		for (HealthSignal s : signals) {
			noScores.put(s.name(), Double.NaN);
		}
		this.current = actions[LoadLevel.HEALTHY.ordinal()];
		this.state = LoadState.initial(warmupIntervals > 0 ? LoadState.Mode.COLD_START : LoadState.Mode.FORECAST,
				Collections.unmodifiableMap(noScores), 0L);
		registerGauges();
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
	 * once disposed. The lanes, when given, are sized for the current level.
	 *
	 * @return this governor
	 */
	public LoadGovernor start() {
		if (!LIFECYCLE.compareAndSet(this, 0, 1)) {
			return this;
		}
		Scheduler scheduler = clock != null ? clock : Schedulers.parallel();
		TimeSource t = TimeSource.of(scheduler);
		this.time = t;
		long now = t.nanos();
		if (WIP.getAndIncrement(this) == 0) {
			// the decision loop's fields: taken like a decision, so a concurrent decide() waits its turn
			lastDecisionNanos = now;
			LoadState s = state;
			if (s.intervals() == 0) {
				state = LoadState.initial(s.mode(), s.subScores(), now);
			}
			WIP.decrementAndGet(this);
		}
		resizeLanes(state.level());
		Disposable scheduled = scheduler.schedulePeriodically(this::decideQuietly, intervalNanos, intervalNanos,
				TimeUnit.NANOSECONDS);
		this.task = scheduled;
		if (lifecycle == 2) {
			scheduled.dispose(); // disposed while starting
		}
		return this;
	}

	/** Stops the periodic decisions; recording and {@link #action(Priority)} keep working. */
	@Override
	public void dispose() {
		if (LIFECYCLE.getAndSet(this, 2) != 2) {
			Disposable t = task;
			if (t != null) {
				t.dispose();
			}
		}
	}

	@Override
	public boolean isDisposed() {
		return lifecycle == 2;
	}

	// ---- recording (hot path) ----

	/** One request of {@code priority} offered, admitted or shed: the offered load. */
	public void arrived(Priority priority) {
		arrivals[priority.ordinal()].increment();
	}

	/** A live attempt's first token arrived {@code ttftNanos} after it started. */
	public void firstToken(long ttftNanos) {
		firstTokens.increment();
		this.ttftNanos.add(Math.max(0L, ttftNanos));
	}

	/**
	 * A live attempt ended. {@link Outcome#SUCCESS} and the upstream faults ({@link Outcome#isUpstreamFault()})
	 * are attempts, the faults are failures; the other outcomes (cancelled, rejected, client errors)
	 * are not the service's doing and are not counted.
	 */
	public void ended(Outcome outcome) {
		if (outcome == Outcome.SUCCESS) {
			successes.increment();
		}
		else if (outcome.isUpstreamFault()) {
			failures.increment();
		}
	}

	// ---- reading ----

	/** @return how a request of {@code priority} is served at the current level; one volatile read */
	public LoadAction action(Priority priority) {
		return current[priority.ordinal()];
	}

	/** @return the current level */
	public LoadLevel level() {
		return state.level();
	}

	/** @return the last decision, immutable */
	public LoadState state() {
		return state;
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
	 * earliest time the governor can reach a level that serves {@code priority}: the rest of the
	 * dwell at the current level plus a dwell per further level (recovery goes one level at a time),
	 * at least one interval.
	 *
	 * @return a typed {@code SHED} rejection whose message names the governor, priority and level
	 */
	public AdmissionRejectedException shed(Priority priority) {
		LoadState s = state;
		LoadLevel level = s.level();
		long now = nanos();
		long remaining = Math.max(0L, dwellNanos - (now - s.levelSinceNanos()));
		int steps = 0;
		for (int l = level.ordinal(); l > 0 && refuses(actions[l][priority.ordinal()]); l--) {
			steps++;
		}
		long wait = remaining + Math.max(0, steps - 1) * dwellNanos;
		Duration retryAfter = Duration.ofNanos(Math.max(wait, intervalNanos));
		return new AdmissionRejectedException(priority, AdmissionRejectedException.Reason.SHED,
				name + ": " + priority + " shed at level " + level + " (" + actions[level.ordinal()][priority.ordinal()]
						+ "), retry after " + retryAfter.toMillis() + " ms",
				retryAfter);
	}

	private static boolean refuses(LoadAction action) {
		return action == LoadAction.SHED || action == LoadAction.STATIC_OR_SHED;
	}

	/**
	 * The governor as a Reactor operator, priority from the subscriber's Context ({@link Priority#P1}
	 * when absent). See {@link #admit(Priority)}.
	 */
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

	/** The governor's clock in nanoseconds; resolved on first use when {@link #start()} was not called. */
	long nanos() {
		TimeSource t = time;
		if (t == null) {
			t = TimeSource.of(clock != null ? clock : Schedulers.parallel());
			time = t;
		}
		return t.nanos();
	}

	// ---- deciding ----

	/**
	 * Makes one decision now from what was recorded since the previous one: what the timer runs
	 * every interval; tests and simulations may call it. Concurrent calls are serialised (a call
	 * that finds a decision running leaves its decision to that thread and returns at once).
	 *
	 * @return the state after the decisions made so far
	 */
	public LoadState decide() {
		if (WIP.getAndIncrement(this) != 0) {
			return state;
		}
		int missed = 1;
		do {
			try {
				decideOnce();
			}
			catch (Throwable failure) {
				Callbacks.dropped(failure);
			}
			missed = WIP.addAndGet(this, -missed);
		}
		while (missed != 0);
		return state;
	}

	private void decideQuietly() {
		decide();
	}

	private void decideOnce() {
		long now = nanos();
		long elapsed = lastDecisionNanos == UNSET || now - lastDecisionNanos <= 0 ? intervalNanos : now - lastDecisionNanos;
		lastDecisionNanos = now;
		IntervalStats stats = takeInterval(elapsed);

		double rate = stats.requestRate();
		forecaster.observe(rate);
		LoadState previous = state;
		long intervals = previous.intervals() + 1;
		LoadState.Mode mode = intervals > warmupIntervals && forecaster.ready()
				? LoadState.Mode.FORECAST : LoadState.Mode.COLD_START;

		double[] forecast = new double[horizon];
		double peakRate = 0.0;
		int peakAt = 1;
		for (int k = 1; k <= horizon; k++) {
			double f = Math.max(0.0, forecaster.forecast(k));
			forecast[k - 1] = f;
			if (f > peakRate) {
				peakRate = f;
				peakAt = k;
			}
		}
		double peak = peakRate / capacity;

		Map<String, Double> subScores = new LinkedHashMap<>();
		double weighted = 0.0;
		double weightSum = 0.0;
		String lowestName = null;
		double lowest = Double.POSITIVE_INFINITY;
		for (int i = 0; i < signals.length; i++) {
			double sub = subScore(signals[i], stats);
			subScores.put(signals[i].name(), sub);
			if (!Double.isNaN(sub)) {
				weighted += weights[i] * sub;
				weightSum += weights[i];
				if (sub < lowest) {
					lowest = sub;
					lowestName = signals[i].name();
				}
			}
		}
		double score = weightSum > 0.0 ? weighted / weightSum : Double.NaN;
		// the levels read the smoothed rate: one noisy interval must not cross a line on its own
		smoothedRate = Double.isNaN(smoothedRate) ? rate : smoothing * rate + (1.0 - smoothing) * smoothedRate;
		double load = smoothedRate / capacity;

		LoadLevel scoreLevel = scoreLevel(score);
		LoadLevel loadLevel = loadLevel(load);
		LoadLevel forecastLevel = mode == LoadState.Mode.FORECAST && peak >= overloadLine ? LoadLevel.WARNING
				: LoadLevel.HEALTHY;
		LoadLevel level = previous.level();
		LoadLevel target = worst(worst(scoreLevel, loadLevel), forecastLevel);

		LoadEvent event = null;
		if (target.isWorseThan(level)) {
			LoadEvent.Reason reason;
			String detail;
			if (scoreLevel == target) {
				reason = LoadEvent.Reason.SCORE;
				detail = String.format(Locale.ROOT, "%s=%.1f", lowestName, lowest);
			}
			else if (loadLevel == target) {
				reason = LoadEvent.Reason.LOAD;
				detail = String.format(Locale.ROOT, "load %.2f of capacity", load);
			}
			else {
				reason = LoadEvent.Reason.FORECAST;
				detail = String.format(Locale.ROOT, "forecast peak %.2f of capacity in %d intervals", peak, peakAt);
			}
			event = new LoadEvent(level, target, reason, detail, score, load, peak, now);
		}
		else if (level != LoadLevel.HEALTHY && now - previous.levelSinceNanos() >= dwellNanos
				&& mayLeave(level, score, load, forecastLevel)) {
			LoadLevel better = LEVELS[level.ordinal() - 1];
			String detail = String.format(Locale.ROOT, "score %.1f, load %.2f, forecast peak %.2f after %d ms at %s",
					score, load, peak, TimeUnit.NANOSECONDS.toMillis(now - previous.levelSinceNanos()), level);
			event = new LoadEvent(level, better, LoadEvent.Reason.RECOVERY, detail, score, load, peak, now);
		}

		LoadLevel decided = event == null ? level : event.to();
		long since = event == null ? previous.levelSinceNanos() : now;
		if (event != null) {
			current = actions[decided.ordinal()];
		}
		state = new LoadState(decided, mode, score, Collections.unmodifiableMap(subScores), load, rate, forecast, peak,
				since, intervals, event != null ? event : previous.lastChange(), stats);
		if (event != null) {
			announce(event);
		}
	}

	/** Reads the counters as deltas since the previous decision. */
	private IntervalStats takeInterval(long elapsedNanos) {
		long[] offered = new long[PRIORITIES.length];
		for (int p = 0; p < offered.length; p++) {
			long total = arrivals[p].sum();
			offered[p] = total - seenArrivals[p];
			seenArrivals[p] = total;
		}
		// the count before the sum: a first token between the two reads adds time without its count
		// to this interval at worst, never a count without time
		long tokensTotal = firstTokens.sum();
		long ttftTotal = ttftNanos.sum();
		long successTotal = successes.sum();
		long failureTotal = failures.sum();
		long tokens = tokensTotal - seenFirstTokens;
		long ttft = ttftTotal - seenTtftNanos;
		long success = successTotal - seenSuccesses;
		long failed = failureTotal - seenFailures;
		seenFirstTokens = tokensTotal;
		seenTtftNanos = ttftTotal;
		seenSuccesses = successTotal;
		seenFailures = failureTotal;
		return IntervalStats.measured(elapsedNanos, offered, tokens, ttft, success + failed, failed);
	}

	private static double subScore(HealthSignal signal, IntervalStats stats) {
		double value;
		try {
			value = signal.score(stats);
		}
		catch (Throwable failure) {
			Callbacks.dropped(failure);
			return Double.NaN;
		}
		if (Double.isNaN(value)) {
			return Double.NaN;
		}
		return Math.max(0.0, Math.min(100.0, value));
	}

	private LoadLevel scoreLevel(double score) {
		if (Double.isNaN(score)) {
			return LoadLevel.HEALTHY;
		}
		for (int l = LEVELS.length - 1; l > 0; l--) {
			if (score < scoreThresholds[l - 1]) {
				return LEVELS[l];
			}
		}
		return LoadLevel.HEALTHY;
	}

	private LoadLevel loadLevel(double load) {
		for (int l = LEVELS.length - 1; l > 0; l--) {
			if (load >= loadThresholds[l - 1]) {
				return LEVELS[l];
			}
		}
		return LoadLevel.HEALTHY;
	}

	/** Hysteresis: leaving {@code level} needs every input clear of the line that entered it, with margin. */
	private boolean mayLeave(LoadLevel level, double score, double load, LoadLevel forecastLevel) {
		int i = level.ordinal() - 1;
		boolean scoreAllows = Double.isNaN(score) || score >= Math.min(scoreThresholds[i] + SCORE_MARGIN, 100.0);
		boolean loadAllows = load < loadThresholds[i] * recoveryRatio;
		boolean forecastAllows = forecastLevel.compareTo(LEVELS[i]) <= 0;
		return scoreAllows && loadAllows && forecastAllows;
	}

	private static LoadLevel worst(LoadLevel a, LoadLevel b) {
		return a.isWorseThan(b) ? a : b;
	}

	private void announce(LoadEvent event) {
		resizeLanes(event.to());
		metrics.loadLevelChanged(name, event.from().name(), event.to().name(), event.reason().name());
		for (LoadListener listener : listeners) {
			try {
				listener.levelChanged(event);
			}
			catch (Throwable failure) {
				Callbacks.dropped(failure);
			}
		}
	}

	private void resizeLanes(LoadLevel level) {
		PriorityLanes l = lanes;
		if (l == null) {
			return;
		}
		int[] sizes = laneSizes(level);
		for (Priority p : PRIORITIES) {
			try {
				l.resize(p, sizes[p.ordinal()]);
			}
			catch (Throwable failure) {
				Callbacks.dropped(failure);
			}
		}
	}

	/** The lanes' sizes at {@code level}, by priority, from their built sizes. */
	int[] laneSizes(LoadLevel level) {
		int[] sizes = new int[PRIORITIES.length];
		for (Priority p : PRIORITIES) {
			sizes[p.ordinal()] = rules.laneSize(level, p, laneBase[p.ordinal()]);
		}
		if (laneResizing == LaneResizing.KEEP_TOTAL) {
			// from the least urgent lane up, so what a closed lane passes on was decided by the rules alone
			int[] scaled = sizes.clone();
			for (int p = PRIORITIES.length - 1; p > 0; p--) {
				int taken = laneBase[p] - scaled[p];
				if (taken <= 0) {
					continue;
				}
				for (int q = p - 1; q >= 0; q--) {
					if (scaled[q] > 0) {
						sizes[q] += taken;
						break;
					}
				}
			}
		}
		return sizes;
	}

	private void registerGauges() {
		Map<String, DoubleSupplier> subScores = new LinkedHashMap<>();
		for (HealthSignal s : signals) {
			String signal = s.name();
			subScores.put(signal, () -> {
				Double v = state.subScores().get(signal);
				return v == null ? Double.NaN : v;
			});
		}
		metrics.loadGovernorCreated(name, () -> state.level().ordinal(), () -> state.score(), () -> state.load(),
				() -> state.forecastPeak(), Collections.unmodifiableMap(subScores));
	}

	@Override
	public String toString() {
		return "LoadGovernor{" + name + ", " + state.level() + '}';
	}

	/** A signal and its weight, as registered. */
	private static final class WeightedSignal {

		final HealthSignal signal;
		final double weight;

		WeightedSignal(HealthSignal signal, double weight) {
			this.signal = signal;
			this.weight = weight;
		}
	}

	/**
	 * Configures a {@link LoadGovernor}. Each setter checks its own value; {@link #build()} checks
	 * the values against each other. Every error is an {@link IllegalArgumentException} naming the
	 * field and the value.
	 */
	public static final class Builder {

		private final String name;
		private double capacity = Double.NaN;
		private Duration interval = Duration.ofSeconds(1);
		@Nullable
		private Scheduler clock;
		private Supplier<? extends Forecaster> forecaster = () -> Holt.of(0.3, 0.1);
		private int horizon = 5;
		private double overloadLine = 0.85;
		private double degradeAt = 0.8;
		private double recoverBelow = 0.6;
		private double degradedAt = Double.POSITIVE_INFINITY;
		private double criticalAt = Double.POSITIVE_INFINITY;
		private double smoothing = 0.3;
		private double[] scoreThresholds = {80.0, 60.0, 40.0};
		private Duration dwell = Duration.ofSeconds(30);
		private int warmupIntervals = 10;
		private final LinkedHashMap<String, WeightedSignal> signals = new LinkedHashMap<>();
		private LoadRules rules = LoadRules.defaults();
		@Nullable
		private PriorityLanes lanes;
		private LaneResizing laneResizing = LaneResizing.KEEP_TOTAL;
		private final List<LoadListener> listeners = new ArrayList<>();
		private GuardMetrics metrics = GuardMetrics.noop();

		private Builder(String name) {
			if (name == null || name.isBlank()) {
				throw new IllegalArgumentException("name must not be blank, was '" + name + "'");
			}
			this.name = name;
			signal(HealthSignals.cpu(), 0.20);
			signal(HealthSignals.memory(), 0.15);
			signal(HealthSignals.responseTime(), 0.35);
			signal(HealthSignals.errorRate(), 0.30);
		}

		/** Required: requests per second the service sustains, > 0. */
		public Builder capacity(double requestsPerSecond) {
			if (!(requestsPerSecond > 0.0) || Double.isInfinite(requestsPerSecond)) {
				throw new IllegalArgumentException("capacity must be a finite number > 0, was " + requestsPerSecond);
			}
			this.capacity = requestsPerSecond;
			return this;
		}

		/** Time between decisions, > 0 (default 1 s). */
		public Builder interval(Duration interval) {
			Objects.requireNonNull(interval, "interval");
			if (interval.isNegative() || interval.isZero()) {
				throw new IllegalArgumentException("interval must be > 0, was " + interval);
			}
			this.interval = interval;
			return this;
		}

		/**
		 * The Scheduler that runs the decisions and gives the time. Default {@link Schedulers#parallel()},
		 * looked up at {@link LoadGovernor#start()} so a virtual-time scheduler installed before it applies.
		 */
		public Builder clock(Scheduler clock) {
			this.clock = Objects.requireNonNull(clock, "clock");
			return this;
		}

		/** The forecaster of the request rate, one per governor (default {@code Holt.of(0.3, 0.1)}). */
		public Builder forecaster(Supplier<? extends Forecaster> forecaster) {
			this.forecaster = Objects.requireNonNull(forecaster, "forecaster");
			return this;
		}

		/** Intervals forecast ahead, >= 1 (default 5). */
		public Builder horizon(int intervals) {
			if (intervals < 1) {
				throw new IllegalArgumentException("horizon must be >= 1, was " + intervals);
			}
			this.horizon = intervals;
			return this;
		}

		/** Forecast peak ÷ capacity from which the level is at least WARNING, > 0 (default 0.85). */
		public Builder overloadLine(double shareOfCapacity) {
			requirePositive("overloadLine", shareOfCapacity);
			this.overloadLine = shareOfCapacity;
			return this;
		}

		/** Load entering WARNING, > 0 (default 0.8); the first of {@link #loadThresholds}. */
		public Builder degradeAt(double load) {
			requirePositive("degradeAt", load);
			this.degradeAt = load;
			return this;
		}

		/**
		 * Load under which WARNING is left, > 0 and below {@code degradeAt} (default 0.6). Every level
		 * is left below its threshold × {@code recoverBelow ÷ degradeAt}.
		 */
		public Builder recoverBelow(double load) {
			requirePositive("recoverBelow", load);
			this.recoverBelow = load;
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
			requirePositive("loadThresholds.warning", warning);
			requirePositiveOrInfinite("loadThresholds.degraded", degraded);
			requirePositiveOrInfinite("loadThresholds.critical", critical);
			this.degradeAt = warning;
			this.degradedAt = degraded;
			this.criticalAt = critical;
			return this;
		}

		/** Health scores under which WARNING, DEGRADED and CRITICAL hold, decreasing, in (0, 100] (default 80, 60, 40). */
		public Builder scoreThresholds(double warning, double degraded, double critical) {
			requireScore("scoreThresholds.warning", warning);
			requireScore("scoreThresholds.degraded", degraded);
			requireScore("scoreThresholds.critical", critical);
			this.scoreThresholds = new double[] {warning, degraded, critical};
			return this;
		}

		/** Minimum time at a level before recovering from it, >= 0 (default 30 s). */
		public Builder dwell(Duration dwell) {
			Objects.requireNonNull(dwell, "dwell");
			if (dwell.isNegative()) {
				throw new IllegalArgumentException("dwell must be >= 0, was " + dwell);
			}
			this.dwell = dwell;
			return this;
		}

		/** Decisions on static thresholds before the forecast takes part, >= 0 (default 10). */
		public Builder warmupIntervals(int intervals) {
			if (intervals < 0) {
				throw new IllegalArgumentException("warmupIntervals must be >= 0, was " + intervals);
			}
			this.warmupIntervals = intervals;
			return this;
		}

		/**
		 * Adds a sub-score, or replaces the one of the same name in its place.
		 *
		 * @param weight its weight, a finite number > 0 (weights are renormalised over the signals with data)
		 */
		public Builder signal(HealthSignal signal, double weight) {
			Objects.requireNonNull(signal, "signal");
			String signalName = Objects.requireNonNull(signal.name(), "signal.name()");
			if (!(weight > 0.0) || Double.isInfinite(weight)) {
				throw new IllegalArgumentException("weight of signal '" + signalName + "' must be a finite number > 0, was "
						+ weight);
			}
			signals.put(signalName, new WeightedSignal(signal, weight));
			return this;
		}

		/** Removes the sub-score named {@code signalName} (e.g. a default: cpu, memory, response-time, error-rate). */
		public Builder withoutSignal(String signalName) {
			Objects.requireNonNull(signalName, "signalName");
			if (signals.remove(signalName) == null) {
				throw new IllegalArgumentException("withoutSignal: no signal named '" + signalName + "', signals are "
						+ signals.keySet());
			}
			return this;
		}

		/** Level × priority → action and lane factor (default {@link LoadRules#defaults()}). */
		public Builder rules(LoadRules rules) {
			this.rules = Objects.requireNonNull(rules, "rules");
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

		/**
		 * Lanes whose concurrency follows the rules' factors of their built sizes at each level
		 * change; {@code resizing} says where the permits a factor takes go
		 * ({@link LaneResizing#KEEP_TOTAL}: to the nearest more urgent open lane).
		 */
		public Builder lanes(PriorityLanes lanes, LaneResizing resizing) {
			this.lanes = Objects.requireNonNull(lanes, "lanes");
			this.laneResizing = Objects.requireNonNull(resizing, "resizing");
			return this;
		}

		/** Adds a listener of level changes (non-blocking; what it throws is dropped). */
		public Builder listener(LoadListener listener) {
			listeners.add(Objects.requireNonNull(listener, "listener"));
			return this;
		}

		/** Where the gauges {@code aiguard.load.*} and the level-change counter are reported. */
		public Builder metrics(GuardMetrics metrics) {
			this.metrics = Objects.requireNonNull(metrics, "metrics");
			return this;
		}

		/**
		 * @throws IllegalArgumentException when capacity is missing, the load thresholds do not
		 *         increase, recoverBelow is not below degradeAt, or the score thresholds do not decrease
		 */
		public LoadGovernor build() {
			if (Double.isNaN(capacity)) {
				throw new IllegalArgumentException("capacity is required (requests per second the service sustains), was "
						+ "not set");
			}
			boolean bothOff = Double.isInfinite(degradedAt) && Double.isInfinite(criticalAt);
			if (!(degradeAt < degradedAt && (degradedAt < criticalAt || bothOff))) {
				throw new IllegalArgumentException("loadThresholds must increase (warning < degraded < critical), were "
						+ degradeAt + ", " + degradedAt + ", " + criticalAt);
			}
			if (!(recoverBelow < degradeAt)) {
				throw new IllegalArgumentException("recoverBelow must be < degradeAt (" + degradeAt + "), was "
						+ recoverBelow);
			}
			if (!(scoreThresholds[0] > scoreThresholds[1] && scoreThresholds[1] > scoreThresholds[2])) {
				throw new IllegalArgumentException("scoreThresholds must decrease (warning > degraded > critical), were "
						+ scoreThresholds[0] + ", " + scoreThresholds[1] + ", " + scoreThresholds[2]);
			}
			Forecaster f = Objects.requireNonNull(forecaster.get(), "forecaster.get()");
			return new LoadGovernor(this, f);
		}

		private static void requirePositive(String field, double value) {
			if (!(value > 0.0) || Double.isInfinite(value)) {
				throw new IllegalArgumentException(field + " must be a finite number > 0, was " + value);
			}
		}

		private static void requirePositiveOrInfinite(String field, double value) {
			if (!(value > 0.0)) {
				throw new IllegalArgumentException(field + " must be > 0 (or infinite: off), was " + value);
			}
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
			if (!(alpha > 0.0 && alpha <= 1.0)) {
				throw new IllegalArgumentException("loadSmoothing must be in (0, 1], was " + alpha);
			}
			this.smoothing = alpha;
			return this;
		}

		private static void requireScore(String field, double value) {
			if (!(value > 0.0 && value <= 100.0)) {
				throw new IllegalArgumentException(field + " must be in (0, 100], was " + value);
			}
		}
	}
}
