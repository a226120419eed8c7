package dev.aiguard.benchmarks;

import static dev.aiguard.benchmarks.LoadGovernorSimulation.CACHE_SEED;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.CAPACITY;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.DAY_FROM;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.MODEL_SEED;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.NOISE;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.PRIORITY_SHARE;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.RAMP_FLAT_S;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.RAMP_FROM;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.RAMP_HOLD_S;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.RAMP_RISE_S;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.SECOND;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.SPIKE_FROM;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.STEADY_LOAD;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.TOTAL_S;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.TRAFFIC_SEED;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.TTFT_MEDIAN_MS;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.TTFT_SIGMA;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Every request of the run, generated once: arrival time, priority, the model's unloaded time to
 * first token, a uniform draw that decides a failure when the model is overloaded, and one that
 * decides whether the cache has an answer for it.
 */
final class GovernorTraffic {

	final long[] at;
	final byte[] priority;
	final long[] baseTtft;
	final double[] failureDraw;
	final double[] cacheDraw;
	final double[] load;

	private GovernorTraffic(long[] at, byte[] priority, long[] baseTtft, double[] failureDraw, double[] cacheDraw,
			double[] load) {
		this.at = at;
		this.priority = priority;
		this.baseTtft = baseTtft;
		this.failureDraw = failureDraw;
		this.cacheDraw = cacheDraw;
		this.load = load;
	}

	static GovernorTraffic generate() {
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
		return new GovernorTraffic(Arrays.copyOf(at, n), Arrays.copyOf(priority, n), Arrays.copyOf(baseTtft, n),
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
}
