package dev.aiguard;

import java.time.Duration;
import java.util.Objects;

import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import org.jspecify.annotations.Nullable;

/**
 * What one priority does differently from the rest of its {@link GuardPolicy}: its deadlines, its
 * retry rules, whether the breaker counts its attempts, and the size of its lane. Immutable and
 * copy-on-write: every setter checks its argument and returns a new value, so a value is a
 * shareable template. Settings left unset follow the policy.
 *
 * <pre>{@code
 * GuardPolicy policy = GuardPolicy.builder("chat")
 *     .stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(10)).idleTimeout(Duration.ofSeconds(5)))
 *     .retry(RetryRules.backoff(2, Duration.ofMillis(500)))
 *     .forPriority(Priority.P0, p -> p.firstTokenTimeout(Duration.ofSeconds(5)).retry(RetryRules.backoff(3, Duration.ofMillis(200))))
 *     .forPriority(Priority.P2, p -> p.firstTokenTimeout(Duration.ofSeconds(30)).retry(RetryRules.none())
 *         .countedByBreaker(false))
 *     .build();
 * }</pre>
 */
public final class PriorityOverrides {

	private static final PriorityOverrides NONE = new PriorityOverrides(null, null, null, null, null, null, -1);

	@Nullable
	private final StallSpec stall;
	@Nullable
	private final Duration firstTokenTimeout;
	@Nullable
	private final Duration idleTimeout;
	@Nullable
	private final Duration maxDuration;
	@Nullable
	private final RetryRules retry;
	@Nullable
	private final Boolean countedByBreaker;
	/** {@code -1}: the lane keeps the size it was built with. */
	private final int laneConcurrency;

	private PriorityOverrides(@Nullable StallSpec stall, @Nullable Duration firstTokenTimeout,
			@Nullable Duration idleTimeout, @Nullable Duration maxDuration, @Nullable RetryRules retry,
			@Nullable Boolean countedByBreaker, int laneConcurrency) {
		this.stall = stall;
		this.firstTokenTimeout = firstTokenTimeout;
		this.idleTimeout = idleTimeout;
		this.maxDuration = maxDuration;
		this.retry = retry;
		this.countedByBreaker = countedByBreaker;
		this.laneConcurrency = laneConcurrency;
	}

	/** @return no override: the priority follows the policy in everything */
	public static PriorityOverrides none() {
		return NONE;
	}

	/**
	 * @param spec the priority's whole stall spec, instead of the policy's; the deadline setters
	 *        below still apply on top of it
	 */
	public PriorityOverrides stall(StallSpec spec) {
		return new PriorityOverrides(require("stall", spec), firstTokenTimeout, idleTimeout, maxDuration, retry,
				countedByBreaker, laneConcurrency);
	}

	/** @param timeout the priority's time to the first content chunk, over the policy's stall spec */
	public PriorityOverrides firstTokenTimeout(Duration timeout) {
		return new PriorityOverrides(stall, positive("firstTokenTimeout", timeout), idleTimeout, maxDuration, retry,
				countedByBreaker, laneConcurrency);
	}

	/** @param timeout the priority's longest silence between content chunks, over the policy's stall spec */
	public PriorityOverrides idleTimeout(Duration timeout) {
		return new PriorityOverrides(stall, firstTokenTimeout, positive("idleTimeout", timeout), maxDuration, retry,
				countedByBreaker, laneConcurrency);
	}

	/** @param duration the priority's longest stream, over the policy's stall spec */
	public PriorityOverrides maxDuration(Duration duration) {
		return new PriorityOverrides(stall, firstTokenTimeout, idleTimeout, positive("maxDuration", duration), retry,
				countedByBreaker, laneConcurrency);
	}

	/**
	 * @param rules the priority's retry rules ({@link RetryRules#none()}: never retried). Like the
	 *        policy's own {@code retry(..)}, its {@code maxAttempts} also caps truncated retries
	 */
	public PriorityOverrides retry(RetryRules rules) {
		return new PriorityOverrides(stall, firstTokenTimeout, idleTimeout, maxDuration, require("retry", rules),
				countedByBreaker, laneConcurrency);
	}

