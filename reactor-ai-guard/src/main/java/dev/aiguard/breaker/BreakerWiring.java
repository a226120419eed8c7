package dev.aiguard.breaker;

import java.time.Clock;
import java.util.ArrayList;
import java.util.List;

import dev.aiguard.metrics.GuardMetrics;

/**
 * What every breaker a builder makes shares with its siblings: the clock, the wall clock, the metrics
 * and the listeners. {@link CircuitBreaker.Builder}, {@link BreakerTree.Builder} and
 * {@link BreakerRegistry.Builder} take them through these setters; each setter returns the builder's
 * own type, so a chain keeps its builder.
 *
 * @param <B> the builder
 */
abstract class BreakerWiring<B extends BreakerWiring<B>> {

	BreakerClock clock = BreakerClock.system();
	Clock wallClock = Clock.systemUTC();
	GuardMetrics metrics = GuardMetrics.noop();
	final List<BreakerListener> listeners = new ArrayList<>();

	/** @return this builder, as its own type */
	abstract B self();

	/** @param clock the monotonic clock the breakers' waits and windows read (default {@link BreakerClock#system()}) */
	public B clock(BreakerClock clock) {
		this.clock = BreakerConfig.notNull("clock", clock);
		return self();
	}

	/** @param wallClock the clock that stamps {@link BreakerEvent.ConfigChanged#at()} (default UTC) */
	public B wallClock(Clock wallClock) {
		this.wallClock = BreakerConfig.notNull("wallClock", wallClock);
		return self();
	}

	/** @param metrics where the breakers report state, transitions, rejections and rates (default no-op) */
	public B metrics(GuardMetrics metrics) {
		this.metrics = BreakerConfig.notNull("metrics", metrics);
		return self();
	}

	/** @param listener a listener every breaker registers from the start (repeatable) */
	public B listener(BreakerListener listener) {
		listeners.add(BreakerConfig.notNull("listener", listener));
		return self();
	}

	/**
	 * Gives {@code other} this builder's clocks, metrics and listeners (the listeners after any it
	 * already has).
	 *
	 * @return {@code other}
	 */
	final <T extends BreakerWiring<T>> T wire(T other) {
		other.clock = clock;
		other.wallClock = wallClock;
		other.metrics = metrics;
		other.listeners.addAll(listeners);
		return other;
	}
}
