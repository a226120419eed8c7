package dev.aiguard.breaker;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;

/**
 * A circuit breaker that judges token streams: each attempt takes a {@link BreakerPermit} and settles
 * it once with its {@link Outcome}; "slow" means a slow <em>first token</em>; stalls and truncated
 * streams are failures; client errors are ignored unless configured; a cancelled attempt hands its
 * permission back without counting (a HALF_OPEN probe slot comes back with it).
 *
 * <pre>{@code
 * CircuitBreaker breaker = CircuitBreaker.builder("openai")
 *     .config(BreakerConfig.custom().failureRateThreshold(0.5).build())
 *     .metrics(new MicrometerGuardMetrics(registry))
 *     .listener(event -> log.info("{}", event))
 *     .build();
 *
 * BreakerPermit permit = breaker.tryAcquire();
 * if (permit == null) {
 *     throw new BreakerOpenException(breaker.name(), breaker.state());
 * }
 * // ... stream the answer, then exactly once:
 * permit.record(Outcome.SUCCESS, timeToFirstTokenNanos);
 * }</pre>
 *
 * <h2>States</h2>
 * CLOSED lets calls through and trips to OPEN when its {@link TripPolicy} reports a pressure of 1 or
 * more (after {@link BreakerConfig#minimumDwell()} when it was just re-closed). OPEN refuses calls
 * until its wait has passed; the next {@link #tryAcquire()} then moves it to HALF_OPEN — lazily, no
 * timer — and holds that stay's first probe. HALF_OPEN lets probes through (a count or a share of traffic); it closes once
 * {@link BreakerConfig#successesToClose()} probes were healthy and the probes' pressure is below
 * {@code 1 - hysteresis} (and the dwell has passed) — with counted probes, only once that holds even if
 * every outstanding probe failed — and re-opens when the probes' pressure reaches 1,
 * when every counted probe was used without closing, or after
 * {@link BreakerConfig#maxTimeInHalfOpen()}. Each consecutive re-open multiplies the wait (capped,
 * with jitter); a breaker that stays closed at least as long as its last wait earns the short wait
 * back. FORCED_OPEN and DISABLED are left only through the operator methods.
 *
 * <p>Beside the trip policy: {@link BreakerConfig#consecutiveFailuresToTrip()} failures in a row trip
 * at once; {@link BreakerConfig#tripDelay()} ignores a pressure spike shorter than the delay;
 * {@link BreakerConfig#warmUp()} relaxes the trip limit after the breaker is built; after a re-close
 * {@link BreakerConfig#rampUp()} admits a linearly growing share of calls (the rest are refused like
 * calls to an open breaker, and count as rejections, not failures); and
 * {@link BreakerConfig#slowTimeToFirstTokenPerPromptToken()} grants long prompts a later first token.
 *
 * <h2>Threads</h2>
 * Lock-free: the state is one immutable phase object swapped by CAS (one CAS decides each
 * transition); recording a success on a CLOSED breaker costs one atomic operation on the window and
 * no clock read when the caller passes its time ({@link #tryAcquire(long)},
 * {@link BreakerPermit#record(Outcome, long, long)}). Transitions, rejections and reconfigurations
 * are reported to listeners and to {@link GuardMetrics} on the calling thread; a throwing listener or
 * metrics implementation is logged and ignored.
 */
public final class CircuitBreaker extends BreakerAdmission implements BreakerGate {

	private CircuitBreaker(Builder b) {
		super(b.name, b.config, b);
	}

	/** @return a breaker with {@code config}, the system clock, no metrics and no listeners */
	public static CircuitBreaker of(String name, BreakerConfig config) {
		return builder(name).config(config).build();
	}

	/** @return a builder for a breaker named {@code name} */
	public static Builder builder(String name) {
		return new Builder(name);
	}

	// ---------------------------------------------------------------- permission

	/**
	 * Asks to make one call (one attempt of a stream).
	 *
	 * @return a permit to settle exactly once, or {@code null} when the breaker refuses (the refusal is
	 * already counted, reported to metrics and to listeners)
	 */
	public @Nullable BreakerPermit tryAcquire() {
		BreakerPhase p = phase;
		// the hot case first: CLOSED needs no time (unless it ramps up after a re-close)
		if (p.state == BreakerState.CLOSED) {
			return p.ramping ? rampAcquire(p, clock.nanoTime()) : new Permit(this, p, Permit.CALL);
		}
		return acquire(p, 0, false, NO_PRIORITY);
	}

