package dev.aiguard.benchmarks;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import dev.aiguard.admission.LanePermit;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import io.github.resilience4j.circuitbreaker.CircuitBreakerConfig;

/**
 * The single-thread cases of {@link BreakerBenchmark} and {@link AdmissionBenchmark}, timed in
 * <em>CPU time of the measuring thread</em> instead of wall time: on a machine shared with other
 * jobs a descheduled thread adds nothing, so the ratios stay usable when JMH's do not (its errors
 * exceed its scores at a load average of 10 on two cores). Each case runs in rounds of 2 million
 * calls, interleaved with the others; the best round after four warm-up rounds is reported. Not a
 * replacement for JMH on a quiet machine: no forks, results kept in a plain array, one thread.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.CpuTimeComparison
 * </pre>
 */
public final class CpuTimeComparison {

	private static final int CALLS = 2_000_000;
	private static final int ROUNDS = 12;
	private static final int WARM_UP_ROUNDS = 4;
	private static final long TTFT_NANOS = 300_000_000L;

	/** A case runs its own loop, so each one is compiled with its call inlined. */
	@FunctionalInterface
	interface Case {
		void run(int calls);
	}

	/** Keeps results alive so the JIT cannot drop the work: a plain store, no fence. */
	static final Object[] SINK = new Object[1024];
	private static long tick = System.nanoTime();

	private CpuTimeComparison() {
	}

	public static void main(String[] args) {
		for (String window : new String[] { "TIME", "COUNT" }) {
			Map<String, Double> ns = time(breakerCases("TIME".equals(window)));
			System.out.printf("breaker %-5s %s | all policies / resilience4j %.2f, timestamped %.2f%n", window,
					format(ns), ns.get("allPolicies") / ns.get("resilience4j"),
					ns.get("allPoliciesAt") / ns.get("resilience4j"));
		}
		AdmissionBenchmark admission = new AdmissionBenchmark();
		admission.setUp();
		try {
			Map<String, Double> ns = time(admissionCases(admission));
			System.out.printf("admission %s | lanes / bulkhead %.2f, floor / bulkhead %.2f%n", format(ns),
					ns.get("lanesAcquireRelease") / ns.get("bulkheadAcquireRelease"),
					ns.get("admissionFloor") / ns.get("bulkheadAcquireRelease"));
		}
		finally {
			admission.tearDown();
		}
	}

	private static Map<String, Case> breakerCases(boolean time) {
		BreakerConfig config = time ? BreakerConfig.defaults() : BreakerConfig.custom().countWindow(100).build();
		CircuitBreaker plain = CircuitBreaker.of("plain", config);
		CircuitBreaker all = CircuitBreaker.of("all", BreakerBenchmark.allPolicies(config));
		io.github.resilience4j.circuitbreaker.CircuitBreaker theirs = io.github.resilience4j.circuitbreaker.CircuitBreaker
				.of("r4j", CircuitBreakerConfig.custom()
						.slidingWindowType(time ? CircuitBreakerConfig.SlidingWindowType.TIME_BASED
								: CircuitBreakerConfig.SlidingWindowType.COUNT_BASED)
						.slidingWindowSize(time ? 60 : 100)
						.build());
		Map<String, Case> cases = new LinkedHashMap<>();
		cases.put("resilience4j", calls -> {
			for (int i = 0; i < calls; i++) {
				theirs.acquirePermission();
				theirs.onSuccess(TTFT_NANOS, TimeUnit.NANOSECONDS);
			}
		});
		cases.put("plain", calls -> {
			for (int i = 0; i < calls; i++) {
				BreakerPermit permit = plain.tryAcquire();
				permit.record(Outcome.SUCCESS, TTFT_NANOS);
				SINK[i & 1023] = permit;
			}
		});
		cases.put("allPolicies", calls -> {
			for (int i = 0; i < calls; i++) {
				BreakerPermit permit = all.tryAcquire();
				permit.promptTokens(1000).record(Outcome.SUCCESS, TTFT_NANOS);
				SINK[i & 1023] = permit;
			}
		});
		cases.put("allPoliciesAt", calls -> {
			for (int i = 0; i < calls; i++) {
				// the caller's time, moving on by 1 ns per call: no clock read
				long now = ++tick;
				BreakerPermit permit = all.tryAcquire(now);
				permit.promptTokens(1000).record(Outcome.SUCCESS, TTFT_NANOS, now);
				SINK[i & 1023] = permit;
			}
		});
		cases.put("clockRead", calls -> {
			for (int i = 0; i < calls; i++) {
				tick += System.nanoTime() & 1;
			}
		});
		return cases;
	}

	private static Map<String, Case> admissionCases(AdmissionBenchmark admission) {
		Map<String, Case> cases = new LinkedHashMap<>();
		cases.put("bulkheadAcquireRelease", calls -> {
			for (int i = 0; i < calls; i++) {
				admission.bulkheadAcquireRelease1();
			}
		});
		cases.put("lanesAcquireRelease", calls -> {
			for (int i = 0; i < calls; i++) {
				admission.lanesAcquireRelease1();
			}
		});
		cases.put("lanesTryAcquireRelease", calls -> {
			for (int i = 0; i < calls; i++) {
				LanePermit permit = admission.lanes.tryAcquire(Priority.P0);
				permit.release();
			}
		});
		cases.put("admissionFloor", calls -> {
			for (int i = 0; i < calls; i++) {
				SINK[i & 1023] = admission.admissionFloor1();
			}
		});
		return cases;
	}

	/** @return the best CPU nanoseconds per call of each case */
	private static Map<String, Double> time(Map<String, Case> cases) {
		ThreadMXBean threads = ManagementFactory.getThreadMXBean();
		double[] best = new double[cases.size()];
		Arrays.fill(best, Double.MAX_VALUE);
		Case[] runs = cases.values().toArray(new Case[0]);
		for (int round = 0; round < ROUNDS; round++) {
			for (int c = 0; c < runs.length; c++) {
				long start = threads.getCurrentThreadCpuTime();
				runs[c].run(CALLS);
				double perCall = (threads.getCurrentThreadCpuTime() - start) / (double) CALLS;
				if (round >= WARM_UP_ROUNDS) {
					best[c] = Math.min(best[c], perCall);
				}
			}
		}
		Map<String, Double> result = new LinkedHashMap<>();
		int c = 0;
		for (String name : cases.keySet()) {
			result.put(name, best[c++]);
		}
		return result;
	}

	private static String format(Map<String, Double> ns) {
		StringBuilder sb = new StringBuilder();
		ns.forEach((name, value) -> sb.append(String.format("%s %.1f  ", name, value)));
		return sb.append("(CPU ns/call)").toString().trim();
	}
}
