package dev.aiguard.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.load.HealthSignal;
import dev.aiguard.load.IntervalStats;
import dev.aiguard.load.LaneResizing;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.load.LoadLevel;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Does the load governor keep interactive (P0) answers fast and successful when the offered load
 * rises beyond what the model sustains, without wasting the model's capacity? Seven admission setups
 * see the same traffic, all in virtual time (deterministic figures):
 *
 * <ol>
 * <li>no governor: every request goes to the model;</li>
 * <li>static thresholds: a token bucket at the model's sustainable rate plus a fixed CPU limit,
 * blind to priority (what a plain rate limiter with CPU load shedding does);</li>
 * <li>Netflix concurrency-limits' {@code Gradient2Limit} behind a {@code SimpleLimiter}: an
 * adaptive concurrency limit learnt from round-trip times, blind to priority (the peer
 * anchor);</li>
 * <li>{@link PriorityLanes} alone, their permits a partition of the model's streams (see
 * {@link #lanes(Run)});</li>
 * <li>the load governor with its defaults in front of the same lanes, which it resizes, with the
 * forecast's say removed (reactive levels only);</li>
 * <li>the same with the forecast (the default Holt);</li>
 * <li>row 6 with {@link LaneResizing#SCALE}: the permits a level takes from a lane are dropped
 * instead of going to the nearest more urgent open lane (the default, {@code KEEP_TOTAL}).</li>
 * </ol>
 *
 * The governor rows are driven as the guard drives the governor ({@link Governed}).
 *
 * The model serves {@value #STREAMS} streams at full speed; beyond that its time to first token
 * grows with the square of the excess and it fails a growing share of requests (see
 * {@link Run#live}). The traffic has four phases: a steady load with ±5 % noise, a compressed
 * day, a ramp from 0.5× to 3× capacity, and a sudden spike to 3×; 10 % of it is P0, 30 % P1,
 * 60 % P2. Every arrival, priority, model time, error draw and cache draw is generated once from
 * seeded streams and replayed in every setup (common random numbers), so the setups differ by
 * admission alone.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.LoadGovernorSimulation}
 */
public final class LoadGovernorSimulation {

	// ---- the model ----
	static final int STREAMS = 64;
	static final double TTFT_MEDIAN_MS = 250;
	static final double TTFT_SIGMA = 0.3;
	static final int TOKENS = 50;
	static final long TOKEN_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
	static final long DECODE_NANOS = TOKENS * TOKEN_INTERVAL_NANOS;
	/** TTFT multiplier 1 + SLOWDOWN * x^2, x = streams / STREAMS - 1 when above capacity. */
	static final double SLOWDOWN = 8.0;
	/** Failure probability min(ERROR_CAP, ERROR_SLOPE * x) above capacity. */
	static final double ERROR_SLOPE = 0.8;
	static final double ERROR_CAP = 0.9;
	/** The client gives up on a first token after this long (the guard's first-token timeout). */
	static final long FIRST_TOKEN_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);
	static final double MEAN_SERVICE_S = (TTFT_MEDIAN_MS * Math.exp(TTFT_SIGMA * TTFT_SIGMA / 2)) / 1000
			+ DECODE_NANOS / 1e9;
	/** Requests per second the model sustains at full speed. */
	static final double CAPACITY = STREAMS / MEAN_SERVICE_S;
	/** Simulated CPU of the service: proportional to the streams it relays, 50 % at the model's capacity. */
	static final double CPU_FULL_AT_STREAMS = 2.0 * STREAMS;

	// ---- the traffic ----
	static final double[] PRIORITY_SHARE = { 0.10, 0.30, 0.60 };
	static final double NOISE = 0.05;
	static final int STEADY_S = 600;
	static final double STEADY_LOAD = 0.7;
	static final int DAY_S = 24 * 60;
	static final int RAMP_S = 480;
	static final int RAMP_FLAT_S = 60;
	static final int RAMP_RISE_S = 120;
	static final int RAMP_HOLD_S = 180;
	static final int SPIKE_S = 360;
	static final int DAY_FROM = STEADY_S;
	static final int RAMP_FROM = DAY_FROM + DAY_S;
	static final int RAMP_RISE_FROM = RAMP_FROM + RAMP_FLAT_S;
	static final int RAMP_HOLD_TO = RAMP_RISE_FROM + RAMP_RISE_S + RAMP_HOLD_S;
	static final int SPIKE_FROM = RAMP_FROM + RAMP_S;
	static final int TOTAL_S = SPIKE_FROM + SPIKE_S;
	static final int DRAIN_S = 30;
	/** Level changes are counted in the steady phase after the governor's cold start. */
	static final int STEADY_COUNT_FROM_S = 60;
	static final long TRAFFIC_SEED = 20_250_611L;
	static final long MODEL_SEED = 4_242L;

	// ---- static thresholds ----
	static final double STATIC_CPU_LIMIT = 60.0;
	static final double STATIC_BURST = STREAMS / 4.0;

	// ---- Gradient2, set for this model (the library's defaults assume min 20, max 200) ----
	static final int G2_INITIAL = STREAMS;
	static final int G2_MIN = STREAMS / 8;
	static final int G2_MAX = STREAMS * 4;

	// ---- the lanes (rows 4 to 7): a partition of the model's streams ----
	static final int LANE_P0 = STREAMS / 2;
	static final int LANE_P1 = STREAMS / 4;
	static final int LANE_P2 = STREAMS - LANE_P0 - LANE_P1;
	static final Duration P0_WAIT = Duration.ofSeconds(1);
	static final Duration LOWER_WAIT = Duration.ofSeconds(2);

	// ---- the governor's fallback ladder ----
	/** Share of the requests the cache or a lightweight answer serves under CHEAPER_FIRST. */
	static final double CACHE_HIT_RATIO = 0.30;
	static final long CACHE_SEED = 777L;

	static final long SECOND = TimeUnit.SECONDS.toNanos(1);
	static final Priority[] PRIORITIES = Priority.values();

	public static void main(String[] args) {
		Traffic traffic = Traffic.generate();
		System.out.printf(Locale.ROOT,
				"model: %d streams at full speed; TTFT log-normal median %.0f ms sigma %.1f, %d tokens every %d ms "
						+ "(mean service %.0f ms) -> capacity %.1f requests/s%n",
				STREAMS, TTFT_MEDIAN_MS, TTFT_SIGMA, TOKENS, TOKEN_INTERVAL_NANOS / 1_000_000, MEAN_SERVICE_S * 1000,
				CAPACITY);
		System.out.printf(Locale.ROOT,
				"above %d streams (x = streams/%d - 1): TTFT x (1 + %.0f x^2), failure probability min(%.1f, %.1f x); "
						+ "first-token timeout %d s%n",
				STREAMS, STREAMS, SLOWDOWN, ERROR_CAP, ERROR_SLOPE, FIRST_TOKEN_TIMEOUT_NANOS / SECOND);
		System.out.printf(Locale.ROOT,
				"traffic (x capacity, +-%.0f%% noise per second, Poisson): steady %.1f for %d s; a day of %d s "
						+ "(1 min per hour, %.2f..%.2f); ramp %.1f -> 3.0 in %d s, held %d s; spike %.1f -> 3.0 for "
						+ "120 s; P0 %.0f%% P1 %.0f%% P2 %.0f%%; %d requests%n%n",
				NOISE * 100, STEADY_LOAD, STEADY_S, DAY_S, dayShape(2 * 60), dayShape(14 * 60), 0.5, RAMP_RISE_S,
				RAMP_HOLD_S, 0.6, PRIORITY_SHARE[0] * 100, PRIORITY_SHARE[1] * 100, PRIORITY_SHARE[2] * 100,
				traffic.size());

		List<Result> results = new ArrayList<>();
		for (Setup setup : Setup.values()) {
			results.add(new Run(traffic, setup).execute());
		}
		print(traffic, results);
	}

	// ------------------------------------------------------------------------------------------
	// traffic

	/** Scheduled load (× capacity, before noise) in second {@code s} of the run. */
	static double shape(int s) {
		if (s < DAY_FROM) {
			return STEADY_LOAD;
		}
		if (s < RAMP_FROM) {
			return dayShape(s - DAY_FROM);
		}
		if (s < SPIKE_FROM) {
			int u = s - RAMP_FROM;
			if (u < RAMP_FLAT_S) {
				return 0.5;
			}
			if (u < RAMP_FLAT_S + RAMP_RISE_S) {
				return 0.5 + 2.5 * (u - RAMP_FLAT_S) / (double) RAMP_RISE_S;
			}
			return u < RAMP_FLAT_S + RAMP_RISE_S + RAMP_HOLD_S ? 3.0 : 0.5;
		}
		int u = s - SPIKE_FROM;
		return u >= 60 && u < 180 ? 3.0 : 0.6;
	}

	/** The overloaded phase second {@code s} belongs to: 0 the day, 1 the ramp, 2 the spike. */
	static int phase(int s) {
		return s < RAMP_FROM ? 0 : s < SPIKE_FROM ? 1 : 2;
	}

	/** One day compressed to one minute per hour: lowest at 02:00, highest at 14:00. */
	static double dayShape(int secondOfDay) {
		double hour = secondOfDay / 60.0;
		return 0.55 + 0.5 * Math.sin(2 * Math.PI * (hour - 8) / 24);
	}

	/**
	 * Every request of the run, generated once: arrival time, priority, the model's unloaded time to
	 * first token, a uniform draw that decides a failure when the model is overloaded, and one that
	 * decides whether the cache has an answer for it.
	 */
	static final class Traffic {

		final long[] at;
		final byte[] priority;
		final long[] baseTtft;
		final double[] failureDraw;
		final double[] cacheDraw;
		final double[] load;

		private Traffic(long[] at, byte[] priority, long[] baseTtft, double[] failureDraw, double[] cacheDraw,
				double[] load) {
			this.at = at;
			this.priority = priority;
			this.baseTtft = baseTtft;
			this.failureDraw = failureDraw;
			this.cacheDraw = cacheDraw;
			this.load = load;
		}

		static Traffic generate() {
			SplittableRandom arrivals = new SplittableRandom(TRAFFIC_SEED);
			SplittableRandom model = new SplittableRandom(MODEL_SEED);
			int estimate = (int) (CAPACITY * TOTAL_S * 1.2);
			long[] at = new long[estimate];
			byte[] priority = new byte[estimate];
			long[] baseTtft = new long[estimate];
			double[] failureDraw = new double[estimate];
			double[] load = new double[TOTAL_S];
			int n = 0;
			for (int s = 0; s < TOTAL_S; s++) {
				load[s] = shape(s) * (1 + NOISE * (2 * arrivals.nextDouble() - 1));
				double ratePerNano = load[s] * CAPACITY / SECOND;
				// Poisson within the second; restarting the gap at the boundary is exact (memoryless)
				long t = s * SECOND + exponential(arrivals, ratePerNano);
				while (t < (s + 1) * SECOND) {
					if (n == at.length) {
						int grown = at.length * 3 / 2;
						at = Arrays.copyOf(at, grown);
						priority = Arrays.copyOf(priority, grown);
						baseTtft = Arrays.copyOf(baseTtft, grown);
						failureDraw = Arrays.copyOf(failureDraw, grown);
					}
					at[n] = t;
					double p = arrivals.nextDouble();
					priority[n] = (byte) (p < PRIORITY_SHARE[0] ? 0 : p < PRIORITY_SHARE[0] + PRIORITY_SHARE[1] ? 1 : 2);
					baseTtft[n] = (long) (TTFT_MEDIAN_MS * 1e6 * Math.exp(TTFT_SIGMA * gaussian(model)));
					failureDraw[n] = model.nextDouble();
					n++;
					t += exponential(arrivals, ratePerNano);
				}
			}
			// a stream of its own, so the other draws are those of a run without a cache
			SplittableRandom cache = new SplittableRandom(CACHE_SEED);
			double[] cacheDraw = new double[n];
			for (int i = 0; i < n; i++) {
				cacheDraw[i] = cache.nextDouble();
			}
			return new Traffic(Arrays.copyOf(at, n), Arrays.copyOf(priority, n), Arrays.copyOf(baseTtft, n),
					Arrays.copyOf(failureDraw, n), cacheDraw, load);
		}

		int size() {
			return at.length;
		}

		static long exponential(SplittableRandom random, double ratePerNano) {
			return (long) (-Math.log(1.0 - random.nextDouble()) / ratePerNano);
		}

		static double gaussian(SplittableRandom random) {
			double u1 = 1.0 - random.nextDouble();
			double u2 = random.nextDouble();
			return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
		}

		/** Whether second {@code s} is scheduled above the model's capacity. */
		static boolean overloaded(int s) {
			return s >= 0 && s < TOTAL_S && shape(s) > 1.0;
		}
	}

	// ------------------------------------------------------------------------------------------
	// setups

	enum Setup {
		NONE("1 no governor", Unguarded::new),
		STATIC("2 static thresholds", StaticThresholds::new),
		GRADIENT2("3 Gradient2 (Netflix)", Gradient2Admission::new),
		LANES("4 lanes only", LanesOnly::new),
		REACTIVE("5 governor+lanes, reactive", run -> new Governed(run, false, LaneResizing.KEEP_TOTAL)),
		FULL("6 governor+lanes, full", run -> new Governed(run, true, LaneResizing.KEEP_TOTAL)),
		SCALE("7 = 6 with SCALE lanes", run -> new Governed(run, true, LaneResizing.SCALE));

		final String label;
		final Function<Run, Admission> admission;

		Setup(String label, Function<Run, Admission> admission) {
			this.label = label;
			this.admission = admission;
		}
	}

	/** How one setup routes a request: to the model (through lanes or not), to a cheaper answer, or refused. */
	interface Admission {

		/** A request arrived; route it through the {@link Run}. */
		void offer(int request, Priority priority);

		/** @return the setup's load level (0 = best) after its last decision, or null when it has none */
		default @Nullable Integer severity() {
			return null;
		}

		default void dispose() {
		}
	}

	/** How a live model attempt ended. */
	enum End {
		SUCCESS,
		/** The model failed it (overloaded). */
		FAILURE,
		/** No first token within the first-token timeout. */
		TIMEOUT,
		/** A lane took its permit back for a more urgent request. */
		PREEMPTED
	}

	/** Callbacks of one live model attempt. */
	interface Attempt {

		/** @param ttftNanos time to first token from the attempt's start */
		void firstToken(long ttftNanos);

		void ended(End end);
	}

	static final Attempt NO_CALLBACKS = new Attempt() {
		@Override
		public void firstToken(long ttftNanos) {
		}

		@Override
		public void ended(End end) {
		}
	};

	static final class Unguarded implements Admission {

		final Run run;

		Unguarded(Run run) {
			this.run = run;
		}

		@Override
		public void offer(int request, Priority priority) {
			run.live(request, NO_CALLBACKS);
		}
	}

	/**
	 * A token bucket refilled at the model's sustainable rate (burst of a quarter of its streams)
	 * and a fixed CPU limit, checked on the CPU of the last second; blind to priority.
	 */
	static final class StaticThresholds implements Admission {

		final Run run;
		double tokens = STATIC_BURST;
		long refilledAt;
		double cpu;

		StaticThresholds(Run run) {
			this.run = run;
			CpuMeter meter = run.newCpuMeter();
			run.clock.schedulePeriodically(() -> cpu = meter.take(), SECOND, SECOND, TimeUnit.NANOSECONDS);
		}

		@Override
		public void offer(int request, Priority priority) {
			long now = run.now();
			tokens = Math.min(STATIC_BURST, tokens + (now - refilledAt) * CAPACITY / SECOND);
			refilledAt = now;
			if (cpu >= STATIC_CPU_LIMIT || tokens < 1.0) {
				run.shed(request);
				return;
			}
			tokens -= 1.0;
			run.live(request, NO_CALLBACKS);
		}
	}

	/**
	 * Netflix's Gradient2 limit enforced by its SimpleLimiter on the simulation's clock. A permit is
	 * held for the whole stream (acquired before the call, settled when it ends: success, or
	 * dropped on a failure or timeout), so the round-trip time it learns from is the stream's.
	 */
	static final class Gradient2Admission implements Admission {

		final Run run;
		final Limiter<Priority> limiter;

		Gradient2Admission(Run run) {
			this.run = run;
			Gradient2Limit limit = Gradient2Limit.newBuilder()
					.initialLimit(G2_INITIAL)
					.minLimit(G2_MIN)
					.maxConcurrency(G2_MAX)
					.build();
			this.limiter = SimpleLimiter.newBuilder()
					.named("simulation")
					.limit(limit)
					.nanoClock(run::now)
					.build();
		}

		@Override
		public void offer(int request, Priority priority) {
			Optional<Limiter.Listener> permit = limiter.acquire(priority);
			if (permit.isEmpty()) {
				run.shed(request);
				return;
			}
			Limiter.Listener listener = permit.get();
			run.live(request, new Attempt() {
				@Override
				public void firstToken(long ttftNanos) {
				}

				@Override
				public void ended(End end) {
					if (end == End.SUCCESS) {
						listener.onSuccess();
					}
					else {
						listener.onDropped();
					}
				}
			});
		}
	}

	/**
	 * {@link PriorityLanes} sized to the model's streams in front of it, no governor: the lanes
	 * bound the model's concurrency and decide by priority who waits.
	 */
	static final class LanesOnly implements Admission {

		final Run run;
		final PriorityLanes lanes;

		LanesOnly(Run run) {
			this.run = run;
			this.lanes = lanes(run);
		}

		@Override
		public void offer(int request, Priority priority) {
			run.liveThroughLanes(request, priority, lanes, NO_CALLBACKS);
		}

		@Override
		public void dispose() {
			lanes.dispose();
		}
	}

	/**
	 * The lanes every governed row uses, their sizes a partition of the model's {@value #STREAMS}
	 * streams: P0 holds half of them, reserved for interactive work, and lends what it does not
	 * use to the other lanes, taking it back by preemption when a P0 request finds nothing free;
	 * P1 lends its idle permits to P2 without preemption (a batch stream is not thrown away for
	 * a P1 request that can wait a moment); P2 only borrows. P0 waits in its queue at most
	 * {@link #P0_WAIT}, P1 and P2 at most {@link #LOWER_WAIT}; a longer wait, or a full queue
	 * (256), refuses the request.
	 */
	static PriorityLanes lanes(Run run) {
		return PriorityLanes.builder()
				.name("simulation")
				.timer(run.clock)
				.lane(Priority.P0, LaneSpec.of(LANE_P0).maxQueueWait(P0_WAIT).lendToLower(1.0).preemptBorrowers(true))
				.lane(Priority.P1, LaneSpec.of(LANE_P1).maxQueueWait(LOWER_WAIT).lendToLower(1.0))
				.lane(Priority.P2, LaneSpec.of(LANE_P2).maxQueueWait(LOWER_WAIT))
				.build();
	}

	/**
	 * The load governor with its defaults (interval 1 s, Holt(0.3, 0.1), horizon 5, overload line
	 * 0.85, load thresholds 0.8/∞/∞ smoothed at 0.3, score thresholds 80/60/40, dwell 30 s, the
	 * default rules) in front of the lanes it resizes ({@code .lanes(lanes)}), driven the way the
	 * guard drives it (see docs/guard.md, "Load governor inside the guard"): every request is one
	 * arrival; its priority's action decides the path —
	 * <ul>
	 * <li>{@code REALTIME}: the lanes, then the model;</li>
	 * <li>{@code CHEAPER_FIRST}: the cache or a lightweight answer, which has one for
	 * {@link #CACHE_HIT_RATIO} of the requests; a miss goes on to the lanes and the model;</li>
	 * <li>{@code FALLBACK_FIRST}: a fallback model answers (another model: not the primary's
	 * goodput);</li>
	 * <li>{@code STATIC_OR_SHED} (the ladder has no static step) and {@code SHED}: refused before
	 * any lane or model.</li>
	 * </ul>
	 * Each live attempt reports, when it ends, its time to first token (when one came) and its
	 * outcome: {@code SUCCESS}, {@code FAILURE} (the model failed it), {@code STALLED} (no first
	 * token within the first-token timeout), {@code REJECTED} (preempted by the lanes: not counted).
	 * A lane's refusal never reaches the model and reports nothing. The JVM's CPU signal is replaced
	 * by the simulated CPU and the memory signal is dropped, so the figures repeat.
	 *
	 * <p>The reactive variant is the same governor with the forecast's say removed: an overload
	 * line no forecast reaches, so only the smoothed load and the health score set the level.
	 */
	static final class Governed implements Admission {

		final Run run;
		final LoadGovernor governor;
		final PriorityLanes lanes;

		Governed(Run run, boolean forecast, LaneResizing resizing) {
			this.run = run;
			this.lanes = lanes(run);
			LoadGovernor.Builder builder = LoadGovernor.builder(forecast ? "full" : "reactive")
					.capacity(CAPACITY)
					.clock(run.clock)
					.withoutSignal("memory")
					.signal(new SimulatedCpu(run.newCpuMeter()), 0.20)
					.lanes(lanes, resizing);
			if (!forecast) {
				builder.overloadLine(Double.MAX_VALUE);
			}
			this.governor = builder.build();
			governor.start();
		}

		@Override
		public void offer(int request, Priority priority) {
			governor.arrived(priority);
			switch (governor.action(priority)) {
				case REALTIME:
					live(request, priority);
					break;
				case CHEAPER_FIRST:
					if (run.traffic.cacheDraw[request] < CACHE_HIT_RATIO) {
						run.cheap(request);
					}
					else {
						live(request, priority);
					}
					break;
				case FALLBACK_FIRST:
					run.fallback(request);
					break;
				default:
					run.shed(request);
			}
		}

		private void live(int request, Priority priority) {
			run.liveThroughLanes(request, priority, lanes, new Attempt() {
				long ttft = -1L;

				@Override
				public void firstToken(long ttftNanos) {
					ttft = ttftNanos;
				}

				@Override
				public void ended(End end) {
					// as the guard's ledger does: both when the attempt ends
					if (ttft >= 0L) {
						governor.firstToken(ttft);
					}
					governor.ended(outcome(end));
				}
			});
		}

		static Outcome outcome(End end) {
			switch (end) {
				case SUCCESS:
					return Outcome.SUCCESS;
				case FAILURE:
					return Outcome.FAILURE;
				case TIMEOUT:
					return Outcome.STALLED;
				default:
					return Outcome.REJECTED;
			}
		}

		@Override
		public Integer severity() {
			return governor.level().ordinal();
		}

		@Override
		public void dispose() {
			governor.dispose();
			lanes.dispose();
		}
	}

	/** The simulated CPU as the governor's {@code cpu} signal: 100 − CPU % over the interval. */
	static final class SimulatedCpu implements HealthSignal {

		final CpuMeter meter;

		SimulatedCpu(CpuMeter meter) {
			this.meter = meter;
		}

		@Override
		public String name() {
			return "cpu";
		}

		@Override
		public double score(IntervalStats interval) {
			return 100.0 - meter.take();
		}
	}

	// ------------------------------------------------------------------------------------------
	// one run

	/** Time-weighted mean of the model's streams since the last {@link #take()}, as CPU %. */
	static final class CpuMeter {

		final Run run;
		double areaAtMark;
		long markAt;

		CpuMeter(Run run) {
			this.run = run;
		}

		double take() {
			long now = run.now();
			double area = run.streamArea();
			double mean = now == markAt ? run.streams : (area - areaAtMark) / (now - markAt);
			areaAtMark = area;
			markAt = now;
			return Math.min(100.0, 100.0 * mean / CPU_FULL_AT_STREAMS);
		}
	}

	/** One setup over the whole traffic, on its own virtual clock. */
	static final class Run {

		final Traffic traffic;
		final Setup setup;
		final VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		final Admission admission;

		int streams;
		double area;
		long areaAt;

		final long[] offered = new long[3];
		final long[] succeeded = new long[3];
		final long[] failed = new long[3];
		final long[] preempted = new long[3];
		final long[] cheap = new long[3];
		final long[] fallback = new long[3];
		final long[] shedCount = new long[3];
		final long[] refused = new long[3];
		/** Live answers completed in overloaded seconds, by overloaded phase (day's peak, ramp, spike). */
		final long[] overloadedByPhase = new long[3];
		long[] p0Ttft = new long[1024];
		int p0TtftCount;
		final int[] severity = new int[TOTAL_S];

		Run(Traffic traffic, Setup setup) {
			this.traffic = traffic;
			this.setup = setup;
			this.admission = setup.admission.apply(this);
		}

		long now() {
			return clock.now(TimeUnit.NANOSECONDS);
		}

		CpuMeter newCpuMeter() {
			CpuMeter meter = new CpuMeter(this);
			meter.markAt = now();
			meter.areaAtMark = streamArea();
			return meter;
		}

		double streamArea() {
			return area + streams * (double) (now() - areaAt);
		}

		private void streamsChange(int delta) {
			area = streamArea();
			areaAt = now();
			streams += delta;
		}

		Result execute() {
			scheduleArrival(0);
			Arrays.fill(severity, -1);
			// one sample per second, just after the governors' decisions on the second
			clock.schedulePeriodically(this::sampleLevel, SECOND + 1_000_000, SECOND, TimeUnit.NANOSECONDS);
			clock.advanceTimeBy(Duration.ofSeconds(TOTAL_S + DRAIN_S));
			admission.dispose();
			clock.dispose();
			return result();
		}

		private void sampleLevel() {
			int s = (int) (now() / SECOND) - 1;
			Integer level = admission.severity();
			if (level != null && s >= 0 && s < TOTAL_S) {
				severity[s] = level;
			}
		}

		private void scheduleArrival(int i) {
			clock.schedule(() -> {
				Priority p = PRIORITIES[traffic.priority[i]];
				offered[p.ordinal()]++;
				admission.offer(i, p);
				if (i + 1 < traffic.size()) {
					scheduleArrival(i + 1);
				}
			}, traffic.at[i] - now(), TimeUnit.NANOSECONDS);
		}

		/**
		 * Sends request {@code i} to the model now. Its time to first token is the unloaded one,
		 * stretched when the model runs more than {@link #STREAMS} streams (counting this one); it
		 * fails with a probability growing with the excess (the failure arrives when its first token
		 * would have), and a first token later than the timeout is a failure at the timeout.
		 */
		Call live(int i, Attempt attempt) {
			streamsChange(1);
			double x = Math.max(0.0, streams / (double) STREAMS - 1.0);
			long ttft = (long) (traffic.baseTtft[i] * (1 + SLOWDOWN * x * x));
			boolean fails = traffic.failureDraw[i] < Math.min(ERROR_CAP, ERROR_SLOPE * x);
			Call call = new Call(i, attempt);
			if (ttft >= FIRST_TOKEN_TIMEOUT_NANOS) {
				call.pending = clock.schedule(() -> call.end(End.TIMEOUT), FIRST_TOKEN_TIMEOUT_NANOS,
						TimeUnit.NANOSECONDS);
			}
			else if (fails) {
				call.pending = clock.schedule(() -> call.end(End.FAILURE), ttft, TimeUnit.NANOSECONDS);
			}
			else {
				call.pending = clock.schedule(() -> call.firstToken(ttft), ttft, TimeUnit.NANOSECONDS);
			}
			return call;
		}

		/** One live attempt on the model; ends exactly once. */
		final class Call {

			final int request;
			final int priority;
			final Attempt attempt;
			Disposable pending = Disposables.disposed();
			boolean ended;

			Call(int request, Attempt attempt) {
				this.request = request;
				this.priority = traffic.priority[request];
				this.attempt = attempt;
			}

			void firstToken(long ttft) {
				attempt.firstToken(ttft);
				long fromArrival = now() - traffic.at[request];
				if (priority == 0 && Traffic.overloaded((int) (traffic.at[request] / SECOND))) {
					recordP0Ttft(fromArrival);
				}
				pending = clock.schedule(() -> end(End.SUCCESS), DECODE_NANOS, TimeUnit.NANOSECONDS);
			}

			void end(End end) {
				if (ended) {
					return;
				}
				ended = true;
				pending.dispose();
				streamsChange(-1);
				if (end == End.SUCCESS) {
					succeeded[priority]++;
					int s = (int) (now() / SECOND);
					if (Traffic.overloaded(s)) {
						overloadedByPhase[phase(s)]++;
					}
				}
				else if (end == End.PREEMPTED) {
					preempted[priority]++;
				}
				else {
					failed[priority]++;
				}
				attempt.ended(end);
			}
		}

		/**
		 * Request {@code i} through the lanes: the model call starts when a permit is granted (any
		 * queueing counts in its time to first token from arrival); a lane's refusal (queue full,
		 * wait timeout) never reaches the model and is a failure to serve; a preempted stream ends
		 * at once as {@link End#PREEMPTED}.
		 */
		void liveThroughLanes(int i, Priority priority, PriorityLanes lanes, Attempt attempt) {
			LanePermit permit = lanes.tryAcquire(priority);
			if (permit != null) {
				liveOnPermit(i, permit, attempt);
				return;
			}
			// a permit taken back from a borrower is handed over before that stream's preemption
			// action runs: start on the next task at the same instant, once the stream has ended
			lanes.acquire(priority).subscribe(
					granted -> clock.schedule(() -> liveOnPermit(i, granted, attempt)), refusal -> refused(i));
		}

		private void liveOnPermit(int i, LanePermit permit, Attempt attempt) {
			Call call = live(i, new Attempt() {
				@Override
				public void firstToken(long ttftNanos) {
					attempt.firstToken(ttftNanos);
				}

				@Override
				public void ended(End end) {
					permit.release();
					attempt.ended(end);
				}
			});
			permit.onPreempted(e -> call.end(End.PREEMPTED));
		}

		/** Request {@code i} answered by the cache or a lightweight answer: answered, not live. */
		void cheap(int i) {
			cheap[traffic.priority[i]]++;
		}

		/** Request {@code i} answered by a fallback model: answered, not by the primary. */
		void fallback(int i) {
			fallback[traffic.priority[i]]++;
		}

		/** Request {@code i} refused by admission before any lane or model. */
		void shed(int i) {
			shedCount[traffic.priority[i]]++;
		}

		/** Request {@code i} refused by a lane (queue full or wait timeout). */
		void refused(int i) {
			refused[traffic.priority[i]]++;
		}

		private void recordP0Ttft(long nanos) {
			if (p0TtftCount == p0Ttft.length) {
				p0Ttft = Arrays.copyOf(p0Ttft, p0Ttft.length * 2);
			}
			p0Ttft[p0TtftCount++] = nanos;
		}

		Result result() {
			Result r = new Result();
			r.setup = setup;
			long[] ttfts = Arrays.copyOf(p0Ttft, p0TtftCount);
			Arrays.sort(ttfts);
			r.p0Success = succeeded[0] / (double) offered[0];
			r.p0TtftP50 = percentileMs(ttfts, 0.50);
			r.p0TtftP99 = percentileMs(ttfts, 0.99);
			r.p1Answered = (succeeded[1] + cheap[1] + fallback[1]) / (double) offered[1];
			r.p2Answered = (succeeded[2] + cheap[2] + fallback[2]) / (double) offered[2];
			double all = offered[0] + offered[1] + offered[2];
			r.liveShare = sum(succeeded) / all;
			r.cheapShare = sum(cheap) / all;
			r.fallbackShare = sum(fallback) / all;
			r.shedShare = sum(shedCount) / all;
			r.refusedShare = sum(refused) / all;
			r.failedShare = sum(failed) / all;
			r.preemptedShare = sum(preempted) / all;
			int[] overloadedSeconds = new int[3];
			for (int s = 0; s < TOTAL_S; s++) {
				if (Traffic.overloaded(s)) {
					overloadedSeconds[phase(s)]++;
				}
			}
			r.goodput = sum(overloadedByPhase) / (CAPACITY * (overloadedSeconds[0] + overloadedSeconds[1]
					+ overloadedSeconds[2]));
			for (int phase = 0; phase < 3; phase++) {
				r.goodputByPhase[phase] = overloadedByPhase[phase] / (CAPACITY * overloadedSeconds[phase]);
			}
			r.hasLevels = severity[TOTAL_S - 1] >= 0;
			if (r.hasLevels) {
				int changes = 0;
				for (int s = STEADY_COUNT_FROM_S + 1; s < STEADY_S; s++) {
					if (severity[s] != severity[s - 1]) {
						changes++;
					}
				}
				r.steadyChangesPerMinute = changes / ((STEADY_S - STEADY_COUNT_FROM_S) / 60.0);
				r.rampDegradeSecond = firstHeldDegradation();
				for (int s = 0; s < TOTAL_S; s++) {
					if (Traffic.overloaded(s) && severity[s] >= 0) {
						r.overloadedSecondsAt[severity[s]]++;
					}
				}
			}
			return r;
		}

		private static long sum(long[] counts) {
			return counts[0] + counts[1] + counts[2];
		}

		/**
		 * Seconds after the ramp starts rising at which the setup leaves its best level and stays at
		 * a worse one until the end of the hold at 3× (blips before that do not count).
		 */
		private int firstHeldDegradation() {
			int from = RAMP_HOLD_TO - 1;
			if (severity[from] <= 0) {
				return Integer.MAX_VALUE;
			}
			while (from - 1 >= RAMP_FROM && severity[from - 1] > 0) {
				from--;
			}
			return from - RAMP_RISE_FROM;
		}
	}

	static double percentileMs(long[] sorted, double q) {
		if (sorted.length == 0) {
			return Double.NaN;
		}
		int rank = (int) Math.ceil(q * sorted.length);
		return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))] / 1e6;
	}

	static final class Result {

		Setup setup;
		double p0Success;
		double p0TtftP50;
		double p0TtftP99;
		double p1Answered;
		double p2Answered;
		double liveShare;
		double cheapShare;
		double fallbackShare;
		double shedShare;
		double refusedShare;
		double failedShare;
		double preemptedShare;
		double goodput;
		/** Goodput in the overloaded seconds of the day's peak, the ramp and the spike. */
		final double[] goodputByPhase = new double[3];
		/** Overloaded seconds spent at each level. */
		final int[] overloadedSecondsAt = new int[LoadLevel.values().length];
		boolean hasLevels;
		double steadyChangesPerMinute = Double.NaN;
		int rampDegradeSecond = Integer.MAX_VALUE;
	}

	// ------------------------------------------------------------------------------------------
	// output

	static void print(Traffic traffic, List<Result> results) {
		long[] unloaded = p0UnloadedTtfts(traffic);
		double unloadedP99 = percentileMs(unloaded, 0.99);
		System.out.printf(Locale.ROOT, "%-28s %7s %7s %7s %7s %6s %6s %6s %6s %6s %6s %7s %6s %7s %7s %8s %8s%n",
				"setup", "P0 ok", "P0 p50", "P0 p99", "p99/unl", "P1 ans", "P2 ans", "live", "cache", "fallbk",
				"shed", "refused", "failed", "preempt", "goodput", "chg/min*", "ramp s**");
		for (Result r : results) {
			System.out.printf(Locale.ROOT,
					"%-28s %7.4f %5.0fms %5.0fms %7.2f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %7.3f %6.3f %7.3f %7.3f %8s %8s%n",
					r.setup.label, r.p0Success, r.p0TtftP50, r.p0TtftP99, r.p0TtftP99 / unloadedP99, r.p1Answered,
					r.p2Answered, r.liveShare, r.cheapShare, r.fallbackShare, r.shedShare, r.refusedShare,
					r.failedShare, r.preemptedShare, r.goodput,
					r.hasLevels ? String.format(Locale.ROOT, "%.2f", r.steadyChangesPerMinute) : "-",
					!r.hasLevels ? "-" : r.rampDegradeSecond == Integer.MAX_VALUE ? "never"
							: Integer.toString(r.rampDegradeSecond));
		}
		System.out.printf(Locale.ROOT,
				"P0 TTFT: successful P0 requests that arrived while the traffic was scheduled above capacity, from "
						+ "arrival (lane wait included); unloaded p99 (the same requests at the model's unloaded speed): "
						+ "%.0f ms%n", unloadedP99);
		System.out.println("* level changes per minute in the steady phase (after 60 s cold start); "
				+ "** seconds after the ramp starts rising at which the level leaves HEALTHY for good");
		System.out.printf(Locale.ROOT,
				"rows 4-7: PriorityLanes = the model's %d streams: P0 %d (lends idle permits, takes them back by "
						+ "preemption, waits <= %d ms), P1 %d (lends idle permits, no preemption), P2 %d; P1/P2 wait "
						+ "<= %d ms; queues 256%n",
				STREAMS, LANE_P0, P0_WAIT.toMillis(), LANE_P1, LANE_P2, LOWER_WAIT.toMillis());
		System.out.printf(Locale.ROOT,
				"rows 5-7: the governor's defaults (interval 1 s, Holt(0.3, 0.1), load 0.8/inf/inf smoothed 0.3, "
						+ "score 80/60/40, dwell 30 s, default rules) + .lanes(lanes); CHEAPER_FIRST: cache hit %.0f%%, "
						+ "a miss goes live; FALLBACK_FIRST: a fallback model; simulated CPU signal, no memory signal; "
						+ "reactive: overload line out of reach (no forecast); row 7: .lanes(lanes, SCALE)%n",
				CACHE_HIT_RATIO * 100);
		for (Result r : results) {
			System.out.printf(Locale.ROOT, "%-28s goodput day's peak %.3f, ramp %.3f, spike %.3f", r.setup.label,
					r.goodputByPhase[0], r.goodputByPhase[1], r.goodputByPhase[2]);
			if (r.hasLevels) {
				System.out.printf(Locale.ROOT, "; overloaded seconds at HEALTHY/WARNING/DEGRADED/CRITICAL %d/%d/%d/%d",
						r.overloadedSecondsAt[0], r.overloadedSecondsAt[1], r.overloadedSecondsAt[2],
						r.overloadedSecondsAt[3]);
			}
			System.out.println();
		}
		System.out.println();
		Result reactive = results.get(Setup.REACTIVE.ordinal());
		Result gradient2 = results.get(Setup.GRADIENT2.ordinal());
		goals("", results.get(Setup.FULL.ordinal()), reactive, gradient2, unloadedP99);
		goals("scale-", results.get(Setup.SCALE.ordinal()), reactive, gradient2, unloadedP99);
	}

	/** The goal lines of a governed row; the forecast lead is against the reactive row (one interval = 1 s). */
	static void goals(String prefix, Result full, Result reactive, Result gradient2, double unloadedP99) {
		System.out.printf(Locale.ROOT, "%sp0-success=%.4f%n", prefix, full.p0Success);
		System.out.printf(Locale.ROOT, "%sp0-p99-ttft-ratio=%.3f%n", prefix, full.p0TtftP99 / unloadedP99);
		System.out.printf(Locale.ROOT, "%sgoodput=%.3f%n", prefix, full.goodput);
		System.out.printf(Locale.ROOT, "%slevel-changes-per-min-steady=%.2f%n", prefix, full.steadyChangesPerMinute);
		System.out.printf(Locale.ROOT, "%sforecast-lead-intervals=%s%n", prefix,
				full.rampDegradeSecond == Integer.MAX_VALUE || reactive.rampDegradeSecond == Integer.MAX_VALUE ? "n/a"
						: Integer.toString(reactive.rampDegradeSecond - full.rampDegradeSecond));
		System.out.printf(Locale.ROOT, "%svs-gradient2-p0-p99=%.3f (goodput %.3f vs %.3f)%n", prefix,
				full.p0TtftP99 / gradient2.p0TtftP99, full.goodput, gradient2.goodput);
	}

	static long[] p0UnloadedTtfts(Traffic traffic) {
		long[] ttfts = new long[traffic.size()];
		int n = 0;
		for (int i = 0; i < traffic.size(); i++) {
			if (traffic.priority[i] == 0 && Traffic.overloaded((int) (traffic.at[i] / SECOND))) {
				ttfts[n++] = traffic.baseTtft[i];
			}
		}
		long[] sorted = Arrays.copyOf(ttfts, n);
		Arrays.sort(sorted);
		return sorted;
	}

	private LoadGovernorSimulation() {
	}
}
