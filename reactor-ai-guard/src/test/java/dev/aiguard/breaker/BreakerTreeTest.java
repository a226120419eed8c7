package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.testing.ManualClock;

/**
 * The breaker hierarchy on a manual clock: one permit per level settled once with one outcome,
 * refusals that hand the parents' permits back, parents that trip on correlated failure only,
 * the alternatives a sibling fallback walks, snapshots, the registry, and bad input.
 */
class BreakerTreeTest {

	private static final long FAST = Duration.ofMillis(100).toNanos();

	private final ManualClock clock = new ManualClock(1_000_000_000L);

	/** Endpoints trip at 50 % over 4 calls; parents judge their children over 6 calls. */
	static BreakerConfig endpointConfig() {
		return BreakerConfig.custom().countWindow(100).minimumCalls(4).failureRateThreshold(0.5)
				.openWait(Duration.ofSeconds(10)).openWaitJitter(0).minimumDwell(Duration.ZERO).halfOpenProbes(2)
				.successesToClose(1).build();
	}

	static BreakerConfig parentConfig() {
		return BreakerConfig.custom().countWindow(100).minimumCalls(6).failureRateThreshold(0.5)
				.openWait(Duration.ofSeconds(10)).openWaitJitter(0).minimumDwell(Duration.ZERO).halfOpenProbes(2)
				.successesToClose(1).build();
	}

	private BreakerTree tree() {
		return BreakerTree.builder("llm").clock(clock).endpointConfig(endpointConfig()).providerConfig(parentConfig())
				.systemConfig(parentConfig()).provider("openai", "a", "b", "c").provider("anthropic", "x", "y").build();
	}

	static void record(BreakerPath path, Outcome outcome, int times) {
		for (int i = 0; i < times; i++) {
			BreakerPermit permit = path.tryAcquire(Priority.P1);
			assertThat(permit).as("permit %d on %s", i, path).isNotNull();
			permit.record(outcome, outcome == Outcome.SUCCESS ? FAST : -1);
		}
	}

	static BreakerState state(BreakerNode node) {
		return node.breaker().state();
	}

	// ---- permits ----

	@Test
	void aCallTakesOnePermitPerLevelAndSettlesEachOnceWithTheSameOutcome() {
		BreakerTree tree = tree();
		BreakerPath a = tree.path("openai", "a");
		BreakerPermit permit = a.acquire(Priority.P0);
		permit.record(Outcome.STALLED, -1);
		permit.record(Outcome.SUCCESS, FAST);
		permit.record(Outcome.FAILURE, -1, clock.nanoTime());

		for (BreakerNode node : List.of(a.endpoint(), a.provider(), a.system())) {
			BreakerSnapshot s = node.breaker().snapshot();
			assertThat(s.calls()).as(node.name()).isEqualTo(1);
			assertThat(s.failures()).as(node.name()).isEqualTo(1);
			assertThat(s.stalls()).as(node.name()).isEqualTo(1);
		}
		assertThat(tree.path("openai", "b").endpoint().breaker().snapshot().calls()).isZero();
	}

	@Test
	void promptTokensReachEveryLevel() {
		BreakerConfig weighs = BreakerConfig.from(endpointConfig()).slowTimeToFirstToken(Duration.ofSeconds(1))
				.slowTimeToFirstTokenPerPromptToken(Duration.ofMillis(1)).build();
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(weighs).provider("p", "e").build();
		BreakerPath path = tree.path("p", "e");
		assertThat(path.weighsPromptTokens()).isTrue();
		// 1.5 s to the first token is not slow for a 1000-token prompt (1 s + 1 s)
		path.acquire(Priority.P1).promptTokens(1000).record(Outcome.SUCCESS, Duration.ofMillis(1500).toNanos());
		assertThat(path.endpoint().breaker().snapshot().slowCalls()).isZero();
		path.acquire(Priority.P1).record(Outcome.SUCCESS, Duration.ofMillis(1500).toNanos());
		assertThat(path.endpoint().breaker().snapshot().slowCalls()).isEqualTo(1);
	}

