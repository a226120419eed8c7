package dev.aiguard.redis;

import java.time.Duration;
import java.util.function.BooleanSupplier;

import reactor.core.publisher.Flux;

/** Bounded polling without sleeping: a Reactor interval checks the condition until it holds or time is up. */
final class Await {

	private Await() {
	}

	/**
	 * Waits until {@code condition} holds, checking every 10 ms, at most {@code timeout}.
	 *
	 * @param what says what was awaited, for the failure message
	 * @return how long it took
	 * @throws AssertionError when the condition did not hold in time
	 */
	static Duration until(String what, Duration timeout, BooleanSupplier condition) {
		long start = System.nanoTime();
		if (condition.getAsBoolean()) {
			return Duration.ZERO;
		}
		Boolean held = Flux.interval(Duration.ofMillis(10))
				.map(tick -> condition.getAsBoolean())
				.takeUntil(ok -> ok)
				.filter(ok -> ok)
				.next()
				.timeout(timeout, reactor.core.publisher.Mono.just(false))
				.block(timeout.plusSeconds(1));
		if (!Boolean.TRUE.equals(held)) {
			throw new AssertionError("not within " + timeout + ": " + what);
		}
		return Duration.ofNanos(System.nanoTime() - start);
	}
}
