package dev.aiguard.benchmarks;

import java.time.Duration;
import java.util.Locale;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.breaker.ExpectedLossPolicy;
import dev.aiguard.breaker.TripPolicy;
import dev.aiguard.core.Outcome;

/**
 * Does weighing what a failure costs trip the breaker at a better point than a fixed failure rate?
 * Two breakers, the same config but for the trip policy, see the same traffic in virtual time (the
 * breaker's clock is the simulation's): the classic {@code failureRate()} at its default threshold
 * (50 %), and {@code expectedLoss} priced with the traffic's own costs.
 *
 * <p>Traffic: Poisson arrivals at {@value #RATE_PER_SECOND}/s for {@value #HOURS} hours; prompts
 * log-normal (median 1500 tokens, sigma 0.6, 50 to 16000), answers of {@value #OUTPUT_TOKENS} tokens.
 * The upstream fails {@value #HEALTHY_FAILURE} of its attempts while healthy, and has failure
 * episodes of 2 to 6 minutes, 8 to 20 minutes apart, failing 20, 30, 40, 60 or 100 % of attempts.
 * A failure is a fast 503 after 0.3 s or, as often, a stall given up after 10 s. A request the
 * breaker refuses, or whose attempt failed, is answered by the ladder: the response cache (20 % hits,
 * free) else a cheaper model, which fails 0.5 % of the time (then a static answer).
 *
 * <p>Costs (one currency): the model's tokens at 2.50 / 10.00 per million (prompt / answer), the
 * cheaper model's at 0.15 / 0.60; the user's wait at {@value #WAIT_PRICE_PER_SECOND} per second to
 * the first token; a failed answer {@value #FAILED_ANSWER_COST}; a cheaper model's answer loses
 * {@value #DEGRADED_ANSWER_COST} of value, a static answer {@value #STATIC_ANSWER_COST}. Every draw
 * comes from a stream seeded by the request's number (common random numbers), so the two rows differ
 * by their trip policy alone.
 *
 * <p>{@code java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.ExpectedLossSimulation}
 */
public final class ExpectedLossSimulation {

	static final double RATE_PER_SECOND = 5;
	static final int HOURS = 6;
	static final long SEED = 20261203L;
	static final double HEALTHY_FAILURE = 0.02;
	static final int OUTPUT_TOKENS = 400;
	static final double MODEL_IN = 2.50e-6;
	static final double MODEL_OUT = 10.00e-6;
	static final double CHEAP_IN = 0.15e-6;
	static final double CHEAP_OUT = 0.60e-6;
	static final double WAIT_PRICE_PER_SECOND = 0.001;
	static final double FAILED_ANSWER_COST = 0.003;
	static final double DEGRADED_ANSWER_COST = 0.012;
	/** An answer counts as available when its first token comes within this (the availability SLO). */
	static final double AVAILABLE_WITHIN_SECONDS = 5;
	static final double STATIC_ANSWER_COST = 0.03;
	static final double CACHE_HITS = 0.2;
	static final double CHEAP_FAILURE = 0.005;
	static final double[] SEVERITIES = { 0.2, 0.3, 0.4, 0.6, 1.0 };

	private static final long SECOND = 1_000_000_000L;

	private ExpectedLossSimulation() {
	}

	public static void main(String[] args) {
		long end = HOURS * 3600L * SECOND;
		double[][] episodes = episodes(end);
		BreakerConfig.Builder common = BreakerConfig.custom().openWaitJitter(0).halfOpenProbes(20).successesToClose(10);
		Row classic = run("failureRate (default 0.5)", common.tripPolicy(TripPolicy.failureRate()).build(), episodes, end);
		ExpectedLossPolicy loss = priced();
		Row expected = run("expectedLoss", common.tripPolicy(loss).build(), episodes, end);
		System.out.printf(Locale.ROOT, "expected-loss policy: C(failure) %.4f, C(unavailable) %.4f, trips at %.1f %% failures%n",
				loss.failureCost(), loss.unavailableCost(), 100 * loss.tripFailureRate());
		System.out.printf(Locale.ROOT, "%-26s %8s %8s %8s %8s %8s %10s %10s %12s%n", "row", "requests", "model ok",
				"failed", "ladder", "static", "availab.", "cost", "cost/request");
		classic.print();
		expected.print();
		System.out.printf(Locale.ROOT, "expected-loss-cost-vs-failure-rate=%.3f%n", expected.cost / classic.cost);
		System.out.printf(Locale.ROOT, "failure-rate-availability=%.4f%n", classic.availability());
		System.out.printf(Locale.ROOT, "expected-loss-availability=%.4f%n", expected.availability());
	}

	/**
	 * The policy priced as a user would from the figures above. C(failure): a typical prompt (the
	 * log-normal's mean, about 1800 tokens) at the model's input price, a failure's mean wait (half
	 * 0.3 s, half 10 s), the failed answer. C(unavailable): what a ladder answer costs beyond the
	 * model's own answer (a cache hit's nothing, the cheaper model's tokens and lost value, a static
	 * answer's cost, each by its share), less the model's answer it replaces.
	 */
	static ExpectedLossPolicy priced() {
		int promptTokens = 1800;
		double modelAnswer = promptTokens * MODEL_IN + OUTPUT_TOKENS * MODEL_OUT + 0.6 * WAIT_PRICE_PER_SECOND;
		double cheapAnswer = promptTokens * CHEAP_IN + OUTPUT_TOKENS * CHEAP_OUT + 0.5 * WAIT_PRICE_PER_SECOND
				+ DEGRADED_ANSWER_COST;
		double ladderAnswer = (1 - CACHE_HITS) * ((1 - CHEAP_FAILURE) * cheapAnswer + CHEAP_FAILURE * STATIC_ANSWER_COST);
		return TripPolicy.expectedLoss(ladderAnswer - modelAnswer).promptTokens(promptTokens)
				.promptPricePerMillion(MODEL_IN * 1e6).waitPricePerSecond(WAIT_PRICE_PER_SECOND)
				.failureWait(Duration.ofMillis(5150)).failedAnswerCost(FAILED_ANSWER_COST);
	}

