package dev.aiguard.stall;

import java.time.Duration;
import java.util.Objects;

import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import org.jspecify.annotations.Nullable;

/**
 * Deadlines for a token stream. Immutable and copy-on-write: every setter returns a new spec, so a
 * spec can be shared as a template.
 *
 * <pre>{@code
 * StallSpec spec = StallSpec.defaults()
 *     .firstTokenTimeout(Duration.ofSeconds(10))
 *     .idleTimeout(Duration.ofSeconds(30))
 *     .maxDuration(Duration.ofMinutes(5));
 * }</pre>
 *
 * <ul>
 * <li>{@code firstTokenTimeout}: from subscription to the first content chunk.</li>
 * <li>{@code idleTimeout}: between content chunks once content has started (from subscription
 * when no first-token timeout is set). Detected between {@code idleTimeout} and
 * {@code idleTimeout * (1 + 1/idleChecks)} after the last chunk.</li>
 * <li>{@code maxDuration}: the whole stream, backpressure included.</li>
 * </ul>
 * Each is optional ({@code null} = none). Heartbeats never count as content; whether they extend
 * the idle deadline is {@link #heartbeatsExtendIdle(boolean)} (off by default).
 */
public final class StallSpec {

	private static final StallSpec DEFAULTS = new StallSpec(null, null, null, false, true, 4, null, null);

	private final @Nullable Duration firstTokenTimeout;
	private final @Nullable Duration idleTimeout;
	private final @Nullable Duration maxDuration;
	private final boolean heartbeatsExtendIdle;
	private final boolean requireTerminal;
	private final int idleChecks;
	private final @Nullable Scheduler scheduler;
	private final @Nullable Scheduler cancelScheduler;
	// in nanoseconds, computed once here because every stream's deadline task reads them (0: none)
	private final long firstTokenNanos;
	private final long idleNanos;
	private final long idleTickNanos;
	private final long maxDurationNanos;

	private StallSpec(@Nullable Duration firstTokenTimeout, @Nullable Duration idleTimeout,
			@Nullable Duration maxDuration, boolean heartbeatsExtendIdle, boolean requireTerminal, int idleChecks,
			@Nullable Scheduler scheduler, @Nullable Scheduler cancelScheduler) {
		this.firstTokenTimeout = firstTokenTimeout;
		this.idleTimeout = idleTimeout;
		this.maxDuration = maxDuration;
		this.heartbeatsExtendIdle = heartbeatsExtendIdle;
		this.requireTerminal = requireTerminal;
		this.idleChecks = idleChecks;
		this.scheduler = scheduler;
		this.cancelScheduler = cancelScheduler;
		this.firstTokenNanos = firstTokenTimeout == null ? 0L : firstTokenTimeout.toNanos();
		this.idleNanos = idleTimeout == null ? 0L : idleTimeout.toNanos();
		this.idleTickNanos = idleNanos > 0 ? Math.max(1L, idleNanos / idleChecks) : 0L;
		this.maxDurationNanos = maxDuration == null ? 0L : maxDuration.toNanos();
	}

	/** @return a spec with no deadlines, terminal marker required, parallel scheduler. */
	public static StallSpec defaults() {
		return DEFAULTS;
	}

	/**
	 * @param timeout time allowed from subscription to the first content chunk, or {@code null} for none
	 * @throws IllegalArgumentException when not positive
	 */
	public StallSpec firstTokenTimeout(Duration timeout) {
		return new StallSpec(positive("firstTokenTimeout", timeout), idleTimeout, maxDuration, heartbeatsExtendIdle,
				requireTerminal, idleChecks, scheduler, cancelScheduler);
	}

	/**
	 * @param timeout longest silence allowed between content chunks, or {@code null} for none
	 * @throws IllegalArgumentException when not positive
	 */
	public StallSpec idleTimeout(Duration timeout) {
		return new StallSpec(firstTokenTimeout, positive("idleTimeout", timeout), maxDuration, heartbeatsExtendIdle,
				requireTerminal, idleChecks, scheduler, cancelScheduler);
	}

	/**
	 * @param duration longest time the whole stream may take, or {@code null} for none
	 * @throws IllegalArgumentException when not positive
	 */
	public StallSpec maxDuration(Duration duration) {
		return new StallSpec(firstTokenTimeout, idleTimeout, positive("maxDuration", duration), heartbeatsExtendIdle,
				requireTerminal, idleChecks, scheduler, cancelScheduler);
	}

	/**
	 * Whether heartbeats (pings, SSE comments) reset the idle deadline. Off by default: a server
	 * whose generation hung may still ping. Turn it on for reasoning models that think for minutes
	 * and send pings meanwhile; keep a {@code maxDuration} then.
	 */
	public StallSpec heartbeatsExtendIdle(boolean extend) {
		return new StallSpec(firstTokenTimeout, idleTimeout, maxDuration, extend, requireTerminal, idleChecks,
				scheduler, cancelScheduler);
	}

