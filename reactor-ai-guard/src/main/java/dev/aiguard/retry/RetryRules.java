package dev.aiguard.retry;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeoutException;
import java.util.function.DoubleSupplier;
import java.util.function.Predicate;

import reactor.core.publisher.Operators;
import reactor.util.context.Context;
import dev.aiguard.core.RetryHint;

/**
 * When and how long to wait before sending a failed request again. Immutable and copy-on-write,
 * like Reactor's {@code RetryBackoffSpec}: every setter returns a new spec, so one spec can be a
 * shared template.
 *
 * <pre>{@code
 * RetryRules retry = RetryRules.backoff(4, Duration.ofMillis(250))   // 4 tries in all
 *     .maxBackoff(Duration.ofSeconds(5))
 *     .maxRetryAfter(Duration.ofSeconds(30))
 *     .retryOn(RetryRules.DEFAULT_RETRYABLE.or(e -> e instanceof MyTransientException));
 *
 * if (retry.canRetry(attemptsMade) && retry.isRetryable(error)) {
 *     Duration wait = retry.delayBefore(attemptsMade, error);   // the 1st retry follows the 1st attempt
 * }
 * }</pre>
 *
 * <h2>The delay</h2>
 * Retry {@code n} (1-based) is centred on the exponential value
 * {@code d = min(maxBackoff, minBackoff * 2^(n-1))}. With jitter {@code j} the delay is drawn
 * uniformly from {@code [d*(1-j), d*(1+j)]}, clamped to {@code [minBackoff, maxBackoff]}. The
 * default {@code j = 1} is full jitter: retry 1 waits 0.5–1 s, retry 2 0.5–2 s, retry 3 0.5–4 s,
 * so clients that failed together do not come back together, and nobody retries sooner than
 * {@code minBackoff}. When the error carries a server-requested wait ({@link RetryHint#retryAfter()},
 * from {@code Retry-After} / {@code retry-after-ms}) that is longer, the server wins, up to
 * {@link #maxRetryAfter(Duration) maxRetryAfter}.
 *
 * <p>This spec is pure: it neither sleeps nor counts. The guard counts the attempts, asks the
 * shared {@link RetryBudget}, schedules the wait on its timer, and never retries once a token has
 * reached the subscriber (see {@link MidStreamPolicy}).
 */
public final class RetryRules {

	/**
	 * The default classification. Walking the error and its causes (at most 8 deep), the first
	 * match decides:
	 * <ul>
	 * <li>a {@link RetryHint}: its {@link RetryHint#retryable()} (typed provider errors: 429, 5xx,
	 * overload are retryable; 4xx and context-length errors are not; a stalled or incomplete
	 * stream is retryable, and the guard only retries it before the first token);</li>
	 * <li>{@link IOException} (so {@code ConnectException} and Reactor Netty's premature close),
	 * {@link UncheckedIOException}, {@link TimeoutException}: retryable;</li>
	 * <li>{@link IllegalArgumentException}: not retryable.</li>
	 * </ul>
	 * Anything else is not retryable.
	 */
	public static final Predicate<Throwable> DEFAULT_RETRYABLE = RetryRules::isTransient;

	private static final int MAX_CAUSE_DEPTH = 8;
	private static final DoubleSupplier THREAD_LOCAL_RANDOM = () -> ThreadLocalRandom.current().nextDouble();

	private static final RetryRules DEFAULTS = new RetryRules(3, Duration.ofMillis(500), Duration.ofSeconds(8),
			Duration.ofSeconds(60), DEFAULT_RETRYABLE, 1.0d, THREAD_LOCAL_RANDOM);

	private final int maxAttempts;
	private final Duration minBackoff;
	private final Duration maxBackoff;
	private final Duration maxRetryAfter;
	private final Predicate<Throwable> retryOn;
	private final double jitter;
	private final DoubleSupplier random;
	private final long minNanos;
	private final long maxNanos;
	private final long maxRetryAfterNanos;

	private RetryRules(int maxAttempts, Duration minBackoff, Duration maxBackoff, Duration maxRetryAfter,
			Predicate<Throwable> retryOn, double jitter, DoubleSupplier random) {
		this.maxAttempts = maxAttempts;
		this.minBackoff = minBackoff;
		this.maxBackoff = maxBackoff;
		this.maxRetryAfter = maxRetryAfter;
		this.retryOn = retryOn;
		this.jitter = jitter;
		this.random = random;
		this.minNanos = saturatedNanos(minBackoff);
		this.maxNanos = saturatedNanos(maxBackoff);
		this.maxRetryAfterNanos = saturatedNanos(maxRetryAfter);
	}

	/**
	 * @return 3 tries in all, 500 ms minimum and 8 s maximum backoff, full jitter, server waits
	 * honoured up to 60 s, {@link #DEFAULT_RETRYABLE}
	 */
	public static RetryRules defaults() {
		return DEFAULTS;
	}

	/**
	 * @return a spec that never retries (one attempt in all)
	 */
	public static RetryRules none() {
		return DEFAULTS.maxAttempts(1);
	}