	/**
	 * Asks to make one call at a priority. CLOSED costs the same as {@link #tryAcquire()}; the priority
	 * matters only where probing is priority-aware: within {@link BreakerConfig#p0ProbeWindow()} of
	 * entering HALF_OPEN a {@code P1} or {@code P2} call is refused (the probe slots go to {@code P0}
	 * first), and while OPEN a share {@link BreakerConfig#openP0ProbeShare()} of the {@code P0} calls
	 * still passes.
	 *
	 * <pre>{@code
	 * BreakerPermit permit = breaker.tryAcquire(Priority.P0);
	 * }</pre>
	 *
	 * @param priority the call's priority
	 * @return a permit to settle exactly once, or {@code null} when the breaker refuses
	 */
	public @Nullable BreakerPermit tryAcquire(Priority priority) {
		BreakerPhase p = phase;
		if (p.state == BreakerState.CLOSED) {
			return p.ramping ? rampAcquire(p, clock.nanoTime()) : new Permit(this, p, Permit.CALL);
		}
		return acquire(p, 0, false, priority.ordinal());
	}

	/**
	 * {@inheritDoc} Allocates the exception only on a refusal.
	 */
	@Override
	public BreakerPermit acquire(Priority priority) {
		BreakerPermit permit = tryAcquire(priority);
		if (permit == null) {
			throw new BreakerOpenException(name, phase.state);
		}
		return permit;
	}

	@Override
	public boolean weighsPromptTokens() {
		return settings.config.slowPerPromptTokenNanos > 0;
	}

	/**
	 * Asks to make one call, at a time the caller has already read from the breaker's clock (for
	 * example the pipeline scheduler's {@code now(NANOSECONDS)}), so the breaker reads no clock of its
	 * own. A CLOSED breaker needs no time at all; OPEN and HALF_OPEN use {@code nowNanos} for their
	 * waits.
	 *
	 * <pre>{@code
	 * long now = scheduler.now(TimeUnit.NANOSECONDS);
	 * BreakerPermit permit = breaker.tryAcquire(now);
	 * }</pre>
	 *
	 * @param nowNanos the breaker clock's current reading (same origin as {@link Builder#clock})
	 * @return a permit to settle exactly once, or {@code null} when the breaker refuses
	 */
	public @Nullable BreakerPermit tryAcquire(long nowNanos) {
		BreakerPhase p = phase;
		if (p.state == BreakerState.CLOSED) {
			return p.ramping ? rampAcquire(p, nowNanos) : new Permit(this, p, Permit.CALL);
		}
		return acquire(p, nowNanos, true, NO_PRIORITY);
	}

	// ---------------------------------------------------------------- operator controls

	/** Refuses every call until another operator transition. */
	public void transitionToForcedOpen() {
		operatorTransition(BreakerState.FORCED_OPEN);
	}

	/** Permits every call and records nothing until another operator transition. */
	public void transitionToDisabled() {
		operatorTransition(BreakerState.DISABLED);
	}

	/** Closes the breaker with an empty window and no re-open streak. */
	public void transitionToClosed() {
		operatorTransition(BreakerState.CLOSED);
	}

