package dev.aiguard.breaker;

import static dev.aiguard.breaker.BreakerTreeTest.endpointConfig;
import static dev.aiguard.breaker.BreakerTreeTest.parentConfig;
import static dev.aiguard.breaker.BreakerTreeTest.record;
import static dev.aiguard.breaker.BreakerTreeTest.state;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.testing.ManualClock;

/**
 * A parent follows its children's own judgements (manual clock): it trips when at least
 * {@code childrenToTrip} children are failing and they are at least {@code childrenShareToTrip} of
 * the children with traffic, never on a rate pooled over children that each judge themselves
 * healthy; it closes once its probes are healthy and no failing child still waits out its own open
 * wait.
 */
class BreakerTreeCorrelationTest {

	private static final long FAST = Duration.ofMillis(100).toNanos();

	private final ManualClock clock = new ManualClock(1_000_000_000L);

	/** Calls {@code path} once when it admits; false when it refuses. */
	private static boolean call(BreakerPath path, Outcome outcome) {
		BreakerPermit permit = path.tryAcquire(Priority.P1);
		if (permit == null) {
			return false;
		}
		permit.record(outcome, outcome == Outcome.SUCCESS ? FAST : -1);
		return true;
	}

	// ---- the two ways a parent tripped while its children were healthy by their own judgement ----

