package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * The breaker driven by Reactor virtual time through a minimal adapter (one permit per subscription,
 * settled once on complete, error or cancel), the way the guard operator uses it: open wait, half-open
 * probes and re-open growth.
 */
class CircuitBreakerVirtualTimeTest {

	private static BreakerConfig config() {
		return BreakerConfig.custom().minimumCalls(4).openWait(Duration.ofSeconds(10)).openWaitMultiplier(2)
				.maxOpenWait(Duration.ofMinutes(1)).openWaitJitter(0).halfOpenProbes(1).successesToClose(1)
				.minimumDwell(Duration.ZERO).build();
	}

	/** Built inside the virtual-time supplier: reads the virtual scheduler, as the guard will. */
	private static CircuitBreaker breaker() {
		VirtualTimeScheduler scheduler = VirtualTimeScheduler.get();
		return CircuitBreaker.builder("vt").config(config()).clock(() -> scheduler.now(TimeUnit.NANOSECONDS))
				.build();
	}

	/** One guarded attempt: the breaker's permit lives exactly as long as the subscription. */
	private static <T> Flux<T> guarded(CircuitBreaker breaker, Flux<T> upstream) {
		return Flux.defer(() -> {
			BreakerPermit permit = breaker.tryAcquire();
			if (permit == null) {
				return Flux.error(new BreakerOpenException(breaker.name(), breaker.state()));
			}
			long start = Schedulers.parallel().now(TimeUnit.NANOSECONDS);
			AtomicLong ttft = new AtomicLong(-1);
			return upstream
					.doOnNext(t -> ttft.compareAndSet(-1, Schedulers.parallel().now(TimeUnit.NANOSECONDS) - start))
					.doOnComplete(() -> permit.record(Outcome.SUCCESS, ttft.get()))
					.doOnError(e -> permit.record(Outcome.FAILURE, ttft.get()))
					.doOnCancel(() -> permit.record(Outcome.CANCELLED, -1));
		});
	}

	@Test
	void opensWaitsProbesAndReopensWithAGrowingWaitInVirtualTime() {
		AtomicReference<CircuitBreaker> holder = new AtomicReference<>();
		List<String> expected = new ArrayList<>();
		expected.addAll(Collections.nCopies(4, "failed"));   // t = 0..3 s; opens at 3.1 s
		expected.addAll(Collections.nCopies(10, "refused")); // t = 4..13 s: wait until 13.1 s
		expected.add("failed");                              // t = 14 s: the probe fails, wait doubles
		expected.addAll(Collections.nCopies(20, "refused")); // t = 15..34 s: wait until 34.1 s
		expected.add("ok");                                  // t = 35 s: the probe succeeds, closes
		expected.add("ok");

		StepVerifier.withVirtualTime(() -> {
			CircuitBreaker breaker = breaker();
			holder.set(breaker);
			// the provider fails for the first 30 s, answering after 100 ms either way
			Flux<String> provider = Flux.defer(() -> Schedulers.parallel().now(TimeUnit.SECONDS) < 30
					? Mono.delay(Duration.ofMillis(100)).then(Mono.<String>error(new IOException("503"))).flux()
					: Mono.delay(Duration.ofMillis(100)).thenReturn("token").flux());
			return Flux.interval(Duration.ZERO, Duration.ofSeconds(1)).take(expected.size())
					.concatMap(i -> guarded(breaker, provider).then(Mono.just("ok")).onErrorResume(
							e -> Mono.just(e instanceof BreakerOpenException ? "refused" : "failed")));
		}).thenAwait(Duration.ofSeconds(40)).expectNextSequence(expected).verifyComplete();

		assertThat(holder.get().state()).isEqualTo(BreakerState.CLOSED);
		assertThat(holder.get().rejectedCalls()).isEqualTo(30);
	}