	@Test
	void aCancelledCallCountsNowhere() {
		BreakerTree tree = tree();
		BreakerPath a = tree.path("openai", "a");
		a.acquire(Priority.P1).record(Outcome.CANCELLED, -1);
		assertThat(a.system().breaker().snapshot().calls()).isZero();
		assertThat(a.provider().breaker().snapshot().calls()).isZero();
		assertThat(a.endpoint().breaker().snapshot().calls()).isZero();
	}

	@Test
	void anEndpointsRefusalHandsTheParentsPermitsBackAndNamesTheEndpoint() {
		BreakerTree tree = tree();
		BreakerPath a = tree.path("openai", "a");
		a.endpoint().breaker().transitionToForcedOpen();

		assertThatThrownBy(() -> a.acquire(Priority.P0)).isInstanceOfSatisfying(BreakerOpenException.class, e -> {
			assertThat(e.breakerName()).isEqualTo("llm/openai/a");
			assertThat(e.state()).isEqualTo(BreakerState.FORCED_OPEN);
		});
		assertThat(a.tryAcquire(Priority.P0)).isNull();
		assertThat(a.endpoint().breaker().rejectedCalls()).isEqualTo(2);
		assertThat(a.provider().breaker().rejectedCalls()).isZero();
		assertThat(a.provider().breaker().snapshot().calls()).isZero();
		assertThat(a.system().breaker().snapshot().calls()).isZero();
	}

	@Test
	void aRefusalBelowAHalfOpenParentGivesItsProbeSlotBack() {
		BreakerTree tree = tree();
		BreakerPath a = tree.path("openai", "a");
		BreakerPath b = tree.path("openai", "b");
		openThroughProbes(tree);
		// the system is HALF_OPEN with 2 probe slots; an endpoint below refuses many times
		b.endpoint().breaker().transitionToForcedOpen();
		for (int i = 0; i < 5; i++) {
			assertThat(b.tryAcquire(Priority.P0)).isNull();
		}
		assertThat(state(tree.root())).isEqualTo(BreakerState.HALF_OPEN);
		assertThat(tree.root().breaker().phase().granted).isZero();
		// both slots are still there for a path that admits
		BreakerPermit first = a.tryAcquire(Priority.P0);
		BreakerPermit second = a.tryAcquire(Priority.P0);
		assertThat(first).isNotNull();
		assertThat(second).isNotNull();
		assertThat(a.tryAcquire(Priority.P0)).isNull();
	}

	/** Puts the system breaker in HALF_OPEN, the levels below CLOSED. */
	private void openThroughProbes(BreakerTree tree) {
		tree.root().breaker().transitionToForcedOpen();
		tree.root().breaker().transitionToClosed();
		// two providers failing trip the system; then operators close the providers and endpoints
		record(tree.path("openai", "a"), Outcome.FAILURE, 4);
		record(tree.path("openai", "b"), Outcome.FAILURE, 4);
		record(tree.path("anthropic", "x"), Outcome.FAILURE, 4);
		record(tree.path("anthropic", "y"), Outcome.FAILURE, 4);
		assertThat(state(tree.root())).isEqualTo(BreakerState.OPEN);
		for (BreakerNode provider : tree.root().children()) {
			provider.breaker().transitionToClosed();
			provider.children().forEach(e -> e.breaker().transitionToClosed());
		}
		clock.advance(Duration.ofSeconds(10));
		BreakerPermit probe = tree.path("openai", "c").tryAcquire(Priority.P0); // moves the system to HALF_OPEN
		assertThat(probe).isNotNull();
		probe.record(Outcome.CANCELLED, -1);
		assertThat(state(tree.root())).isEqualTo(BreakerState.HALF_OPEN);
	}

	// ---- correlated failure ----

	@Test
	void oneFailingEndpointTripsOnlyItself() {
		BreakerTree tree = tree();
		BreakerPath a = tree.path("openai", "a");
		record(tree.path("openai", "b"), Outcome.SUCCESS, 3);
		record(a, Outcome.FAILURE, 4);

		assertThat(state(a.endpoint())).isEqualTo(BreakerState.OPEN);
		assertThat(state(a.provider())).isEqualTo(BreakerState.CLOSED);
		assertThat(state(tree.root())).isEqualTo(BreakerState.CLOSED);
		// its refusals never reach the provider, however many
		for (int i = 0; i < 50; i++) {
			assertThat(a.tryAcquire(Priority.P0)).isNull();
		}
		assertThat(a.provider().breaker().snapshot().calls()).isEqualTo(7);
		assertThat(a.provider().breaker().snapshot().failures()).isEqualTo(4);
		assertThat(state(a.provider())).isEqualTo(BreakerState.CLOSED);
		// its siblings serve on
		record(tree.path("openai", "c"), Outcome.SUCCESS, 5);
	}