	/**
	 * Opens the breaker as a trip would, but for {@code wait} instead of the configured open wait: calls
	 * are refused until the wait has passed, then the breaker probes from HALF_OPEN as usual. Meant for a
	 * verdict reached elsewhere, such as a peer instance that tripped on the same provider
	 * ({@code reactor-ai-guard-redis} shares breaker state this way). From CLOSED the re-open streak
	 * continues as after a trip, from HALF_OPEN it grows by one; an OPEN breaker starts a new OPEN stay
	 * that ends after {@code wait} (reported as an OPEN → OPEN transition), which lines its probing up
	 * with the peer's. FORCED_OPEN and DISABLED are operator states: they are left alone.
	 *
	 * <pre>{@code
	 * breaker.transitionToOpen(Duration.ofSeconds(30), "peer api-2: failure rate 0.6 >= 0.5");
	 * }</pre>
	 *
	 * @param wait how long the breaker refuses calls before probing; not negative
	 * @param reason why, reported in the {@link BreakerEvent.StateTransition}
	 * @return whether the breaker moved to a new OPEN stay ({@code false} in FORCED_OPEN or DISABLED)
	 * @throws IllegalArgumentException when {@code wait} is negative
	 */
	public boolean transitionToOpen(Duration wait, String reason) {
		Objects.requireNonNull(wait, "wait");
		Objects.requireNonNull(reason, "reason");
		if (wait.isNegative()) {
			throw new IllegalArgumentException("wait must not be negative: " + wait);
		}
		long waitNanos = saturatedNanos(wait);
		for (;;) {
			BreakerPhase p = phase;
			if (p.state == BreakerState.FORCED_OPEN || p.state == BreakerState.DISABLED) {
				return false;
			}
			long now = clock.nanoTime();
			int streak = p.state == BreakerState.CLOSED ? tripStreak(p, now)
					: p.state == BreakerState.HALF_OPEN ? p.streak + 1 : p.streak;
			if (transition(p, BreakerPhase.open(p.seq + 1, now, waitNanos, streak), reason)) {
				return true;
			}
		}
	}

	/**
	 * Closes an OPEN or HALF_OPEN breaker as healthy probes would: a fresh window, the configured
	 * minimum dwell and ramp-up, and the re-open streak kept (a trip soon after continues it). Meant for
	 * a verdict reached elsewhere, such as a peer instance whose probes succeeded. Unlike the operator's
	 * {@link #transitionToClosed()}, it leaves CLOSED, FORCED_OPEN and DISABLED breakers alone.
	 *
	 * <pre>{@code
	 * breaker.transitionToClosed("peer api-2: 3 of 3 probes healthy");
	 * }</pre>
	 *
	 * @param reason why, reported in the {@link BreakerEvent.StateTransition}
	 * @return whether the breaker closed ({@code false} when it was not OPEN or HALF_OPEN)
	 */
	public boolean transitionToClosed(String reason) {
		Objects.requireNonNull(reason, "reason");
		for (;;) {
			BreakerPhase p = phase;
			if (p.state != BreakerState.OPEN && p.state != BreakerState.HALF_OPEN) {
				return false;
			}
			if (close(p, settings, clock.nanoTime(), reason)) {
				return true;
			}
		}
	}

	private static long saturatedNanos(Duration d) {
		try {
			return Math.min(d.toNanos(), Long.MAX_VALUE / 4);
		}
		catch (ArithmeticException tooLong) {
			return Long.MAX_VALUE / 4;
		}
	}

	/**
	 * Replaces the config at runtime, atomically. The window is kept when its shape (type, size, bucket
	 * length) is unchanged, else a fresh one starts; the trip policy keeps its evaluator (and what it
	 * learned) when the new policy is equal to the old. New thresholds apply from the next recorded call.
	 * Emits a {@link BreakerEvent.ConfigChanged}.
	 *
	 * @param config the new config
	 * @param reason why, for the audit trail
	 */
	public void reconfigure(BreakerConfig config, String reason) {
		Objects.requireNonNull(config, "config");
		Objects.requireNonNull(reason, "reason");
		Settings old = swapConfig(config);
		BreakerListener[] ls = listeners;
		if (ls.length != 0) {
			emit(ls, new BreakerEvent.ConfigChanged(name, clock.nanoTime(), Instant.now(wallClock), old.config,
					config, reason));
		}
	}

	// ---------------------------------------------------------------- reading

	/** @return the breaker's name */
	public String name() {
		return name;
	}

	/**
	 * @return the current state. Transitions out of OPEN happen lazily on the next
	 * {@link #tryAcquire()}, so an OPEN breaker whose wait has passed still reports OPEN until then.
	 */
	public BreakerState state() {
		return phase.state;
	}

	/**
	 * When the breaker lets a probe through, for dashboards and health views.
	 *
	 * @return empty unless the state is OPEN; else the time left of the open wait, {@link Duration#ZERO}
	 *         once it has passed (the next {@link #tryAcquire()} moves the breaker to HALF_OPEN)
	 */
	public Optional<Duration> untilProbe() {
		BreakerPhase p = phase;
		if (p.state != BreakerState.OPEN) {
			return Optional.empty();
		}
		long left = p.openUntil - clock.nanoTime();
		return Optional.of(left <= 0 ? Duration.ZERO : Duration.ofNanos(left));
	}

