package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.testing.ManualClock;
import reactor.core.scheduler.Schedulers;
import reactor.test.util.RaceTestUtils;

/**
 * Levels share state (a provider and the system see every call of their endpoints): concurrent
 * permits across paths are settled exactly once per level, a refusal below never leaks a parent's
 * permit or probe slot, racing settlements of one composite permit count once, and children
 * tripping on several threads while the parent is judged trip the parent once, with two failing.
 */
class BreakerTreeRaceTest {

	private final ManualClock clock = new ManualClock(1_000_000_000L);

	/** Never trips within a test: only counts. */
	private static BreakerConfig counting() {
		return BreakerConfig.custom().countWindow(100_000).minimumCalls(100_000).failureRateThreshold(1.0)
				.halfOpenProbes(4).successesToClose(4).openWait(Duration.ofSeconds(10)).minimumDwell(Duration.ZERO)
				.build();
	}

	private BreakerTree tree() {
		return BreakerTree.builder("race").clock(clock).config(counting()).provider("p", "a", "b")
				.provider("q", "x").build();
	}

	@Test
	void concurrentCallsOnPathsSharingLevelsAreCountedOncePerLevel() {
		for (int round = 0; round < 20; round++) {
			BreakerTree tree = tree();
			int perThread = 500;
			Runnable[] tasks = new Runnable[4];
			String[][] where = {{"p", "a"}, {"p", "b"}, {"q", "x"}, {"p", "a"}};
			for (int t = 0; t < tasks.length; t++) {
				BreakerPath path = tree.path(where[t][0], where[t][1]);
				Outcome outcome = t % 2 == 0 ? Outcome.FAILURE : Outcome.SUCCESS;
				tasks[t] = () -> {
					for (int i = 0; i < perThread; i++) {
						BreakerPermit permit = path.acquire(Priority.P1);
						permit.record(outcome, 1);
						permit.record(Outcome.SUCCESS, 1); // ignored
					}
				};
			}
			RaceTestUtils.race(Schedulers.boundedElastic(), tasks);

			assertThat(tree.root().breaker().snapshot().calls()).isEqualTo(4L * perThread);
			assertThat(tree.root().breaker().snapshot().failures()).isEqualTo(2L * perThread);
			assertThat(tree.provider("p").breaker().snapshot().calls()).isEqualTo(3L * perThread);
			assertThat(tree.provider("p").breaker().snapshot().failures()).isEqualTo(perThread);
			assertThat(tree.provider("q").breaker().snapshot().calls()).isEqualTo(perThread);
			assertThat(tree.path("p", "a").endpoint().breaker().snapshot().calls()).isEqualTo(2L * perThread);
			assertThat(tree.path("p", "b").endpoint().breaker().snapshot().failures()).isZero();
		}
	}

	@Test
	void racingSettlementsOfOneCompositeProbeCountOnceAtEveryLevel() {
		for (int round = 0; round < 300; round++) {
			BreakerTree tree = halfOpenTree();
			BreakerPath a = tree.path("p", "a");
			BreakerPermit permit = a.acquire(Priority.P0);
			RaceTestUtils.race(Schedulers.boundedElastic(), () -> permit.record(Outcome.FAILURE, -1),
					() -> permit.record(Outcome.CANCELLED, -1));
			for (BreakerNode node : new BreakerNode[] {a.system(), a.provider(), a.endpoint()}) {
				long tally = node.breaker().phase().probes;
				int counted = BreakerPhase.field(tally, BreakerPhase.CALLS);
				int granted = node.breaker().phase().granted;
				// the failure counted (one probe call, the slot kept) or the cancel won (nothing, slot back)
				assertThat(counted + (1 - granted)).as(node.name()).isEqualTo(1);
				assertThat(counted).as("the same outcome at every level").isEqualTo(
						BreakerPhase.field(a.endpoint().breaker().phase().probes, BreakerPhase.CALLS));
			}
		}
	}

	@Test
	void refusalsBelowNeverLeakAParentsProbeSlot() {
		for (int round = 0; round < 100; round++) {
			BreakerTree tree = halfOpenTree();
			tree.path("p", "b").endpoint().breaker().transitionToForcedOpen();
			BreakerPath a = tree.path("p", "a");
			BreakerPath b = tree.path("p", "b");
			AtomicInteger granted = new AtomicInteger();
			long systemCalls = tree.root().breaker().snapshot().calls();
			Runnable refused = () -> {
				for (int i = 0; i < 50; i++) {
					assertThat(b.tryAcquire(Priority.P0)).isNull();
				}
			};
			Runnable probing = () -> {
				for (int i = 0; i < 10; i++) {
					BreakerPermit permit = a.tryAcquire(Priority.P0);
					if (permit != null) {
						granted.incrementAndGet();
						permit.record(Outcome.CANCELLED, -1);
					}
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), refused, refused, probing, probing);

			assertThat(granted.get()).isEqualTo(20); // cancelled probes give their slots back
			assertThat(tree.root().breaker().phase().granted).isZero();
			assertThat(tree.provider("p").breaker().phase().granted).isZero();
			assertThat(tree.root().breaker().snapshot().calls()).isEqualTo(systemCalls);
			assertThat(tree.root().breaker().phase().probes).isZero();
		}
	}