	/**
	 * @param counted whether the policy's breaker counts this priority's attempts (default true).
	 *        When false the priority still asks the breaker for permission (an open breaker refuses
	 *        it), but each attempt hands its permission back uncounted, success or failure alike, so
	 *        its outcomes and slow first tokens never open or close the circuit
	 */
	public PriorityOverrides countedByBreaker(boolean counted) {
		return new PriorityOverrides(stall, firstTokenTimeout, idleTimeout, maxDuration, retry, counted,
				laneConcurrency);
	}

	/**
	 * @param concurrency the permits of this priority's lane in the policy's lanes, applied with
	 *        {@code PriorityLanes.resize} when a guard puts the policy in force; 0 leaves the lane
	 *        only what it may borrow
	 */
	public PriorityOverrides laneConcurrency(int concurrency) {
		if (concurrency < 0) {
			throw new IllegalArgumentException("laneConcurrency must be >= 0, was " + concurrency);
		}
		return new PriorityOverrides(stall, firstTokenTimeout, idleTimeout, maxDuration, retry, countedByBreaker,
				concurrency);
	}

	/** @return the priority's whole stall spec, or {@code null} to start from the policy's */
	@Nullable
	public StallSpec stall() {
		return stall;
	}

	@Nullable
	public Duration firstTokenTimeout() {
		return firstTokenTimeout;
	}

	@Nullable
	public Duration idleTimeout() {
		return idleTimeout;
	}

	@Nullable
	public Duration maxDuration() {
		return maxDuration;
	}

	/** @return the priority's retry rules, or {@code null} to follow the policy's */
	@Nullable
	public RetryRules retry() {
		return retry;
	}

	/** @return whether the breaker counts the priority's attempts, or {@code null} to follow the default (yes) */
	@Nullable
	public Boolean countedByBreaker() {
		return countedByBreaker;
	}

	/** @return the lane's size, or {@code -1} when the lane keeps the size it was built with */
	public int laneConcurrency() {
		return laneConcurrency;
	}

	/** @return whether nothing is overridden */
	public boolean isEmpty() {
		return equals(NONE);
	}

	/** The priority's stall spec: the override's or {@code base}, with the overridden deadlines on top. */
	StallSpec stallOver(StallSpec base) {
		StallSpec s = stall != null ? stall : base;
		if (firstTokenTimeout != null) {
			s = s.firstTokenTimeout(firstTokenTimeout);
		}
		if (idleTimeout != null) {
			s = s.idleTimeout(idleTimeout);
		}
		if (maxDuration != null) {
			s = s.maxDuration(maxDuration);
		}
		return s;
	}

	@Override
	public boolean equals(Object o) {
		if (this == o) {
			return true;
		}
		if (!(o instanceof PriorityOverrides)) {
			return false;
		}
		PriorityOverrides p = (PriorityOverrides) o;
		return laneConcurrency == p.laneConcurrency && Objects.equals(stall, p.stall)
				&& Objects.equals(firstTokenTimeout, p.firstTokenTimeout) && Objects.equals(idleTimeout, p.idleTimeout)
				&& Objects.equals(maxDuration, p.maxDuration) && Objects.equals(retry, p.retry)
				&& Objects.equals(countedByBreaker, p.countedByBreaker);
	}

	@Override
	public int hashCode() {
		return Objects.hash(stall, firstTokenTimeout, idleTimeout, maxDuration, retry, countedByBreaker,
				laneConcurrency);
	}

	@Override
	public String toString() {
		return "PriorityOverrides{" + (stall != null ? "stall=" + stall + ", " : "")
				+ (firstTokenTimeout != null ? "firstTokenTimeout=" + firstTokenTimeout + ", " : "")
				+ (idleTimeout != null ? "idleTimeout=" + idleTimeout + ", " : "")
				+ (maxDuration != null ? "maxDuration=" + maxDuration + ", " : "")
				+ (retry != null ? "retry=" + retry + ", " : "")
				+ (countedByBreaker != null ? "countedByBreaker=" + countedByBreaker + ", " : "")
				+ (laneConcurrency >= 0 ? "laneConcurrency=" + laneConcurrency : "") + '}';
	}

	private static <V> V require(String field, V value) {
		if (value == null) {
			throw new IllegalArgumentException(field + " must not be null");
		}
		return value;
	}

	private static Duration positive(String field, Duration value) {
		if (value == null || value.isNegative() || value.isZero()) {
			throw new IllegalArgumentException(field + " must be > 0, was " + value);
		}
		return value;
	}
}
