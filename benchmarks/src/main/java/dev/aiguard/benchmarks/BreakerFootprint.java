package dev.aiguard.benchmarks;

import org.openjdk.jol.info.GraphLayout;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;

/**
 * Measures the memory one breaker with a 60-bucket window keeps alive, with JOL's object-graph walk.
 * The config (shareable between breakers) is reported apart.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.BreakerFootprint
 * </pre>
 */
public final class BreakerFootprint {

	private BreakerFootprint() {
	}

	public static void main(String[] args) {
		BreakerConfig config = BreakerConfig.defaults();
		CircuitBreaker breaker = CircuitBreaker.of("footprint", config);
		// use it once so lazily created parts exist
		breaker.tryAcquire().record(dev.aiguard.core.Outcome.SUCCESS, 1_000_000L);
		breaker.snapshot();

		GraphLayout all = GraphLayout.parseInstance(breaker);
		GraphLayout shared = GraphLayout.parseInstance(config);
		System.out.println("window: " + config.windowSize() + " x " + config.bucketLength());
		System.out.println("breaker graph, config included: " + all.totalSize() + " bytes in " + all.totalCount()
				+ " objects");
		System.out.println("config graph (shareable): " + shared.totalSize() + " bytes");
		System.out.println("breaker without config: " + all.subtract(shared).totalSize() + " bytes");
		System.out.println(all.subtract(shared).toFootprint());
	}
}
