package dev.aiguard.demo;

import java.time.Clock;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.breaker.BreakerClock;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerEvent;
import dev.aiguard.breaker.BreakerListener;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import reactor.util.annotation.Nullable;

/**
 * When an OPEN breaker lets the next request through as a probe, and how long its opens last.
 *
 * <p>{@link CircuitBreaker} has no getter for its open deadline, so this follows its state
 * transitions and applies the rule docs/breaker.md gives: the first open waits
 * {@link BreakerConfig#openWait()}; each consecutive re-open (a failed HALF_OPEN, or a trip sooner
 * after a re-close than the last wait lasted) multiplies it by {@link BreakerConfig#openWaitMultiplier()},
 * up to {@link BreakerConfig#maxOpenWait()}; an operator transition starts over. The deadline is
 * exact when the config has no jitter (the demo's has none); with jitter, the probe may come up to
 * that share of the wait later than said here.
 *
 * <pre>{@code
 * BreakerOpenWait waits = BreakerOpenWait.follow(breaker, BreakerClock.system(), Clock.systemUTC());
 * BreakerOpenWait.View view = waits.view();   // retryInMs, openUntil, openWaitMs, nextOpenWaitMs
 * }</pre>
 *
 * Must be registered before the breaker's first transition; lock-free, for the event loop.
 */
final class BreakerOpenWait implements BreakerListener {

	private static final String OPERATOR = "operator";

	private final CircuitBreaker breaker;
	private final BreakerClock clock;
	private final Clock wallClock;
	private final AtomicReference<Stay> stay;

	/**
	 * One stay in one state, as far as waits go.
	 *
	 * @param enteredAt breaker clock, nanoseconds
	 * @param openUntil OPEN: when probing may start; else 0
	 * @param streak consecutive re-opens that led here (0 for a first open)
	 * @param lastOpenWait the wait of the latest OPEN stay, 0 when none counts
	 */
	private record Stay(BreakerState state, long enteredAt, long openUntil, int streak, long lastOpenWait) {
	}

	/**
	 * What the page shows about waits.
	 *
	 * @param openUntil OPEN: epoch milliseconds from which the next request probes; else {@code null}
	 * @param retryInMs OPEN: milliseconds until then, 0 once it has passed (the next request probes);
	 *        else {@code null}
	 * @param openWaitMs OPEN and HALF_OPEN: the wait of the open stay that led here; else {@code null}
	 * @param nextOpenWaitMs the wait the next open would get, were it now
	 */
	record View(@Nullable Long openUntil, @Nullable Long retryInMs, @Nullable Long openWaitMs, long nextOpenWaitMs) {
	}

	private BreakerOpenWait(CircuitBreaker breaker, BreakerClock clock, Clock wallClock) {
		this.breaker = breaker;
		this.clock = clock;
		this.wallClock = wallClock;
		this.stay = new AtomicReference<>(new Stay(breaker.state(), clock.nanoTime(), 0, 0, 0));
	}

	/**
	 * @param breaker a breaker that has not left its first state yet
	 * @param clock the breaker's clock
	 * @param wallClock for {@link View#openUntil()}
	 * @return a follower, registered as the breaker's listener
	 */
	static BreakerOpenWait follow(CircuitBreaker breaker, BreakerClock clock, Clock wallClock) {
		BreakerOpenWait waits = new BreakerOpenWait(Objects.requireNonNull(breaker, "breaker"),
				Objects.requireNonNull(clock, "clock"), Objects.requireNonNull(wallClock, "wallClock"));
		breaker.addListener(waits);
		return waits;
	}

	@Override
	public void onEvent(BreakerEvent event) {
		if (event instanceof BreakerEvent.StateTransition t) {
			BreakerConfig config = breaker.config();
			// listeners of transitions made on different threads may run out of order: the newest wins
			stay.getAndUpdate(s -> t.nanoTime() - s.enteredAt() < 0 ? s : next(s, t, config));
		}
	}

	private static Stay next(Stay s, BreakerEvent.StateTransition t, BreakerConfig config) {
		long at = t.nanoTime();
		boolean operator = OPERATOR.equals(t.reason());
		switch (t.to()) {
			case OPEN: {
				int streak;
				if (t.from() == BreakerState.HALF_OPEN) {
					streak = s.streak() + 1;
				}
				else {
					// a trip sooner after a re-close than the last wait lasted continues the streak
					streak = s.lastOpenWait() > 0 && at - s.enteredAt() < s.lastOpenWait() ? s.streak() + 1 : 0;
				}
				long wait = waitNanos(config, streak);
				return new Stay(BreakerState.OPEN, at, at + wait, streak, wait);
			}
			case HALF_OPEN:
				return new Stay(BreakerState.HALF_OPEN, at, 0, s.streak(), s.lastOpenWait());
			case CLOSED:
				return operator || t.from() != BreakerState.HALF_OPEN ? new Stay(BreakerState.CLOSED, at, 0, 0, 0)
						: new Stay(BreakerState.CLOSED, at, 0, s.streak(), s.lastOpenWait());
			default: // FORCED_OPEN, DISABLED: operator states, left only to a fresh CLOSED
				return new Stay(t.to(), at, 0, 0, 0);
		}
	}

	/** The breaker's rule without jitter: grown by the multiplier per re-open, then capped. */
	static long waitNanos(BreakerConfig config, int streak) {
		double grown = config.openWait().toNanos() * Math.pow(config.openWaitMultiplier(), streak);
		double capped = Math.min(grown, (double) config.maxOpenWait().toNanos());
		return (long) Math.min(capped, (double) (Long.MAX_VALUE / 4));
	}

	/** @return the waits now; timing fields are {@code null} when the breaker's state moved on meanwhile */
	View view() {
		Stay s = stay.get();
		BreakerConfig config = breaker.config();
		long now = clock.nanoTime();
		boolean current = s.state() == breaker.state();
		long nextOpenWait;
		if (s.state() == BreakerState.OPEN || s.state() == BreakerState.HALF_OPEN) {
			nextOpenWait = waitNanos(config, s.streak() + 1);
		}
		else if (s.state() == BreakerState.CLOSED && s.lastOpenWait() > 0 && now - s.enteredAt() < s.lastOpenWait()) {
			nextOpenWait = waitNanos(config, s.streak() + 1);
		}
		else {
			nextOpenWait = waitNanos(config, 0);
		}
		Long openUntil = null;
		Long retryIn = null;
		Long openWait = null;
		if (current && s.state() == BreakerState.OPEN) {
			long left = Math.max(0, s.openUntil() - now);
			retryIn = TimeUnit.NANOSECONDS.toMillis(left + 999_999); // rounded up: never "0" while still refused
			openUntil = wallClock.millis() + retryIn;
		}
		if (current && (s.state() == BreakerState.OPEN || s.state() == BreakerState.HALF_OPEN)) {
			openWait = TimeUnit.NANOSECONDS.toMillis(s.lastOpenWait());
		}
		return new View(openUntil, retryIn, openWait, TimeUnit.NANOSECONDS.toMillis(nextOpenWait));
	}
}
