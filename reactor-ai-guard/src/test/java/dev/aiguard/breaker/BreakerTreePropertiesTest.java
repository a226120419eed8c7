package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.testing.ManualClock;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

/**
 * One failing child never trips its parent, whatever it does and however the healthy ones around
 * it behave (each below the failure threshold): random trees, random traffic, a clock that moves so
 * the failing child opens, probes, closes and opens again.
 */
class BreakerTreePropertiesTest {

	private static BreakerConfig config() {
		return BreakerConfig.custom().countWindow(1000).minimumCalls(4).failureRateThreshold(0.5)
				.openWait(Duration.ofSeconds(10)).openWaitJitter(0).minimumDwell(Duration.ZERO).halfOpenProbes(2)
				.successesToClose(1).build();
	}

	private static BreakerTree tree(ManualClock clock, int providers, int endpoints) {
		BreakerTree.Builder b = BreakerTree.builder("prop").clock(clock).config(config());
		for (int p = 0; p < providers; p++) {
			List<String> names = new ArrayList<>();
			for (int e = 0; e < endpoints; e++) {
				names.add("e" + e);
			}
			b.provider("p" + p, names);
		}
		return b.build();
	}

	@Property(tries = 200)
	void oneFailingEndpointNeverTripsItsProviderOrTheSystem(@ForAll @IntRange(min = 1, max = 4) int providers,
			@ForAll @IntRange(min = 2, max = 4) int endpoints, @ForAll long seed) {
		ManualClock clock = new ManualClock(1_000_000_000L);
		BreakerTree tree = tree(clock, providers, endpoints);
		BreakerPath bad = tree.path("p0", "e0");
		drive(tree, clock, new Random(seed), path -> path == bad, () -> {
			for (BreakerNode provider : tree.root().children()) {
				assertThat(provider.breaker().state()).as(provider.name()).isEqualTo(BreakerState.CLOSED);
			}
			assertThat(tree.root().breaker().state()).isEqualTo(BreakerState.CLOSED);
		});
	}

	@Property(tries = 200)
	void oneFailingProviderNeverTripsTheSystem(@ForAll @IntRange(min = 2, max = 4) int providers,
			@ForAll @IntRange(min = 1, max = 3) int endpoints, @ForAll long seed) {
		ManualClock clock = new ManualClock(1_000_000_000L);
		BreakerTree tree = tree(clock, providers, endpoints);
		BreakerNode bad = tree.provider("p0");
		drive(tree, clock, new Random(seed), path -> path.provider() == bad,
				() -> assertThat(tree.root().breaker().state()).isEqualTo(BreakerState.CLOSED));
	}

	/**
	 * 400 calls on random paths: a failing path fails at a random rate of at least one half; a healthy
	 * path fails now and then, always keeping its failure rate below the threshold. The check runs
	 * after every call.
	 */
	private static void drive(BreakerTree tree, ManualClock clock, Random random,
			java.util.function.Predicate<BreakerPath> failing, Runnable check) {
		List<BreakerPath> paths = tree.paths();
		double badRate = 0.5 + random.nextDouble() / 2;
		long[] calls = new long[paths.size()];
		long[] failures = new long[paths.size()];
		for (int step = 0; step < 400; step++) {
			int i = random.nextInt(paths.size());
			BreakerPath path = paths.get(i);
			clock.advance(Duration.ofMillis(random.nextInt(3000)));
			BreakerPermit permit = path.tryAcquire(Priority.values()[random.nextInt(3)]);
			if (permit != null) {
				boolean fail = failing.test(path) ? random.nextDouble() < badRate
						: random.nextDouble() < 0.4 && (failures[i] + 1) * 2 < calls[i] + 1;
				calls[i]++;
				if (fail) {
					failures[i]++;
				}
				permit.record(fail ? Outcome.FAILURE : Outcome.SUCCESS, 1);
			}
			check.run();
		}
	}
}