	@Test
	void twoOfThreeEndpointsFailingTripTheProviderButNotTheSystem() {
		BreakerTree tree = tree();
		record(tree.path("openai", "a"), Outcome.FAILURE, 4);
		assertThat(state(tree.provider("openai"))).isEqualTo(BreakerState.CLOSED);
		record(tree.path("openai", "b"), Outcome.FAILURE, 4);

		assertThat(state(tree.provider("openai"))).isEqualTo(BreakerState.OPEN);
		assertThat(state(tree.root())).isEqualTo(BreakerState.CLOSED);
		assertThat(state(tree.path("openai", "c").endpoint())).isEqualTo(BreakerState.CLOSED);
		assertThatThrownBy(() -> tree.path("openai", "c").acquire(Priority.P0))
				.isInstanceOfSatisfying(BreakerOpenException.class,
						e -> assertThat(e.breakerName()).isEqualTo("llm/openai"));
		record(tree.path("anthropic", "x"), Outcome.SUCCESS, 3);
	}

	@Test
	void aStormSpreadThinTripsTheProviderOnlyOnceTwoEndpointsJudgeThemselvesFailing() {
		BreakerConfig patient = BreakerConfig.from(endpointConfig()).minimumCalls(8).build();
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(patient)
				.providerConfig(parentConfig()).systemConfig(parentConfig()).provider("openai", "a", "b", "c")
				.provider("anthropic", "x").build();
		// 529 overload on every endpoint, 2 of 3 calls: the pooled rate is over every threshold from the
		// start, but no endpoint has the calls to judge itself yet, so the provider waits for them
		List<String> endpoints = List.of("a", "b", "c");
		int calls = 0;
		for (int i = 0; i < 60 && state(tree.provider("openai")) == BreakerState.CLOSED; i++) {
			BreakerPermit permit = tree.path("openai", endpoints.get(i % 3)).tryAcquire(Priority.P1);
			if (permit != null) {
				permit.record(i / 3 % 3 == 2 ? Outcome.SUCCESS : Outcome.FAILURE, -1);
			}
			calls++;
			long tripped = tree.provider("openai").children().stream()
					.filter(e -> state(e) != BreakerState.CLOSED).count();
			assertThat(state(tree.provider("openai")) == BreakerState.CLOSED || tripped >= 2)
					.as("the provider is OPEN after call %d with %d endpoints tripped", calls, tripped).isTrue();
		}
		assertThat(state(tree.provider("openai"))).isEqualTo(BreakerState.OPEN);
		// a's 8th call (the 22nd) trips a, b's (the 23rd) trips b and with it the provider
		assertThat(calls).isEqualTo(23);
		assertThat(state(tree.root())).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void aStormOnOneEndpointAloneDoesNotTripItsProvider() {
		BreakerConfig patient = BreakerConfig.from(endpointConfig()).minimumCalls(50).build();
		BreakerTree tree = BreakerTree.builder("llm").clock(clock).endpointConfig(patient)
				.providerConfig(parentConfig()).provider("openai", "a", "b", "c").build();
		record(tree.path("openai", "b"), Outcome.SUCCESS, 10);
		record(tree.path("openai", "a"), Outcome.FAILURE, 50);
		assertThat(state(tree.path("openai", "a").endpoint())).isEqualTo(BreakerState.OPEN);
		assertThat(state(tree.provider("openai"))).isEqualTo(BreakerState.CLOSED);
		CorrelatedFailurePolicy policy = (CorrelatedFailurePolicy) tree.provider("openai").breaker().config()
				.tripPolicy();
		// one failing child is half way to the two it takes
		assertThat(policy.pressure(clock.nanoTime())).isEqualTo(0.5);
	}

	@Test
	void twoProvidersFailingTripTheSystemOnceBothHaveTrippedThemselves() {
		BreakerTree tree = tree();
		record(tree.path("openai", "a"), Outcome.FAILURE, 4);
		record(tree.path("openai", "b"), Outcome.FAILURE, 4);
		assertThat(state(tree.provider("openai"))).isEqualTo(BreakerState.OPEN);
		assertThat(state(tree.root())).isEqualTo(BreakerState.CLOSED);
		record(tree.path("anthropic", "x"), Outcome.FAILURE, 4);
		record(tree.path("anthropic", "y"), Outcome.FAILURE, 3);
		// anthropic fails every call, but only x has judged itself failing: anthropic is not down yet,
		// so neither is the system
		assertThat(state(tree.provider("anthropic"))).isEqualTo(BreakerState.CLOSED);
		assertThat(state(tree.root())).isEqualTo(BreakerState.CLOSED);
		record(tree.path("anthropic", "y"), Outcome.FAILURE, 1);

		assertThat(state(tree.provider("anthropic"))).isEqualTo(BreakerState.OPEN);
		assertThat(state(tree.root())).isEqualTo(BreakerState.OPEN);
		assertThatThrownBy(() -> tree.path("anthropic", "x").acquire(Priority.P0))
				.isInstanceOfSatisfying(BreakerOpenException.class, e -> assertThat(e.breakerName()).isEqualTo("llm"));
	}

	@Test
	void aParentRecoversThroughItsOwnProbes() {
		BreakerTree tree = tree();
		record(tree.path("openai", "a"), Outcome.FAILURE, 4);
		record(tree.path("openai", "b"), Outcome.FAILURE, 4);
		assertThat(state(tree.provider("openai"))).isEqualTo(BreakerState.OPEN);
		clock.advance(Duration.ofSeconds(10));
		// c's two healthy probes close the provider (a and b wait for their own probes)
		record(tree.path("openai", "c"), Outcome.SUCCESS, 1);
		assertThat(state(tree.provider("openai"))).isEqualTo(BreakerState.HALF_OPEN);
		record(tree.path("openai", "c"), Outcome.SUCCESS, 1);
		assertThat(state(tree.provider("openai"))).isEqualTo(BreakerState.CLOSED);
	}

	// ---- alternatives ----

	@Test
	void alternativesAreClosedSiblingsFirstThenOtherClosedProviders() {
		BreakerTree tree = tree();
		BreakerPath a = tree.path("openai", "a");
		assertThat(tree.alternativesTo(a)).extracting(BreakerPath::name)
				.containsExactly("llm/openai/b", "llm/openai/c", "llm/anthropic/x", "llm/anthropic/y");

		tree.path("openai", "b").endpoint().breaker().transitionToForcedOpen();
		tree.path("anthropic", "x").endpoint().breaker().transitionToForcedOpen();
		assertThat(tree.alternativesTo(a)).extracting(BreakerPath::name)
				.containsExactly("llm/openai/c", "llm/anthropic/y");

		// the provider is not healthy: no sibling, another provider
		tree.provider("openai").breaker().transitionToForcedOpen();
		assertThat(tree.alternativesTo(a)).extracting(BreakerPath::name).containsExactly("llm/anthropic/y");
		tree.provider("anthropic").breaker().transitionToForcedOpen();
		assertThat(tree.alternativesTo(a)).isEmpty();
	}

	// ---- observing ----

	@Test
	void aSnapshotShowsTheTreeWithStatesAndRates() {
		BreakerTree tree = tree();
		record(tree.path("openai", "a"), Outcome.FAILURE, 4);
		record(tree.path("openai", "b"), Outcome.SUCCESS, 4);

		BreakerNodeSnapshot root = tree.snapshot();
		assertThat(root.name()).isEqualTo("llm");
		assertThat(root.level()).isEqualTo(BreakerLevel.SYSTEM);
		assertThat(root.calls()).isEqualTo(8);
		assertThat(root.failureRate()).isEqualTo(0.5);
		assertThat(root.children()).extracting(BreakerNodeSnapshot::name).containsExactly("openai", "anthropic");
		BreakerNodeSnapshot openai = root.children().get(0);
		assertThat(openai.level()).isEqualTo(BreakerLevel.PROVIDER);
		assertThat(openai.breakerName()).isEqualTo("llm/openai");
		assertThat(openai.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(openai.children()).extracting(BreakerNodeSnapshot::name, BreakerNodeSnapshot::state)
				.containsExactly(org.assertj.core.groups.Tuple.tuple("a", BreakerState.OPEN),
						org.assertj.core.groups.Tuple.tuple("b", BreakerState.CLOSED),
						org.assertj.core.groups.Tuple.tuple("c", BreakerState.CLOSED));
		assertThat(openai.children().get(0).level()).isEqualTo(BreakerLevel.ENDPOINT);
		assertThat(openai.children().get(0).failureRate()).isEqualTo(1.0);
	}

	// ---- the registry ----

	@Test
	void theRegistrySharesATreeByNameAndHoldsItsBreakers() {
		BreakerRegistry registry = BreakerRegistry.builder().clock(clock).defaultConfig(endpointConfig()).build();
		BreakerTree tree = registry.tree("llm", t -> t.provider("mock", "primary", "secondary"));
		assertThat(registry.tree("llm", t -> t.provider("other", "x"))).isSameAs(tree);
		assertThat(registry.findTree("llm")).containsSame(tree);
		assertThat(registry.trees()).containsExactly(tree);
		assertThat(registry.find("llm/mock/primary")).containsSame(tree.path("mock", "primary").endpoint().breaker());
		assertThat(registry.breaker("llm/mock")).isSameAs(tree.provider("mock").breaker());
		assertThat(registry.breaker("llm")).isSameAs(tree.root().breaker());
		assertThat(tree.path("mock", "primary").endpoint().breaker().config()).isEqualTo(endpointConfig());
		assertThat(tree.root().breaker().config().tripPolicy()).isInstanceOf(CorrelatedFailurePolicy.class);
		assertThat(tree.clock()).isSameAs(clock);
	}

	@Test
	void aTreeCannotTakeTheNameOfABreakerTheRegistryHolds() {
		BreakerRegistry registry = BreakerRegistry.ofDefaults();
		registry.breaker("llm/mock");
		assertThatThrownBy(() -> registry.tree("llm", t -> t.provider("mock", "primary")))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'llm/mock'");
		assertThat(registry.findTree("llm")).isEmpty();
	}

	// ---- bad input ----

	@Test
	void badInputIsRefusedNamingTheFieldAndValue() {
		assertThatThrownBy(() -> BreakerTree.builder("llm").build()).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("at least one provider");
		assertThatThrownBy(() -> BreakerTree.builder("a/b")).hasMessageContaining("name").hasMessageContaining("'a/b'");
		assertThatThrownBy(() -> BreakerTree.builder("llm").provider("p")).hasMessageContaining("at least one endpoint");
		assertThatThrownBy(() -> BreakerTree.builder("llm").provider("p", "e", "e"))
				.hasMessageContaining("endpoint 'e' is declared twice");
		assertThatThrownBy(() -> BreakerTree.builder("llm").provider("p", "e").provider("p", "f"))
				.hasMessageContaining("provider 'p' is declared twice");
		assertThatThrownBy(() -> BreakerTree.builder("llm").childrenToTrip(1))
				.hasMessageContaining("childrenToTrip must be between 2 and 100, was 1");
		assertThatThrownBy(() -> BreakerTree.builder("llm")
				.providerConfig(BreakerConfig.custom().consecutiveFailuresToTrip(3).build()))
				.hasMessageContaining("providerConfig.consecutiveFailuresToTrip must be 0").hasMessageContaining("was 3");
		assertThatThrownBy(() -> BreakerTree.builder("llm")
				.systemConfig(BreakerConfig.custom().tripPolicy(TripPolicy.decayedFailureRate()).build()))
				.hasMessageContaining("systemConfig.tripPolicy must stay the default");
		BreakerTree tree = tree();
		assertThatThrownBy(() -> tree.path("nope", "a")).hasMessageContaining("provider 'nope'");
		assertThatThrownBy(() -> tree.path("openai", "nope")).hasMessageContaining("endpoint 'nope'");
		assertThatThrownBy(() -> tree.provider("nope")).hasMessageContaining("provider 'nope'");
		assertThat(tree.path("openai", "a")).isSameAs(tree.path("openai", "a"));
	}
}
