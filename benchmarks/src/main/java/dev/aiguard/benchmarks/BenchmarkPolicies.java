package dev.aiguard.benchmarks;

import java.time.Duration;

import dev.aiguard.GuardPolicy;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.stall.StallSpec;

/** The policy a WebFlux user would configure, shared by the benchmarks. */
final class BenchmarkPolicies {

	private BenchmarkPolicies() {
	}

	static GuardPolicy fullPolicy(GuardMetrics metrics) {
		return GuardPolicy.builder("bench")
				.stall(StallSpec.defaults()
						.firstTokenTimeout(Duration.ofSeconds(10))
						.idleTimeout(Duration.ofSeconds(30))
						.maxDuration(Duration.ofMinutes(5)))
				.metrics(metrics)
				.build();
	}
}