	/**
	 * @return the length of the open wait the breaker is in (OPEN) or last went through; zero when it
	 *         has not opened since it was built or last moved by an operator. With
	 *         {@code openWaitMultiplier > 1} a re-open from HALF_OPEN, or a trip within one open wait of
	 *         closing, waits {@code multiplier} times longer than the last, up to {@code maxOpenWait}.
	 */
	public Duration lastOpenWait() {
		return Duration.ofNanos(phase.lastOpenWait);
	}

	/**
	 * The open wait the breaker would get if it opened next, as things stand: after a failed probe
	 * (OPEN, HALF_OPEN), after a trip (CLOSED: longer when the last open ended less than its own wait
	 * ago), or the first wait (after an operator transition). Jitter included: the breaker's jitter
	 * is a function of its transition count, so this is the wait it would really use.
	 *
	 * @return the next open wait
	 */
	public Duration nextOpenWait() {
		BreakerPhase p = phase;
		BreakerConfig c = settings.config;
		long wait;
		switch (p.state) {
			// a failed probe: OPEN -> HALF_OPEN -> OPEN again, one step further in the streak
			case OPEN -> wait = openWaitNanos(c, p.streak + 1, p.seq + 2);
			case HALF_OPEN -> wait = openWaitNanos(c, p.streak + 1, p.seq + 1);
			case CLOSED -> {
				wait = openWaitNanos(c, tripStreak(p, clock.nanoTime()), p.seq + 1);
			}
			// an operator state is left by an operator transition, which starts the streak over
			default -> wait = openWaitNanos(c, 0, p.seq + 2);
		}
		return Duration.ofNanos(wait);
	}

	/** @return the current config */
	public BreakerConfig config() {
		return settings.config;
	}

	/** @return the window's failure rate now, a fraction in [0, 1] */
	public double failureRate() {
		return current().failureRate();
	}

	/** @return the window's slow-call rate now, a fraction in [0, 1] */
	public double slowCallRate() {
		return current().slowCallRate();
	}

	/** @return a copy of the window now */
	public BreakerSnapshot snapshot() {
		return BreakerSnapshot.of(current());
	}

	/** @return calls refused since the breaker was created */
	public long rejectedCalls() {
		return rejected.sum();
	}

	// ---------------------------------------------------------------- listeners

	/** Adds a listener; it must not block (see {@link BreakerListener}). */
	public void addListener(BreakerListener listener) {
		Objects.requireNonNull(listener, "listener");
		listen(listener);
	}

	/** @return whether {@code listener} was registered and is now removed */
	public boolean removeListener(BreakerListener listener) {
		return unlisten(listener);
	}

	@Override
	public String toString() {
		return "CircuitBreaker{" + name + ", " + phase.state + "}";
	}

	/**
	 * Builds a {@link CircuitBreaker}.
	 *
	 * <pre>{@code
	 * CircuitBreaker breaker = CircuitBreaker.builder("anthropic")
	 *     .config(config)
	 *     .clock(() -> scheduler.now(TimeUnit.NANOSECONDS))
	 *     .metrics(metrics)
	 *     .build();
	 * }</pre>
	 */
	public static final class Builder extends BreakerWiring<Builder> {

		private final String name;
		private BreakerConfig config = BreakerConfig.defaults();

		private Builder(String name) {
			BreakerConfig.notNull("name", name);
			if (name.isBlank()) {
				throw new IllegalArgumentException("name must not be blank, was '" + name + "'");
			}
			this.name = name;
		}

		@Override
		Builder self() {
			return this;
		}

		/** @param config the config (default {@link BreakerConfig#defaults()}) */
		public Builder config(BreakerConfig config) {
			this.config = BreakerConfig.notNull("config", config);
			return this;
		}

		/** @return the breaker, CLOSED, announced to the metrics */
		public CircuitBreaker build() {
			CircuitBreaker breaker = new CircuitBreaker(this);
			breaker.metrics.breakerCreated(breaker.name, breaker::state, breaker::failureRate,
					breaker::slowCallRate);
			return breaker;
		}
	}
}
