package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.testing.ManualClock;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * One failing child never trips its parent, whatever it does and however the healthy ones around
 * it behave (each below the failure threshold): random trees, random traffic, a clock that moves so
 * the failing child opens, probes, closes and opens again. More generally, a parent whose failing
 * children stay below its share (or its minimum) while a healthy child carries traffic never trips.
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
	 * A parent follows its children: on a random tree (each provider with its own number of endpoints,
	 * some of them failing), with a random minimum and share, every parent that keeps at least one
	 * healthy child carrying traffic and whose failing children can never reach the share (or the
	 * minimum) stays CLOSED, whatever the traffic, while the failing endpoints trip, probe and re-open.
	 * Every endpoint carries traffic from the start; the count windows never let it slide out.
	 */
	@Property(tries = 300)
	void aParentWhoseFailingChildrenStayBelowTheShareNeverTrips(@ForAll @IntRange(min = 2, max = 4) int providers,
			@ForAll @IntRange(min = 2, max = 3) int childrenToTrip,
			@ForAll("shares") double share, @ForAll long seed) {
		Random random = new Random(seed);
		ManualClock clock = new ManualClock(1_000_000_000L);
		BreakerTree.Builder b = BreakerTree.builder("prop").clock(clock).config(config())
				.childrenToTrip(childrenToTrip).childrenShareToTrip(share);
		Set<String> failingPaths = new HashSet<>();
		List<String> mayTrip = new ArrayList<>();
		for (int p = 0; p < providers; p++) {
			int endpoints = 1 + random.nextInt(4);
			int failing = random.nextInt(endpoints + 1);
			List<String> names = new ArrayList<>();
			for (int e = 0; e < endpoints; e++) {
				names.add("e" + e);
				if (e < failing) {
					failingPaths.add("prop/p" + p + "/e" + e);
				}
			}
			b.provider("p" + p, names);
			// its failing endpoints are at most that many of the children with traffic: the healthy ones
			// always carry some
			if (reaches(failing, endpoints, childrenToTrip, share)) {
				mayTrip.add("p" + p);
			}
		}
		BreakerTree tree = b.build();
		List<BreakerNode> underTest = new ArrayList<>();
		for (BreakerNode provider : tree.root().children()) {
			if (!mayTrip.contains(provider.name())) {
				underTest.add(provider);
			}
		}
		boolean systemUnderTest = underTest.size() >= 1 && !reaches(mayTrip.size(), providers, childrenToTrip, share);
		if (systemUnderTest) {
			underTest.add(tree.root());
		}
		Assume.that(!underTest.isEmpty());
		for (BreakerPath path : tree.paths()) {
			path.acquire(Priority.P0).record(Outcome.SUCCESS, 1); // every child carries traffic
		}
		drive(tree, clock, random, path -> failingPaths.contains(path.name()), () -> {
			for (BreakerNode parent : underTest) {
				assertThat(parent.breaker().state()).as(parent.breaker().name()).isEqualTo(BreakerState.CLOSED);
			}
		});
	}

	@Provide
	Arbitrary<Double> shares() {
		return Arbitraries.of(0.25, 0.4, 0.5, 0.6, 2.0 / 3, 0.75, 1.0);
	}

	/**
	 * Whether {@code failing} of {@code children} (all with traffic) reach the parent's rule; with fewer
	 * failing, and the others healthy with traffic, the share only falls.
	 */
	private static boolean reaches(int failing, int children, int childrenToTrip, double share) {
		return failing >= childrenToTrip && (double) failing / children >= share;
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