	/**
	 * Whether a stream that completes without a terminal chunk or finish reason fails with
	 * {@link IncompleteStreamException}. On by default.
	 */
	public StallSpec requireTerminal(boolean require) {
		return new StallSpec(firstTokenTimeout, idleTimeout, maxDuration, heartbeatsExtendIdle, require, idleChecks,
				scheduler, cancelScheduler);
	}

	/**
	 * How many checks the idle watch makes per {@code idleTimeout} (default 4): more checks, tighter
	 * detection ({@code idleTimeout / idleChecks} late at most), more timer wake-ups per stream.
	 *
	 * @throws IllegalArgumentException when not between 1 and 1000
	 */
	public StallSpec idleChecks(int checks) {
		if (checks < 1 || checks > 1000) {
			throw new IllegalArgumentException("idleChecks must be between 1 and 1000, was " + checks);
		}
		return new StallSpec(firstTokenTimeout, idleTimeout, maxDuration, heartbeatsExtendIdle, requireTerminal, checks,
				scheduler, cancelScheduler);
	}

	/**
	 * The scheduler the deadlines run on and read time from (default {@link Schedulers#parallel()},
	 * resolved at subscription so {@code StepVerifier.withVirtualTime} replaces it).
	 */
	public StallSpec scheduler(Scheduler timer) {
		return new StallSpec(firstTokenTimeout, idleTimeout, maxDuration, heartbeatsExtendIdle, requireTerminal,
				idleChecks, Objects.requireNonNull(timer, "scheduler"), cancelScheduler);
	}

	/**
	 * Where the upstream is cancelled when a deadline ends the stream (default
	 * {@link Schedulers#boundedElastic()}). The subscriber hears of the stall first; the cancel
	 * follows on this scheduler, never on the timer, because clients such as the OpenAI Java SDK
	 * or Spring AI close their HTTP response on cancel with a blocking call. Pass
	 * {@link Schedulers#immediate()} to cancel on the timer thread right after the signal, for an
	 * upstream whose cancel is known not to block.
	 */
	public StallSpec cancelOn(Scheduler cancelScheduler) {
		return new StallSpec(firstTokenTimeout, idleTimeout, maxDuration, heartbeatsExtendIdle, requireTerminal,
				idleChecks, scheduler, Objects.requireNonNull(cancelScheduler, "cancelScheduler"));
	}

	public @Nullable Duration firstTokenTimeout() {
		return firstTokenTimeout;
	}

	public @Nullable Duration idleTimeout() {
		return idleTimeout;
	}

	public @Nullable Duration maxDuration() {
		return maxDuration;
	}

	public boolean heartbeatsExtendIdle() {
		return heartbeatsExtendIdle;
	}

	public boolean requireTerminal() {
		return requireTerminal;
	}

	public int idleChecks() {
		return idleChecks;
	}

	/** @return the injected scheduler, else {@link Schedulers#parallel()} as of now. */
	public Scheduler scheduler() {
		return scheduler != null ? scheduler : Schedulers.parallel();
	}

	/** @return the injected cancel scheduler, else {@link Schedulers#boundedElastic()} as of now. */
	public Scheduler cancelScheduler() {
		return cancelScheduler != null ? cancelScheduler : Schedulers.boundedElastic();
	}

	/**
	 * @return this spec without deadlines and without the terminal-marker requirement, keeping its
	 *         schedulers: what the guard watches a fallback answer or a notice with
	 */
	public StallSpec withoutDeadlines() {
		return new StallSpec(null, null, null, heartbeatsExtendIdle, false, idleChecks, scheduler, cancelScheduler);
	}

	/** @return the first-token timeout in nanoseconds, 0 when none (computed once, for the watch) */
	public long firstTokenNanos() {
		return firstTokenNanos;
	}

	/** @return the idle timeout in nanoseconds, 0 when none (computed once, for the watch) */
	public long idleNanos() {
		return idleNanos;
	}

	/** @return the interval between idle checks in nanoseconds ({@code idleTimeout / idleChecks}), 0 when none */
	public long idleTickNanos() {
		return idleTickNanos;
	}

	/** @return the maximum duration in nanoseconds, 0 when none */
	public long maxDurationNanos() {
		return maxDurationNanos;
	}

	/** @return whether any deadline is set. */
	public boolean hasDeadlines() {
		return firstTokenTimeout != null || idleTimeout != null || maxDuration != null;
	}

	private static Duration positive(String field, Duration value) {
		if (value != null && (value.isNegative() || value.isZero())) {
			throw new IllegalArgumentException(field + " must be > 0, was " + value);
		}
		return value;
	}

	@Override
	public String toString() {
		return "StallSpec{firstTokenTimeout=" + firstTokenTimeout + ", idleTimeout=" + idleTimeout + ", maxDuration="
				+ maxDuration + ", heartbeatsExtendIdle=" + heartbeatsExtendIdle + ", requireTerminal=" + requireTerminal
				+ ", idleChecks=" + idleChecks + '}';
	}
}