	@Test
	void oneFailingEndpointUnderEachOfTwoProvidersNeverTripsTheSystemNorRefusesTheHealthyThird() {
		// the defaults at every level: 60 s windows, 20 calls, 50 %, 60 s open wait, 5 s dwell
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).provider("a", "a1", "a2")
				.provider("b", "b1", "b2").provider("c", "c1", "c2").build();
		BreakerPath a1 = tree.path("a", "a1");
		BreakerPath b1 = tree.path("b", "b1");
		BreakerPath c1 = tree.path("c", "c1");
		for (int round = 1; round <= 1_200; round++) {
			call(a1, Outcome.FAILURE);
			call(b1, Outcome.FAILURE);
			assertThat(call(c1, Outcome.SUCCESS)).as("the healthy provider admits in round %d", round).isTrue();
			assertThat(state(tree.provider("a"))).as("provider a, round %d", round).isEqualTo(BreakerState.CLOSED);
			assertThat(state(tree.provider("b"))).as("provider b, round %d", round).isEqualTo(BreakerState.CLOSED);
			assertThat(state(tree.root())).as("the system, round %d", round).isEqualTo(BreakerState.CLOSED);
			clock.advance(Duration.ofMillis(250));
		}
		// the failing endpoints did trip, and went on opening and probing on their own
		assertThat(a1.endpoint().breaker().rejectedCalls()).isPositive();
		assertThat(b1.endpoint().breaker().rejectedCalls()).isPositive();
	}

	@Test
	void twoFullyFailingProvidersTripTheSystemOnlyOnceBothHaveTrippedThemselves() {
		BreakerConfig endpoints = BreakerConfig.custom().countWindow(100).minimumCalls(20).openWaitJitter(0).build();
		// parents that judged a pooled rate would have enough calls long before an endpoint has
		BreakerConfig parents = BreakerConfig.custom().countWindow(100).minimumCalls(5).openWaitJitter(0).build();
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(endpoints).providerConfig(parents)
				.systemConfig(parents).provider("a", "a1", "a2").provider("b", "b1", "b2").provider("c", "c1")
				.build();
		List<BreakerPath> failing = List.of(tree.path("a", "a1"), tree.path("a", "a2"), tree.path("b", "b1"),
				tree.path("b", "b2"));
		int tripRound = 0;
		for (int round = 1; round <= 40 && tripRound == 0; round++) {
			failing.forEach(path -> call(path, Outcome.FAILURE));
			call(tree.path("c", "c1"), Outcome.SUCCESS);
			if (state(tree.root()) != BreakerState.CLOSED) {
				tripRound = round;
				assertThat(state(tree.provider("a"))).as("provider a when the system tripped")
						.isEqualTo(BreakerState.OPEN);
				assertThat(state(tree.provider("b"))).as("provider b when the system tripped")
						.isEqualTo(BreakerState.OPEN);
			}
			clock.advance(Duration.ofMillis(100));
		}
		// each endpoint judges itself at its 20th call; two of three providers down is the share
		assertThat(tripRound).isEqualTo(20);
		assertThat(state(tree.root())).isEqualTo(BreakerState.OPEN);
	}

	// ---- the share and the minimum ----

	@Test
	void idleChildrenDoNotCountAndTheShareIsOfChildrenWithTraffic() {
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(endpointConfig())
				.providerConfig(parentConfig()).systemConfig(parentConfig()).childrenShareToTrip(0.6)
				.provider("p", "a", "b", "c", "d", "e").provider("q", "x").build();
		record(tree.path("p", "c"), Outcome.SUCCESS, 1);
		record(tree.path("p", "d"), Outcome.SUCCESS, 1);
		record(tree.path("p", "a"), Outcome.FAILURE, 4);
		record(tree.path("p", "b"), Outcome.FAILURE, 4);
		// 2 failing of 4 with traffic (e is idle): 0.5 < 0.6
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.CLOSED);
		CorrelatedFailurePolicy policy = (CorrelatedFailurePolicy) tree.provider("p").breaker().config().tripPolicy();
		assertThat(policy.pressure(clock.nanoTime())).isCloseTo(0.5 / 0.6, org.assertj.core.data.Offset.offset(1e-9));
		record(tree.path("p", "e"), Outcome.FAILURE, 4);
		// 3 of 5: 0.6
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void theMinimumCountsFailingChildrenWhateverTheShare() {
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(endpointConfig())
				.providerConfig(parentConfig()).childrenToTrip(3).provider("p", "a", "b", "c", "d").build();
		record(tree.path("p", "a"), Outcome.FAILURE, 4);
		record(tree.path("p", "b"), Outcome.FAILURE, 4);
		// 2 of 2 with traffic is the whole share, but 3 must fail
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.CLOSED);
		record(tree.path("p", "c"), Outcome.FAILURE, 4);
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void aParentWithOneChildFollowsNoneAlone() {
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(endpointConfig())
				.providerConfig(parentConfig()).systemConfig(parentConfig()).provider("p", "only")
				.provider("q", "x", "y").build();
		record(tree.path("q", "x"), Outcome.SUCCESS, 2);
		record(tree.path("p", "only"), Outcome.FAILURE, 4);
		// one child is never two: the endpoint refuses its calls itself
		assertThat(state(tree.path("p", "only").endpoint())).isEqualTo(BreakerState.OPEN);
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.CLOSED);
		assertThat(state(tree.root())).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void aChildAtItsTripLimitIsFailingBeforeItOpens() {
		BreakerConfig delayed = BreakerConfig.from(endpointConfig()).tripDelay(Duration.ofSeconds(30)).build();
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(delayed)
				.providerConfig(parentConfig()).provider("p", "a", "b", "c").build();
		record(tree.path("p", "c"), Outcome.SUCCESS, 1);
		record(tree.path("p", "a"), Outcome.FAILURE, 4);
		record(tree.path("p", "b"), Outcome.FAILURE, 4);
		// both endpoints wait out their delay, CLOSED; by their own policy they trip: the provider does
		assertThat(state(tree.path("p", "a").endpoint())).isEqualTo(BreakerState.CLOSED);
		assertThat(state(tree.path("p", "b").endpoint())).isEqualTo(BreakerState.CLOSED);
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void anOperatorsStateIsNoJudgement() {
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(endpointConfig())
				.providerConfig(parentConfig()).provider("p", "a", "b", "c").build();
		tree.path("p", "b").endpoint().breaker().transitionToForcedOpen();
		tree.path("p", "c").endpoint().breaker().transitionToDisabled();
		record(tree.path("p", "c"), Outcome.FAILURE, 6);
		record(tree.path("p", "a"), Outcome.FAILURE, 4);
		// a is the one failing child the provider can judge
		assertThat(state(tree.path("p", "a").endpoint())).isEqualTo(BreakerState.OPEN);
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.CLOSED);
	}

	// ---- re-closing ----

	@Test
	void aParentClosesOnlyOnceNoFailingChildWaitsOutItsOpenWait() {
		BreakerConfig slowEndpoints = BreakerConfig.from(endpointConfig()).openWait(Duration.ofSeconds(30))
				.maxOpenWait(Duration.ofMinutes(5)).build();
		List<BreakerEvent.StateTransition> transitions = new CopyOnWriteArrayList<>();
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(slowEndpoints)
				.providerConfig(parentConfig()).provider("p", "a", "b", "c").provider("q", "x").build();
		tree.provider("p").breaker().addListener(e -> {
			if (e instanceof BreakerEvent.StateTransition t) {
				transitions.add(t);
			}
		});
		record(tree.path("p", "c"), Outcome.SUCCESS, 1);
		record(tree.path("p", "a"), Outcome.FAILURE, 4);
		record(tree.path("p", "b"), Outcome.FAILURE, 4);
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.OPEN);

		// 10 s: the provider probes through c, healthy, but a and b still wait out their 30 s
		clock.advance(Duration.ofSeconds(10));
		record(tree.path("p", "c"), Outcome.SUCCESS, 2);
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.OPEN);
		assertThat(transitions.get(transitions.size() - 1).reason())
				.isEqualTo("all 2 probes used while 2 of 3 children with traffic are still failing");

		// 30 s: a and b may probe now (their next call does): the provider's healthy probes close it
		clock.advance(Duration.ofSeconds(20));
		record(tree.path("p", "c"), Outcome.SUCCESS, 2);
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.CLOSED);
		assertThat(state(tree.path("p", "a").endpoint())).isEqualTo(BreakerState.OPEN);
		// b's probes close b; a's probe fails and re-opens a alone: one failing child does not trip the provider
		record(tree.path("p", "b"), Outcome.SUCCESS, 2);
		assertThat(state(tree.path("p", "b").endpoint())).isEqualTo(BreakerState.CLOSED);
		record(tree.path("p", "a"), Outcome.FAILURE, 1);
		assertThat(state(tree.path("p", "a").endpoint())).isEqualTo(BreakerState.OPEN);
		assertThat(state(tree.provider("p"))).isEqualTo(BreakerState.CLOSED);
	}

	// ---- settings ----

	@Test
	void theTreeTakesAndValidatesItsShare() {
		assertThat(BreakerTree.builder("llm").provider("p", "e").build().childrenShareToTrip()).isEqualTo(0.5);
		BreakerTree tree = BreakerTree.builder("llm").childrenShareToTrip(1.0).childrenToTrip(3).provider("p", "e")
				.build();
		assertThat(tree.childrenShareToTrip()).isEqualTo(1.0);
		assertThat(tree.childrenToTrip()).isEqualTo(3);
		CorrelatedFailurePolicy policy = (CorrelatedFailurePolicy) tree.root().breaker().config().tripPolicy();
		assertThat(policy.shareToTrip()).isEqualTo(1.0);
		assertThat(policy.childrenToTrip()).isEqualTo(3);
		for (double bad : new double[] {0, -0.1, 1.01, Double.NaN}) {
			assertThatThrownBy(() -> BreakerTree.builder("llm").childrenShareToTrip(bad))
					.isInstanceOf(IllegalArgumentException.class)
					.hasMessageStartingWith("childrenShareToTrip must be a fraction in (0, 1], was " + bad);
		}
		assertThatThrownBy(() -> BreakerTree.builder("llm").childrenShareToTrip(50))
				.hasMessageContaining("write 0.5 for 50 %");
		BreakerTree shared = BreakerRegistry.builder().clock(clock).build()
				.tree("llm", t -> t.childrenShareToTrip(0.75).provider("p", "e"));
		assertThat(shared.childrenShareToTrip()).isEqualTo(0.75);
	}
}
