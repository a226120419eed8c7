package dev.aiguard.breaker;

import dev.aiguard.core.Outcome;

/**
 * Permission for one attempt, granted by {@link CircuitBreaker#tryAcquire()}. The holder settles
 * it once with the attempt's outcome; later calls are ignored. A cancel racing the terminal outcome
 * is always safe: it counts once or not at all, and a half-open probe is decided by a CAS whatever
 * races it. For a permit granted while CLOSED the first settlement is a plain write (it saves an
 * atomic operation per call), so two outcomes that both count must not be reported at the same
 * instant from unsynchronised threads; repeats after the first, from any thread, are ignored.
 *
 * <pre>{@code
 * BreakerPermit permit = breaker.tryAcquire();
 * if (permit != null) {
 *     flux.doOnComplete(() -> permit.record(Outcome.SUCCESS, ttft.get()))
 *         .doOnError(e -> permit.record(Outcome.FAILURE, ttft.get()))
 *         .doOnCancel(() -> permit.record(Outcome.CANCELLED, -1));
 * }
 * }</pre>
 *
 * <ul>
 * <li>{@link Outcome#SUCCESS}: a success, slow when {@code timeToFirstTokenNanos} reaches the
 * configured slow threshold;</li>
 * <li>{@link Outcome#FAILURE}, {@link Outcome#STALLED}, {@link Outcome#INCOMPLETE}: failures;</li>
 * <li>{@link Outcome#CLIENT_ERROR}: ignored unless configured otherwise;</li>
 * <li>{@link Outcome#CANCELLED}, {@link Outcome#REJECTED}: the permission is handed back without
 * recording anything (a half-open probe slot becomes free again).</li>
 * </ul>
 */
public interface BreakerPermit {

	/**
	 * Settles the permission.
	 *
	 * @param outcome how the attempt ended
	 * @param timeToFirstTokenNanos nanoseconds to the first content chunk, or -1 when none arrived
	 */
	void record(Outcome outcome, long timeToFirstTokenNanos);

	/**
	 * Settles the permission at a time the caller has already read from the breaker's clock, so the
	 * breaker reads no clock of its own (the guard passes the scheduler time it read for the attempt's
	 * end). Same rules as {@link #record(Outcome, long)}; a permit that does not use time ignores
	 * {@code nowNanos}.
	 *
	 * <pre>{@code
	 * long now = scheduler.now(TimeUnit.NANOSECONDS);
	 * permit.record(Outcome.SUCCESS, firstTokenAt - startedAt, now);
	 * }</pre>
	 *
	 * @param outcome how the attempt ended
	 * @param timeToFirstTokenNanos nanoseconds to the first content chunk, or -1 when none arrived
	 * @param nowNanos the breaker clock's current reading (same origin as the breaker's clock)
	 */
	default void record(Outcome outcome, long timeToFirstTokenNanos, long nowNanos) {
		record(outcome, timeToFirstTokenNanos);
	}

	/**
	 * Tells the permit how many tokens the attempt's prompt holds, before it is settled, so the
	 * breaker can allow a long prompt a longer first token
	 * ({@link BreakerConfig.Builder#slowTimeToFirstTokenPerPromptToken}). Set it from the thread that
	 * settles the permit, or before handing the permit over. A permit that does not judge slowness by
	 * prompt size ignores it.
	 *
	 * <pre>{@code
	 * permit.promptTokens(estimatedPromptTokens).record(Outcome.SUCCESS, ttftNanos);
	 * }</pre>
	 *
	 * @param tokens the prompt's tokens, counted or estimated; 0 or less for unknown
	 * @return this permit
	 */
	default BreakerPermit promptTokens(int tokens) {
		return this;
	}
}