	@Test
	void aCancelledProbeGivesItsSlotBackInVirtualTime() {
		AtomicReference<CircuitBreaker> holder = new AtomicReference<>();
		StepVerifier.withVirtualTime(() -> {
			CircuitBreaker breaker = breaker();
			holder.set(breaker);
			for (int i = 0; i < 4; i++) {
				breaker.tryAcquire().record(Outcome.FAILURE, -1);
			}
			// after the open wait, a probe whose subscriber leaves before the first token
			return Mono.delay(Duration.ofSeconds(10))
					.thenMany(guarded(breaker, Mono.delay(Duration.ofSeconds(5)).thenReturn("late").flux()));
		}).thenAwait(Duration.ofSeconds(11)).thenCancel().verify();

		CircuitBreaker breaker = holder.get();
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		BreakerPermit probe = breaker.tryAcquire();
		assertThat(probe).as("the only probe slot came back").isNotNull();
		probe.record(Outcome.SUCCESS, 1);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	/** A breaker with {@code config} on the virtual scheduler; built inside the virtual-time supplier. */
	private static CircuitBreaker breaker(BreakerConfig config) {
		VirtualTimeScheduler scheduler = VirtualTimeScheduler.get();
		return CircuitBreaker.builder("vt").config(config).clock(() -> scheduler.now(TimeUnit.NANOSECONDS)).build();
	}

	/** One call every {@code everyMs}: the virtual time in ms and what became of it ("ok", "failed", state refused in). */
	private static Flux<String> traffic(CircuitBreaker breaker, long everyMs, int calls,
			java.util.function.LongPredicate failsAtMs) {
		Flux<String> provider = Flux.defer(() -> failsAtMs.test(Schedulers.parallel().now(TimeUnit.MILLISECONDS))
				? Flux.error(new IOException("503")) : Flux.just("token"));
		return Flux.interval(Duration.ZERO, Duration.ofMillis(everyMs)).take(calls)
				.concatMap(i -> guarded(breaker, provider).then(Mono.just("ok"))
						.onErrorResume(e -> Mono.just(e instanceof BreakerOpenException r ? "refused " + r.state()
								: "failed"))
						.map(r -> Schedulers.parallel().now(TimeUnit.MILLISECONDS) + " " + r));
	}

	private static long at(String line) {
		return Long.parseLong(line.substring(0, line.indexOf(' ')));
	}

	@Test
	void aShortOutageIsRiddenOutAndALongOneTripsAfterTheTripDelayInVirtualTime() {
		BreakerConfig config = BreakerConfig.custom().failureRateThreshold(0.3).minimumCalls(4)
				.timeWindow(5, Duration.ofSeconds(1)).tripDelay(Duration.ofSeconds(8)).openWaitJitter(0)
				.minimumDwell(Duration.ZERO).build();
		List<String> results = new ArrayList<>();
		StepVerifier.withVirtualTime(() -> traffic(breaker(config), 100, 400,
				ms -> (ms >= 2000 && ms < 3500) || ms >= 20_000))
				.thenAwait(Duration.ofSeconds(40)).recordWith(() -> results).expectNextCount(400).verifyComplete();

		// the 1.5 s outage raised the failure rate over 30 % for a few seconds, less than the delay
		assertThat(results.stream().filter(r -> at(r) < 20_000)).noneMatch(r -> r.endsWith("refused OPEN"));
		String firstRefusal = results.stream().filter(r -> r.endsWith("refused OPEN")).findFirst().orElseThrow();
		// the long outage is over 30 % from about 20.5 s on; the trip waits 8 s more
		assertThat(at(firstRefusal)).isBetween(28_000L, 30_000L);
	}

	@Test
	void rampUpAfterAReCloseSpreadsAdmissionsOverTheRampInVirtualTime() {
		BreakerConfig config = BreakerConfig.custom().minimumCalls(4).openWait(Duration.ofSeconds(10))
				.openWaitJitter(0).halfOpenProbes(1).successesToClose(1).minimumDwell(Duration.ZERO)
				.rampUp(Duration.ofSeconds(10)).build();
		List<String> results = new ArrayList<>();
		// fails for the first 40 ms (4 calls: trips), then healthy: the probe after 10 s closes it
		StepVerifier.withVirtualTime(() -> traffic(breaker(config), 10, 2500, ms -> ms < 40))
				.thenAwait(Duration.ofSeconds(30)).recordWith(() -> results).expectNextCount(2500).verifyComplete();

		long closedAt = results.stream().filter(r -> r.endsWith(" ok")).mapToLong(CircuitBreakerVirtualTimeTest::at)
				.min().orElseThrow();
		assertThat(closedAt).isBetween(10_000L, 10_100L);
		for (int second = 0; second < 10; second++) {
			long from = closedAt + 1 + second * 1000L;
			long to = from + 1000;
			long ok = results.stream().filter(r -> at(r) >= from && at(r) < to && r.endsWith(" ok")).count();
			long refused = results.stream().filter(r -> at(r) >= from && at(r) < to && r.endsWith("refused CLOSED"))
					.count();
			assertThat(ok + refused).isEqualTo(100);
			assertThat(ok).as("second %d of the ramp", second).isBetween(second * 10 + 3L, second * 10 + 7L);
		}
		assertThat(results.stream().filter(r -> at(r) >= closedAt + 10_001)).allMatch(r -> r.endsWith(" ok"));
	}
}
