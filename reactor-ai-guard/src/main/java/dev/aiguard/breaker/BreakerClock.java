package dev.aiguard.breaker;

import java.util.concurrent.TimeUnit;

/**
 * A monotonic nanosecond clock for a {@link CircuitBreaker}. Only differences between readings
 * matter; the origin is arbitrary (it may be negative, like {@link System#nanoTime()}).
 *
 * <p>Inside a Reactor pipeline the breaker reads the pipeline's scheduler, so
 * {@code StepVerifier.withVirtualTime} drives it; a test drives it by hand:
 *
 * <pre>{@code
 * CircuitBreaker breaker = CircuitBreaker.builder("llm")
 *     .clock(() -> scheduler.now(TimeUnit.NANOSECONDS))
 *     .build();
 * }</pre>
 *
 * <p>A clock that steps backwards corrupts nothing: records older than the window are dropped and
 * waits simply last longer.
 */
@FunctionalInterface
public interface BreakerClock {

	/** @return the current time in nanoseconds */
	long nanoTime();

	/** @return {@link System#nanoTime()} */
	static BreakerClock system() {
		return System::nanoTime;
	}

	/** @return a clock reading {@code millis} (for example a scheduler's {@code now(MILLISECONDS)}) */
	static BreakerClock ofMillis(java.util.function.LongSupplier millis) {
		return () -> TimeUnit.MILLISECONDS.toNanos(millis.getAsLong());
	}
}
