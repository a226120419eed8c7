package dev.aiguard.benchmarks;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.admission.PriorityLanes;
import reactor.core.publisher.Flux;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Does a P2 flood hurt interactive P0 answers, and does isolating P0 waste capacity? Four setups
 * share one model and one arrival pattern, all in virtual time (deterministic figures):
 *
 * <ol>
 * <li>P0 alone, through the lanes (the reference);</li>
 * <li>P0 plus a P2 flood through one shared FIFO bulkhead of the same total size (the anchor: what
 * a plain bulkhead such as resilience4j's gives). Built from {@link PriorityLanes} itself with
 * every request mapped to one 16-permit lane, so the queueing code is the same;</li>
 * <li>the same load through the lanes without lending (fixed partitions, borrowing downwards
 * only);</li>
 * <li>the same load through the lanes with work-conserving lending and preemption on.</li>
 * </ol>
 *
 * The model: time to first token log-normal (median 200 ms, sigma 0.5), then 50 tokens 20 ms
 * apart. P0 arrives (Poisson) at 20 % of its lane's share, the P2 flood at ten times the total
 * capacity. P0 arrivals and their model times come from their own seeded random stream, the same
 * in every setup (common random numbers), so differences between setups come from admission
 * alone.
 *
 * <p>Run: {@code java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.PriorityIsolationSimulation}
 */
public final class PriorityIsolationSimulation {

	static final int TOTAL = 16;
	static final int P0_PERMITS = 4;
	static final int P1_PERMITS = 4;
	static final int P2_PERMITS = TOTAL - P0_PERMITS - P1_PERMITS;
	static final int TOKENS = 50;
	static final Duration TOKEN_INTERVAL = Duration.ofMillis(20);
	static final double TTFT_MEDIAN_MS = 200;
	static final double TTFT_SIGMA = 0.5;
	static final double MEAN_SERVICE_MS = TTFT_MEDIAN_MS * Math.exp(TTFT_SIGMA * TTFT_SIGMA / 2)
			+ TOKENS * TOKEN_INTERVAL.toMillis();
	static final double P0_RATE_PER_S = 0.2 * P0_PERMITS / (MEAN_SERVICE_MS / 1000);
	static final double P2_RATE_PER_S = 10.0 * TOTAL / (MEAN_SERVICE_MS / 1000);
	static final Duration WARM_UP = Duration.ofSeconds(30);
	static final Duration MEASURED = Duration.ofMinutes(30);
	static final Duration SAMPLE_EVERY = Duration.ofMillis(10);
	static final Duration DRAIN = Duration.ofMinutes(1);
	static final long P0_SEED = 20_250_101L;
	static final long P2_SEED = 7_777L;

	enum Setup {
		P0_ALONE("1 P0 alone (lanes)"),
		SHARED_FIFO("2 shared FIFO bulkhead"),
		LANES("3 lanes, no lending"),
		LANES_LENDING("4 lanes + lending/preemption");

		final String label;

		Setup(String label) {
			this.label = label;
		}
	}

	public static void main(String[] args) {
		System.out.printf(Locale.ROOT,
				"capacity %d streams (lanes P0=%d P1=%d P2=%d); model: TTFT log-normal median %.0f ms sigma %.1f, "
						+ "%d tokens every %d ms (mean service %.0f ms)%n",
				TOTAL, P0_PERMITS, P1_PERMITS, P2_PERMITS, TTFT_MEDIAN_MS, TTFT_SIGMA, TOKENS,
				TOKEN_INTERVAL.toMillis(), MEAN_SERVICE_MS);
		System.out.printf(Locale.ROOT,
				"load: P0 %.3f/s (20%% of P0's share), P2 flood %.1f/s (10x capacity), P1 none; %d s measured after "
						+ "%d s warm-up, virtual time%n%n",
				P0_RATE_PER_S, P2_RATE_PER_S, MEASURED.toSeconds(), WARM_UP.toSeconds());

		List<Result> results = new ArrayList<>();
		for (Setup setup : Setup.values()) {
			results.add(run(setup));
		}

		System.out.printf(Locale.ROOT, "%-30s %6s %10s %10s %10s %10s %8s %10s %10s %9s %10s%n", "setup", "P0 n",
				"ttft p50", "ttft p99", "wait p50", "wait p99", "P0 rej", "P2 done/s", "P2 preempt", "P2 rej",
				"P2 util*");
		for (Result r : results) {
			System.out.printf(Locale.ROOT, "%-30s %6d %8.0fms %8.0fms %8.0fms %8.0fms %8d %10.2f %10d %9d %10.3f%n",
					r.setup.label, r.p0Admitted, r.ttftP50, r.ttftP99, r.waitP50, r.waitP99, r.p0Rejected,
					r.p2PerSecond, r.p2Preempted, r.p2Rejected, r.p2Utilisation);
		}
		System.out.println("* share of the 16 permits running P2 while P0 and P1 run nothing (sampled every "
				+ SAMPLE_EVERY.toMillis() + " ms)");
		Result alone = results.get(Setup.P0_ALONE.ordinal());
		Result lending = results.get(Setup.LANES_LENDING.ordinal());
		System.out.printf(Locale.ROOT, "p0-p99-ttft-ratio=%.3f%n", lending.ttftP99 / alone.ttftP99);
		System.out.printf(Locale.ROOT, "p2-utilisation=%.3f%n", lending.p2Utilisation);
	}

	static PriorityLanes lanes(Setup setup, VirtualTimeScheduler clock) {
		PriorityLanes.Builder b = PriorityLanes.builder().name(setup.name()).timer(clock);
		LaneSpec p0 = LaneSpec.of(P0_PERMITS).maxQueueSize(64).maxQueueWait(Duration.ofSeconds(30));
		LaneSpec p1 = LaneSpec.of(P1_PERMITS).maxQueueSize(64).maxQueueWait(Duration.ofSeconds(30));
		LaneSpec p2 = LaneSpec.of(P2_PERMITS).maxQueueSize(256).maxQueueWait(Duration.ofSeconds(30));
		switch (setup) {
			case SHARED_FIFO:
				// one 16-permit FIFO; every request is sent to the P2 lane
				return b.lane(Priority.P0, LaneSpec.of(0)).lane(Priority.P1, LaneSpec.of(0))
						.lane(Priority.P2, p2.concurrency(TOTAL)).build();
			case LANES_LENDING:
				return b.lane(Priority.P0, p0.lendToLower(1.0).preemptBorrowers(true))
						.lane(Priority.P1, p1.lendToLower(1.0).preemptBorrowers(true))
						.lane(Priority.P2, p2).build();
			default:
				return b.lane(Priority.P0, p0).lane(Priority.P1, p1).lane(Priority.P2, p2).build();
		}
	}

	static Result run(Setup setup) {
		VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		PriorityLanes lanes = lanes(setup, clock);
		Stats stats = new Stats(setup, clock);
		long measureFrom = WARM_UP.toNanos();
		long measureTo = measureFrom + MEASURED.toNanos();

		Arrivals p0 = new Arrivals(new SplittableRandom(P0_SEED), P0_RATE_PER_S);
		scheduleArrivals(p0, clock, measureTo,
				() -> call(lanes, clock, setup == Setup.SHARED_FIFO ? Priority.P2 : Priority.P0, true, p0, stats,
						measureFrom, measureTo));
		if (setup != Setup.P0_ALONE) {
			Arrivals p2 = new Arrivals(new SplittableRandom(P2_SEED), P2_RATE_PER_S);
			scheduleArrivals(p2, clock, measureTo,
					() -> call(lanes, clock, Priority.P2, false, p2, stats, measureFrom, measureTo));
		}
		clock.schedulePeriodically(() -> stats.sample(measureFrom, measureTo), 0, SAMPLE_EVERY.toNanos(),
				TimeUnit.NANOSECONDS);

		// arrivals stop at the end of the window; the extra minute lets late P0 answers finish
		clock.advanceTimeBy(Duration.ofNanos(measureTo).plus(DRAIN));
		lanes.dispose();
		clock.dispose();
		return stats.result();
	}

	/** A Poisson process plus the model times of the requests it produces, from one random stream. */
	static final class Arrivals {

		final SplittableRandom random;
		final double ratePerNano;
		long nextAt;

		Arrivals(SplittableRandom random, double ratePerSecond) {
			this.random = random;
			this.ratePerNano = ratePerSecond / 1e9;
			this.nextAt = gap();
		}

		long gap() {
			return (long) (-Math.log(1.0 - random.nextDouble()) / ratePerNano);
		}

		Duration ttft() {
			double gaussian = gaussian();
			return Duration.ofNanos((long) (TTFT_MEDIAN_MS * 1e6 * Math.exp(TTFT_SIGMA * gaussian)));
		}

		private double gaussian() {
			// Box-Muller, one value per call: keeps the stream's use identical across setups
			double u1 = 1.0 - random.nextDouble();
			double u2 = random.nextDouble();
			return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
		}
	}

	static void scheduleArrivals(Arrivals arrivals, VirtualTimeScheduler clock, long until, Runnable call) {
		long delay = arrivals.nextAt - clock.now(TimeUnit.NANOSECONDS);
		clock.schedule(() -> {
			call.run();
			arrivals.nextAt += arrivals.gap();
			if (arrivals.nextAt < until) {
				scheduleArrivals(arrivals, clock, until, call);
			}
		}, Math.max(0, delay), TimeUnit.NANOSECONDS);
	}

	/** One guarded model call: admission through the lanes' own operator, then the timed model. */
	static void call(PriorityLanes lanes, VirtualTimeScheduler clock, Priority priority, boolean interactive,
			Arrivals arrivals, Stats stats, long measureFrom, long measureTo) {
		long arrivedAt = clock.now(TimeUnit.NANOSECONDS);
		Duration ttft = arrivals.ttft();
		boolean measured = arrivedAt >= measureFrom && arrivedAt < measureTo;
		long[] admittedAt = { -1 };
		long[] firstTokenAt = { -1 };
		Flux<Long> model = Flux.defer(() -> {
			admittedAt[0] = clock.now(TimeUnit.NANOSECONDS);
			stats.started(interactive);
			return Flux.interval(ttft, TOKEN_INTERVAL, clock).take(TOKENS).doFinally(s -> stats.ended(interactive));
		});
		model.transform(lanes.admit())
				.contextWrite(priority.asContext())
				.subscribe(token -> {
					if (firstTokenAt[0] < 0) {
						firstTokenAt[0] = clock.now(TimeUnit.NANOSECONDS);
					}
				}, error -> {
					if (!measured) {
						return;
					}
					if (error instanceof AdmissionRejectedException) {
						stats.rejected(interactive);
					}
					else if (error instanceof PreemptedException) {
						stats.preempted(interactive);
					}
				}, () -> {
					long now = clock.now(TimeUnit.NANOSECONDS);
					if (interactive && measured) {
						stats.p0Done(firstTokenAt[0] - arrivedAt, admittedAt[0] - arrivedAt);
					}
					else if (!interactive && now >= measureFrom && now < measureTo) {
						stats.p2Done();
					}
				});
	}

	static final class Stats {

		final Setup setup;
		final VirtualTimeScheduler clock;
		final List<Long> ttfts = new ArrayList<>();
		final List<Long> waits = new ArrayList<>();
		long p0Rejected;
		long p0Preempted;
		long p2Rejected;
		long p2Preempted;
		long p2Done;
		double p2BusyPermitSamples;
		long idleSamples;
		int p0Active;
		int p2Active;

		Stats(Setup setup, VirtualTimeScheduler clock) {
			this.setup = setup;
			this.clock = clock;
		}

		void p0Done(long ttftNanos, long waitNanos) {
			ttfts.add(ttftNanos);
			waits.add(waitNanos);
		}

		void p2Done() {
			p2Done++;
		}

		void rejected(boolean interactive) {
			if (interactive) {
				p0Rejected++;
			}
			else {
				p2Rejected++;
			}
		}

		void preempted(boolean interactive) {
			if (interactive) {
				p0Preempted++;
			}
			else {
				p2Preempted++;
			}
		}

		void started(boolean interactive) {
			if (interactive) {
				p0Active++;
			}
			else {
				p2Active++;
			}
		}

		void ended(boolean interactive) {
			if (interactive) {
				p0Active--;
			}
			else {
				p2Active--;
			}
		}

		/** How much of the capacity P2 streams hold while no P0 stream runs (P1 has no traffic). */
		void sample(long from, long to) {
			long now = clock.now(TimeUnit.NANOSECONDS);
			if (now >= from && now < to && p0Active == 0) {
				idleSamples++;
				p2BusyPermitSamples += p2Active;
			}
		}

		Result result() {
			long[] t = ttfts.stream().mapToLong(Long::longValue).sorted().toArray();
			long[] w = waits.stream().mapToLong(Long::longValue).sorted().toArray();
			Result r = new Result();
			r.setup = setup;
			r.p0Admitted = t.length;
			r.ttftP50 = LatencyHistogram.nearestRankMillis(t, 0.50);
			r.ttftP99 = LatencyHistogram.nearestRankMillis(t, 0.99);
			r.waitP50 = LatencyHistogram.nearestRankMillis(w, 0.50);
			r.waitP99 = LatencyHistogram.nearestRankMillis(w, 0.99);
			r.p0Rejected = p0Rejected + p0Preempted;
			r.p2PerSecond = p2Done / (double) MEASURED.toSeconds();
			r.p2Preempted = p2Preempted;
			r.p2Rejected = p2Rejected;
			r.p2Utilisation = idleSamples == 0 || setup == Setup.P0_ALONE ? Double.NaN
					: p2BusyPermitSamples / (idleSamples * (double) TOTAL);
			return r;
		}
	}

	static final class Result {

		Setup setup;
		int p0Admitted;
		double ttftP50;
		double ttftP99;
		double waitP50;
		double waitP99;
		long p0Rejected;
		double p2PerSecond;
		long p2Preempted;
		long p2Rejected;
		double p2Utilisation;

		@Override
		public String toString() {
			return setup + Arrays.toString(new double[] { ttftP50, ttftP99, p2PerSecond, p2Utilisation });
		}
	}

	private PriorityIsolationSimulation() {
	}
}