	/** Episodes as {start, end, failure probability}, from their own seeded stream. */
	static double[][] episodes(long end) {
		SplittableRandom r = new SplittableRandom(SEED);
		java.util.List<double[]> list = new java.util.ArrayList<>();
		long at = (long) ((8 + 12 * r.nextDouble()) * 60 * SECOND);
		int k = 0;
		while (at < end) {
			long length = (long) ((2 + 4 * r.nextDouble()) * 60 * SECOND);
			list.add(new double[] { at, at + length, SEVERITIES[k++ % SEVERITIES.length] });
			at += length + (long) ((8 + 12 * r.nextDouble()) * 60 * SECOND);
		}
		return list.toArray(double[][]::new);
	}

	static double failureProbability(double[][] episodes, long now) {
		for (double[] e : episodes) {
			if (now >= e[0] && now < e[1]) {
				return e[2];
			}
		}
		return HEALTHY_FAILURE;
	}

	/** An attempt in flight: settled at {@code endsAt}. */
	record Attempt(long endsAt, BreakerPermit permit, Outcome outcome, long ttftNanos) {
	}

	static final class Row {
		final String name;
		long requests, modelOk, failed, ladder, staticAnswers, available;
		double cost;

		Row(String name) {
			this.name = name;
		}

		/** @return the share of requests answered by a model or the cache within the SLO */
		double availability() {
			return (double) available / requests;
		}

		void print() {
			System.out.printf(Locale.ROOT, "%-26s %8d %8d %8d %8d %8d %10.4f %10.2f %12.5f%n", name, requests, modelOk,
					failed, ladder, staticAnswers, availability(), cost, cost / requests);
		}
	}

	static Row run(String name, BreakerConfig config, double[][] episodes, long end) {
		long[] clock = { 0 };
		CircuitBreaker breaker = CircuitBreaker.builder(name).config(config).clock(() -> clock[0]).build();
		PriorityQueue<Attempt> inFlight = new PriorityQueue<>((a, b) -> Long.compare(a.endsAt, b.endsAt));
		SplittableRandom arrivals = new SplittableRandom(SEED + 1);
		Row row = new Row(name);
		long now = 0;
		for (long n = 0;; n++) {
			now += (long) (-Math.log(1 - arrivals.nextDouble()) / RATE_PER_SECOND * SECOND);
			if (now >= end) {
				break;
			}
			while (!inFlight.isEmpty() && inFlight.peek().endsAt <= now) {
				Attempt a = inFlight.poll();
				clock[0] = a.endsAt;
				a.permit.record(a.outcome, a.ttftNanos);
			}
			clock[0] = now;
			row.requests++;
			SplittableRandom r = new SplittableRandom(SEED * 31 + n);
			int prompt = (int) Math.max(50, Math.min(16000, Math.exp(Math.log(1500) + 0.6 * r.nextGaussian())));
			boolean fails = r.nextDouble() < failureProbability(episodes, now);
			boolean stall = r.nextBoolean();
			double ttftSeconds = 0.4 + 0.4 * r.nextDouble();
			double ladderDraw = r.nextDouble();
			BreakerPermit permit = breaker.tryAcquire();
			if (permit == null) {
				row.cost += ladder(row, prompt, ladderDraw, 0);
				continue;
			}
			if (fails) {
				double lostSeconds = stall ? 10 : 0.3;
				row.failed++;
				row.cost += prompt * MODEL_IN + lostSeconds * WAIT_PRICE_PER_SECOND + FAILED_ANSWER_COST;
				row.cost += ladder(row, prompt, ladderDraw, lostSeconds);
				inFlight.add(new Attempt(now + (long) (lostSeconds * SECOND), permit,
						stall ? Outcome.STALLED : Outcome.FAILURE, -1));
			}
			else {
				row.modelOk++;
				row.available++;
				row.cost += prompt * MODEL_IN + OUTPUT_TOKENS * MODEL_OUT + ttftSeconds * WAIT_PRICE_PER_SECOND;
				long ttft = (long) (ttftSeconds * SECOND);
				inFlight.add(new Attempt(now + ttft + 8 * SECOND, permit, Outcome.SUCCESS, ttft));
			}
		}
		return row;
	}

	/** An answer from the ladder: the cache, else the cheaper model, else the static answer. */
	static double ladder(Row row, int prompt, double draw, double waitedSeconds) {
		row.ladder++;
		if (draw < CACHE_HITS) {
			row.available += waitedSeconds < AVAILABLE_WITHIN_SECONDS ? 1 : 0;
			return 0;
		}
		if (draw < CACHE_HITS + (1 - CACHE_HITS) * CHEAP_FAILURE) {
			row.staticAnswers++;
			return STATIC_ANSWER_COST;
		}
		row.available += waitedSeconds + 0.5 < AVAILABLE_WITHIN_SECONDS ? 1 : 0;
		return prompt * CHEAP_IN + OUTPUT_TOKENS * CHEAP_OUT + 0.5 * WAIT_PRICE_PER_SECOND + DEGRADED_ANSWER_COST;
	}
}
