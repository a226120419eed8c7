package dev.aiguard.demo;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import org.jspecify.annotations.Nullable;

/**
 * The breaker's waits as {@code /api/guard} shows them, read from the breaker itself
 * ({@link CircuitBreaker#untilProbe()}, {@link CircuitBreaker#lastOpenWait()},
 * {@link CircuitBreaker#nextOpenWait()}): exact, jitter included.
 *
 * <pre>{@code
 * BreakerWaits.View view = BreakerWaits.of(breaker, Clock.systemUTC());   // retryInMs, openUntil, openWaitMs, nextOpenWaitMs
 * }</pre>
 */
final class BreakerWaits {

	private BreakerWaits() {
	}

	/**
	 * What the page shows about waits.
	 *
	 * @param openUntil OPEN: epoch milliseconds from which the next request probes; else {@code null}
	 * @param retryInMs OPEN: milliseconds until then, rounded up, 0 once it has passed (the next
	 *        request probes); else {@code null}
	 * @param openWaitMs OPEN and HALF_OPEN: the wait of the open stay that led here; else {@code null}
	 * @param nextOpenWaitMs the wait the next open would get, were it now
	 */
	record View(@Nullable Long openUntil, @Nullable Long retryInMs, @Nullable Long openWaitMs, long nextOpenWaitMs) {
	}

	/**
	 * @param wallClock for {@link View#openUntil()}; the breaker measures its waits on its own clock
	 * @return the breaker's waits now
	 */
	static View of(CircuitBreaker breaker, Clock wallClock) {
		Objects.requireNonNull(breaker, "breaker");
		Objects.requireNonNull(wallClock, "wallClock");
		long nextOpenWait = breaker.nextOpenWait().toMillis();
		BreakerState state = breaker.state();
		Duration lastOpenWait = breaker.lastOpenWait();
		Optional<Duration> untilProbe = breaker.untilProbe();
		Long openWait = (state == BreakerState.OPEN || state == BreakerState.HALF_OPEN) && !lastOpenWait.isZero()
				? lastOpenWait.toMillis() : null;
		if (untilProbe.isEmpty()) {
			return new View(null, null, openWait, nextOpenWait);
		}
		// rounded up: never "0" while the breaker still refuses
		long retryIn = TimeUnit.NANOSECONDS.toMillis(untilProbe.get().toNanos() + 999_999);
		return new View(wallClock.millis() + retryIn, retryIn, openWait, nextOpenWait);
	}
}