	/**
	 * The defaults with another number of tries and first backoff. When {@code minBackoff} exceeds
	 * the default maximum (8 s), the maximum is raised to it.
	 *
	 * @param maxAttempts tries in all, the first one included (1 = never retry)
	 * @param minBackoff the first retry's delay and the floor of every delay
	 * @throws IllegalArgumentException when {@code maxAttempts < 1} or {@code minBackoff} is negative
	 */
	public static RetryRules backoff(int maxAttempts, Duration minBackoff) {
		checkMinBackoff(minBackoff);
		Duration max = minBackoff.compareTo(DEFAULTS.maxBackoff) > 0 ? minBackoff : DEFAULTS.maxBackoff;
		return new RetryRules(checkMaxAttempts(maxAttempts), minBackoff, max, DEFAULTS.maxRetryAfter,
				DEFAULTS.retryOn, DEFAULTS.jitter, DEFAULTS.random);
	}

	/**
	 * @param attempts tries in all, the first one included (1 = never retry)
	 * @throws IllegalArgumentException when below 1
	 */
	public RetryRules maxAttempts(int attempts) {
		return new RetryRules(checkMaxAttempts(attempts), minBackoff, maxBackoff, maxRetryAfter, retryOn, jitter,
				random);
	}

	/**
	 * @param backoff the first retry's delay and the floor of every delay
	 * @throws IllegalArgumentException when negative or above {@code maxBackoff}
	 */
	public RetryRules minBackoff(Duration backoff) {
		checkMinBackoff(backoff);
		if (backoff.compareTo(maxBackoff) > 0) {
			throw new IllegalArgumentException(
					"minBackoff must be <= maxBackoff (" + maxBackoff + "), was " + backoff);
		}
		return new RetryRules(maxAttempts, backoff, maxBackoff, maxRetryAfter, retryOn, jitter, random);
	}

	/**
	 * @param backoff the longest computed delay (a server's {@code Retry-After} may be longer, up
	 * to {@link #maxRetryAfter(Duration)})
	 * @throws IllegalArgumentException when {@code null} or below {@code minBackoff}
	 */
	public RetryRules maxBackoff(Duration backoff) {
		if (backoff == null || backoff.compareTo(minBackoff) < 0) {
			throw new IllegalArgumentException(
					"maxBackoff must be >= minBackoff (" + minBackoff + "), was " + backoff);
		}
		return new RetryRules(maxAttempts, minBackoff, backoff, maxRetryAfter, retryOn, jitter, random);
	}

	/**
	 * @param cap the longest server-requested wait honoured; a longer {@code Retry-After} is cut
	 * to this (default 60 s); {@link Duration#ZERO} ignores server waits
	 * @throws IllegalArgumentException when {@code null} or negative
	 */
	public RetryRules maxRetryAfter(Duration cap) {
		if (cap == null || cap.isNegative()) {
			throw new IllegalArgumentException("maxRetryAfter must be >= 0, was " + cap);
		}
		return new RetryRules(maxAttempts, minBackoff, maxBackoff, cap, retryOn, jitter, random);
	}

	/**
	 * @param retryable which errors are worth a retry (default {@link #DEFAULT_RETRYABLE}); compose
	 * with {@code DEFAULT_RETRYABLE.or(...)} to extend it. A throwing predicate means "no".
	 * @throws IllegalArgumentException when {@code null}
	 */
	public RetryRules retryOn(Predicate<Throwable> retryable) {
		if (retryable == null) {
			throw new IllegalArgumentException("retryOn must not be null, was null");
		}
		return new RetryRules(maxAttempts, minBackoff, maxBackoff, maxRetryAfter, retryable, jitter, random);
	}

	/**
	 * @param factor how far a delay may stray from its exponential value, as a fraction of it:
	 * 0 = none, 1 = full jitter (default)
	 * @throws IllegalArgumentException when not within {@code [0, 1]}
	 */
	public RetryRules jitter(double factor) {
		if (!(factor >= 0.0d && factor <= 1.0d)) {
			throw new IllegalArgumentException("jitter must be between 0 and 1, was " + factor);
		}
		return new RetryRules(maxAttempts, minBackoff, maxBackoff, maxRetryAfter, retryOn, factor, random);
	}

	/**
	 * @param source random numbers in {@code [0, 1)} for the jitter (default
	 * {@link ThreadLocalRandom}); values outside are clamped. Inject a fixed one in tests.
	 * @throws IllegalArgumentException when {@code null}
	 */
	public RetryRules random(DoubleSupplier source) {
		if (source == null) {
			throw new IllegalArgumentException("random must not be null, was null");
		}
		return new RetryRules(maxAttempts, minBackoff, maxBackoff, maxRetryAfter, retryOn, jitter, source);
	}

	/** @return tries in all, the first one included */
	public int maxAttempts() {
		return maxAttempts;
	}

	/** @return retries allowed after the first attempt */
	public int maxRetries() {
		return maxAttempts - 1;
	}

	public Duration minBackoff() {
		return minBackoff;
	}

	public Duration maxBackoff() {
		return maxBackoff;
	}

