package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * Priority-aware probing in virtual time: within the P0 window of HALF_OPEN the probe slots go to P0
 * only, after it to anyone; an OPEN breaker with a P0 share lets that share of P0 through and
 * refuses P1 and P2; calls without a priority behave as before.
 */
class BreakerPriorityProbeTest {

	private static BreakerConfig.Builder base() {
		return BreakerConfig.custom().countWindow(10).minimumCalls(2).failureRateThreshold(0.5)
				.openWait(Duration.ofSeconds(10)).openWaitJitter(0).minimumDwell(Duration.ZERO).halfOpenProbes(2)
				.successesToClose(2);
	}

	private static CircuitBreaker breaker(BreakerConfig config) {
		VirtualTimeScheduler vts = VirtualTimeScheduler.get();
		CircuitBreaker breaker = CircuitBreaker.builder("sys").config(config)
				.clock(() -> vts.now(TimeUnit.NANOSECONDS)).build();
		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		return breaker;
	}

	/** One call each second at the given priorities, in turn: "P0 ok", "P1 refused"... (permits held). */
	private static Flux<String> offer(CircuitBreaker breaker, List<BreakerPermit> held, Priority... priorities) {
		return Flux.interval(Duration.ofSeconds(1)).take(priorities.length).map(i -> {
			Priority p = priorities[i.intValue()];
			BreakerPermit permit = breaker.tryAcquire(p);
			if (permit == null) {
				return p + " refused";
			}
			held.add(permit);
			return p + " ok";
		});
	}

	@Test
	void halfOpenGivesTheProbeSlotsToP0WithinTheWindowThenToAnyone() {
		List<BreakerPermit> held = new ArrayList<>();
		StepVerifier.withVirtualTime(() -> {
			CircuitBreaker breaker = breaker(base().p0ProbeWindow(Duration.ofSeconds(3)).build());
			// open until 10 s; the call at 10 s moves it to HALF_OPEN (entered at 10 s, P0 window to 13 s)
			return Mono.delay(Duration.ofSeconds(9)).thenMany(
					offer(breaker, held, Priority.P1, Priority.P2, Priority.P0, Priority.P1, Priority.P1, Priority.P1))
					.concatWith(Mono.fromSupplier(() -> breaker.state().name()));
		})
				.thenAwait(Duration.ofSeconds(20))
				.expectNext("P1 refused", "P2 refused", "P0 ok", "P1 ok", "P1 refused", "P1 refused")
				.expectNext("HALF_OPEN")
				.verifyComplete();
		assertThat(held).hasSize(2);
	}

	@Test
	void theP0WindowEndsToTheNanosecond() {
		StepVerifier.withVirtualTime(() -> Mono.fromSupplier(() -> {
			VirtualTimeScheduler vts = VirtualTimeScheduler.get();
			CircuitBreaker breaker = breaker(base().p0ProbeWindow(Duration.ofSeconds(3)).build());
			vts.advanceTimeBy(Duration.ofSeconds(10));
			assertThat(breaker.tryAcquire(Priority.P1)).isNull(); // enters HALF_OPEN, refused
			assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
			vts.advanceTimeBy(Duration.ofSeconds(3).minusNanos(1));
			assertThat(breaker.tryAcquire(Priority.P2)).isNull();
			assertThat(breaker.tryAcquire()).as("no priority: not held back").isNotNull();
			vts.advanceTimeBy(Duration.ofNanos(1));
			assertThat(breaker.tryAcquire(Priority.P2)).isNotNull();
			return breaker.rejectedCalls();
		})).expectNext(2L).verifyComplete();
	}

	@Test
	void anOpenBreakerWithAP0ShareLetsThatShareOfP0ThroughAndRefusesTheRest() {
		StepVerifier.withVirtualTime(() -> Mono.fromSupplier(() -> {
			CircuitBreaker breaker = breaker(base().openP0ProbeShare(0.25).build());
			List<Boolean> p0 = new ArrayList<>();
			for (int i = 0; i < 8; i++) {
				BreakerPermit permit = breaker.tryAcquire(Priority.P0);
				p0.add(permit != null);
				if (permit != null) {
					permit.record(Outcome.SUCCESS, 1);
				}
				assertThat(breaker.tryAcquire(Priority.P1)).isNull();
				assertThat(breaker.tryAcquire(Priority.P2)).isNull();
				assertThat(breaker.tryAcquire()).isNull();
			}
			// the first P0, then every fourth; their successes are counted but decide nothing
			assertThat(p0).containsExactly(true, false, false, false, true, false, false, false);
			assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
			assertThat(breaker.snapshot().calls()).isEqualTo(4);
			breaker.transitionToForcedOpen();
			return breaker.tryAcquire(Priority.P0) == null;
		})).expectNext(true).verifyComplete();
	}

	@Test
	void aSystemWideOpenLetsAP0TrickleThroughATree() {
		StepVerifier.withVirtualTime(() -> Mono.fromSupplier(() -> {
			VirtualTimeScheduler vts = VirtualTimeScheduler.get();
			BreakerConfig parent = BreakerConfig.from(base().build()).halfOpenProbes(2).openP0ProbeShare(0.5).build();
			BreakerTree tree = BreakerTree.builder("llm").clock(() -> vts.now(TimeUnit.NANOSECONDS))
					.endpointConfig(base().build()).systemConfig(parent).provider("a", "a1", "a2")
					.provider("b", "b1", "b2").build();
			// every endpoint fails and trips, so both providers trip, and with them the system
			BreakerPath a1 = tree.path("a", "a1");
			for (BreakerPath path : tree.paths()) {
				path.acquire(Priority.P1).record(Outcome.FAILURE, -1);
				path.acquire(Priority.P1).record(Outcome.FAILURE, -1);
			}
			assertThat(tree.root().breaker().state()).isEqualTo(BreakerState.OPEN);
			// the endpoints recover on their own, the system is still OPEN
			tree.paths().forEach(p -> {
				p.endpoint().breaker().transitionToClosed();
				p.provider().breaker().transitionToClosed();
			});
			int p0 = 0;
			for (int i = 0; i < 4; i++) {
				assertThatThrownBy(() -> a1.acquire(Priority.P1)).isInstanceOfSatisfying(BreakerOpenException.class,
						e -> assertThat(e.breakerName()).isEqualTo("llm"));
				BreakerPermit permit = a1.tryAcquire(Priority.P0);
				if (permit != null) {
					p0++;
					permit.record(Outcome.SUCCESS, 1);
				}
			}
			return p0 + " " + a1.endpoint().breaker().snapshot().calls();
		})).expectNext("2 2").verifyComplete();
	}

	@Test
	void badValuesAreRefused() {
		assertThatThrownBy(() -> BreakerConfig.custom().openP0ProbeShare(0.6))
				.hasMessage("openP0ProbeShare must be between 0 (off) and 0.5, was 0.6");
		assertThatThrownBy(() -> BreakerConfig.custom().p0ProbeWindow(Duration.ofSeconds(-1)))
				.hasMessageContaining("p0ProbeWindow must be between 0 and");
		BreakerConfig c = BreakerConfig.custom().p0ProbeWindow(Duration.ofSeconds(2)).openP0ProbeShare(0.1).build();
		assertThat(BreakerConfig.from(c).build()).isEqualTo(c).hasSameHashCodeAs(c);
		assertThat(c.toString()).contains("p0ProbeWindow=PT2S", "openP0ProbeShare=0.1");
	}
}
