package dev.aiguard.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.benchmarks.GovernorReport.Result;
import dev.aiguard.benchmarks.GovernorSetups.Setup;
import dev.aiguard.core.Priority;
import dev.aiguard.load.LaneResizing;

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
 * {@link GovernorSetups#lanes(GovernorRun)});</li>
 * <li>the load governor with its defaults in front of the same lanes, which it resizes, with the
 * forecast's say removed (reactive levels only);</li>
 * <li>the same with the forecast (the default Holt);</li>
 * <li>row 6 with {@link LaneResizing#SCALE}: the permits a level takes from a lane are dropped
 * instead of going to the nearest more urgent open lane (the default, {@code KEEP_TOTAL}).</li>
 * </ol>
 *
 * The governor rows are driven as the guard drives the governor ({@link GovernedAdmission}).
 *
 * The model serves {@value #STREAMS} streams at full speed; beyond that its time to first token
 * grows with the square of the excess and it fails a growing share of requests (see
 * {@link GovernorRun#live}). The traffic has four phases: a steady load with ±5 % noise, a compressed
 * day, a ramp from 0.5× to 3× capacity, and a sudden spike to 3×; 10 % of it is P0, 30 % P1,
 * 60 % P2. Every arrival, priority, model time, error draw and cache draw is generated once from
 * seeded streams and replayed in every setup (common random numbers), so the setups differ by
 * admission alone.
 *
 * <p>GovernorRun: {@code java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.LoadGovernorSimulation}
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
		GovernorTraffic traffic = GovernorTraffic.generate();
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
				NOISE * 100, STEADY_LOAD, STEADY_S, DAY_S, GovernorTraffic.dayShape(2 * 60), GovernorTraffic.dayShape(14 * 60), 0.5, RAMP_RISE_S,
				RAMP_HOLD_S, 0.6, PRIORITY_SHARE[0] * 100, PRIORITY_SHARE[1] * 100, PRIORITY_SHARE[2] * 100,
				traffic.size());

		List<Result> results = new ArrayList<>();
		for (Setup setup : Setup.values()) {
			results.add(new GovernorRun(traffic, setup).execute());
		}
		GovernorReport.print(traffic, results);
	}

	private LoadGovernorSimulation() {
	}
}