	public Duration maxRetryAfter() {
		return maxRetryAfter;
	}

	public double jitter() {
		return jitter;
	}

	public Predicate<Throwable> retryOn() {
		return retryOn;
	}

	/**
	 * @param attemptsMade attempts already made (1 after the first failure)
	 * @return whether another attempt is allowed by {@link #maxAttempts()}
	 */
	public boolean canRetry(int attemptsMade) {
		return attemptsMade < maxAttempts;
	}

	/**
	 * Asks {@link #retryOn()}, isolating it: a predicate that throws counts as "not retryable" and
	 * its exception goes to {@code Hooks.onErrorDropped}.
	 *
	 * @return whether {@code error} is worth a retry
	 */
	public boolean isRetryable(Throwable error) {
		if (error == null) {
			return false;
		}
		try {
			return retryOn.test(error);
		}
		catch (Throwable predicateFailure) {
			Operators.onErrorDropped(predicateFailure, Context.empty());
			return false;
		}
	}

	/**
	 * The wait before retry {@code retryNumber}. Pure apart from one draw of {@link #random}.
	 *
	 * @param retryNumber 1 for the first retry (the second attempt), 2 for the next...
	 * @param cause the error that ended the previous attempt; a {@link RetryHint} in it (or its
	 * causes) may ask for a longer wait
	 * @return the exponential, jittered delay, or the server's wait when that is longer (capped at
	 * {@link #maxRetryAfter()})
	 * @throws IllegalArgumentException when {@code retryNumber < 1}
	 */
	public Duration delayBefore(int retryNumber, Throwable cause) {
		if (retryNumber < 1) {
			throw new IllegalArgumentException("retryNumber must be >= 1, was " + retryNumber);
		}
		long centre = exponential(retryNumber);
		long spread = (long) (centre * jitter);
		long low = Math.max(minNanos, centre - spread);
		long high = Math.min(maxNanos, saturatedAdd(centre, spread));
		long delay = low;
		if (high > low) {
			double u = random.getAsDouble();
			if (!(u > 0.0d)) {
				u = 0.0d;
			}
			else if (u > 1.0d) {
				u = 1.0d;
			}
			delay = low + (long) ((high - low) * u);
		}
		long serverWait = serverWaitNanos(cause);
		if (serverWait > 0L) {
			delay = Math.max(delay, Math.min(serverWait, maxRetryAfterNanos));
		}
		return Duration.ofNanos(delay);
	}

	/** {@code min(maxBackoff, minBackoff * 2^(n-1))} without overflow. */
	private long exponential(int retryNumber) {
		int shift = retryNumber - 1;
		if (minNanos == 0L) {
			return 0L;
		}
		if (shift >= 62 || minNanos > (maxNanos >> shift)) {
			return maxNanos;
		}
		return Math.min(maxNanos, minNanos << shift);
	}

	/** @return the wait a {@link RetryHint} in the cause chain asked for, in nanos, or -1 */
	private static long serverWaitNanos(Throwable cause) {
		Throwable t = cause;
		for (int depth = 0; t != null && depth < MAX_CAUSE_DEPTH; depth++) {
			if (t instanceof RetryHint) {
				try {
					Optional<Duration> wait = ((RetryHint) t).retryAfter();
					if (wait != null && wait.isPresent() && !wait.get().isNegative()) {
						return saturatedNanos(wait.get());
					}
				}
				catch (Throwable hintFailure) {
					Operators.onErrorDropped(hintFailure, Context.empty());
				}
				return -1L;
			}
			t = t.getCause() == t ? null : t.getCause();
		}
		return -1L;
	}

	private static boolean isTransient(Throwable error) {
		Throwable t = error;
		for (int depth = 0; t != null && depth < MAX_CAUSE_DEPTH; depth++) {
			if (t instanceof RetryHint) {
				return ((RetryHint) t).retryable();
			}
			if (t instanceof IOException || t instanceof UncheckedIOException
					|| t instanceof TimeoutException) {
				return true;
			}
			if (t instanceof IllegalArgumentException) {
				return false;
			}
			t = t.getCause() == t ? null : t.getCause();
		}
		return false;
	}

	private static int checkMaxAttempts(int attempts) {
		if (attempts < 1) {
			throw new IllegalArgumentException("maxAttempts must be >= 1, was " + attempts);
		}
		return attempts;
	}

	private static void checkMinBackoff(Duration backoff) {
		if (backoff == null || backoff.isNegative()) {
			throw new IllegalArgumentException("minBackoff must be >= 0, was " + backoff);
		}
	}

	private static long saturatedNanos(Duration d) {
		try {
			return d.toNanos();
		}
		catch (ArithmeticException tooLong) {
			return Long.MAX_VALUE;
		}
	}

	private static long saturatedAdd(long a, long b) {
		long r = a + b;
		return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
	}

	@Override
	public String toString() {
		return "RetryRules{maxAttempts=" + maxAttempts + ", minBackoff=" + minBackoff + ", maxBackoff=" + maxBackoff
				+ ", maxRetryAfter=" + maxRetryAfter + ", jitter=" + jitter + '}';
	}
}
