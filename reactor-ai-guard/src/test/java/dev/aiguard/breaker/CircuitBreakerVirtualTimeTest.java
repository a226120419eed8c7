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
}