	@Test
	void childrenTrippingOnSeveralThreadsTripTheirParentOnceAndOnlyWithTwoFailing() {
		BreakerConfig endpoints = BreakerConfig.custom().countWindow(1000).minimumCalls(50).failureRateThreshold(0.5)
				.openWait(Duration.ofSeconds(10)).minimumDwell(Duration.ZERO).build();
		for (int round = 0; round < 50; round++) {
			BreakerTree tree = BreakerTree.builder("race").clock(clock).endpointConfig(endpoints)
					.provider("p", "a", "b", "c").provider("q", "x").build();
			BreakerNode provider = tree.provider("p");
			CorrelatedFailurePolicy policy = (CorrelatedFailurePolicy) provider.breaker().config().tripPolicy();
			List<Integer> failingAtTrip = new CopyOnWriteArrayList<>();
			provider.breaker().addListener(e -> {
				if (e instanceof BreakerEvent.StateTransition t && t.to() == BreakerState.OPEN) {
					int failing = 0;
					for (BreakerNode endpoint : provider.children()) {
						BreakerSnapshot w = endpoint.breaker().snapshot();
						if (endpoint.breaker().state() != BreakerState.CLOSED
								|| w.calls() >= 50 && w.failureRate() >= 0.5) {
							failing++;
						}
					}
					failingAtTrip.add(failing);
				}
			});
			Runnable[] tasks = new Runnable[4];
			String[] endpoint = {"a", "b", "c"};
			for (int t = 0; t < 3; t++) {
				BreakerPath path = tree.path("p", endpoint[t]);
				Outcome outcome = t < 2 ? Outcome.FAILURE : Outcome.SUCCESS;
				tasks[t] = () -> {
					for (int i = 0; i < 200; i++) {
						BreakerPermit permit = path.tryAcquire(Priority.P1);
						if (permit != null) {
							permit.record(outcome, 1);
						}
					}
				};
			}
			// the parent's evaluation and the tree's snapshot racing the children's transitions
			tasks[3] = () -> {
				for (int i = 0; i < 200; i++) {
					assertThat(policy.pressure(clock.nanoTime())).isBetween(0.0, 2.0);
					tree.snapshot();
				}
			};
			RaceTestUtils.race(Schedulers.boundedElastic(), tasks);

			assertThat(failingAtTrip).as("round %d", round).containsExactly(2);
			assertThat(provider.breaker().state()).isEqualTo(BreakerState.OPEN);
			assertThat(tree.path("p", "c").endpoint().breaker().state()).isEqualTo(BreakerState.CLOSED);
			// one failing provider of two is not the system's share
			assertThat(tree.root().breaker().state()).isEqualTo(BreakerState.CLOSED);
		}
	}

	/** Every breaker of a fresh tree in HALF_OPEN, four probe slots each, no probe counted yet. */
	private BreakerTree halfOpenTree() {
		BreakerConfig trippable = BreakerConfig.custom().countWindow(100).minimumCalls(1).failureRateThreshold(0.5)
				.halfOpenProbes(4).successesToClose(4).openWait(Duration.ofSeconds(10)).openWaitJitter(0)
				.minimumDwell(Duration.ZERO).build();
		// a parent judges a child's window from 2 calls on, so only opened children trip it here
		BreakerConfig parents = BreakerConfig.from(trippable).minimumCalls(2).build();
		BreakerTree tree = BreakerTree.builder("race").clock(clock).endpointConfig(trippable).providerConfig(parents)
				.systemConfig(parents).provider("p", "a", "b").provider("q", "x", "y").build();
		// each endpoint's failure opens it; two open endpoints open their provider; two providers the system
		for (BreakerPath path : tree.paths()) {
			path.acquire(Priority.P1).record(Outcome.FAILURE, -1);
		}
		assertThat(tree.root().breaker().state()).isEqualTo(BreakerState.OPEN);
		clock.advance(Duration.ofSeconds(10));
		for (BreakerPath path : tree.paths()) {
			path.acquire(Priority.P0).record(Outcome.CANCELLED, -1);
		}
		for (BreakerPath path : tree.paths()) {
			for (BreakerNode node : new BreakerNode[] {path.system(), path.provider(), path.endpoint()}) {
				assertThat(node.breaker().state()).as(node.name()).isEqualTo(BreakerState.HALF_OPEN);
				assertThat(node.breaker().phase().granted).isZero();
			}
		}
		return tree;
	}
}
