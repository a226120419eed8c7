package dev.aiguard.benchmarks;

import static dev.aiguard.benchmarks.LoadGovernorSimulation.CACHE_HIT_RATIO;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.LANE_P0;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.LANE_P1;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.LANE_P2;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.LOWER_WAIT;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.P0_WAIT;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.SECOND;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.STREAMS;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

import dev.aiguard.benchmarks.GovernorSetups.Setup;
import dev.aiguard.load.LoadLevel;

/** The figures of {@link LoadGovernorSimulation}: one {@link Result} per setup, the table and the goal lines. */
final class GovernorReport {

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

	static void print(GovernorTraffic traffic, List<Result> results) {
		long[] unloaded = p0UnloadedTtfts(traffic);
		double unloadedP99 = LatencyHistogram.nearestRankMillis(unloaded, 0.99);
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

	static long[] p0UnloadedTtfts(GovernorTraffic traffic) {
		long[] ttfts = new long[traffic.size()];
		int n = 0;
		for (int i = 0; i < traffic.size(); i++) {
			if (traffic.priority[i] == 0 && GovernorTraffic.overloaded((int) (traffic.at[i] / SECOND))) {
				ttfts[n++] = traffic.baseTtft[i];
			}
		}
		long[] sorted = Arrays.copyOf(ttfts, n);
		Arrays.sort(sorted);
		return sorted;
	}

	private GovernorReport() {
	}
}
