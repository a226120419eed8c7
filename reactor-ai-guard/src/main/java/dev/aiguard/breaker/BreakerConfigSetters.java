package dev.aiguard.breaker;

import java.time.Duration;

import dev.aiguard.breaker.BreakerConfig.WindowType;
import org.jspecify.annotations.Nullable;

import static dev.aiguard.breaker.BreakerConfig.notNull;

/**
 * The setters of {@link BreakerConfig.Builder}: the settings with their defaults, each setter checking
 * its one value and naming the field when it is wrong. The rules that join two settings are
 * {@link BreakerConfig.Builder#build()}'s. Typed by the builder so every setter returns it.
 *
 * @param <B> the builder
 */
abstract class BreakerConfigSetters<B extends BreakerConfigSetters<B>> {

	private static final Duration MAX_DURATION = Duration.ofDays(365);

	double failureRateThreshold = 0.5;
	double slowCallRateThreshold = 1.0;
	Duration slowTimeToFirstToken = Duration.ofSeconds(10);
	int minimumCalls = 20;
	WindowType windowType = WindowType.TIME_BASED;
	int windowSize = 60;
	@Nullable Duration bucketLength = Duration.ofSeconds(1);
	Duration openWait = Duration.ofSeconds(60);
	double openWaitMultiplier = 2.0;
	Duration maxOpenWait = Duration.ofMinutes(10);
	double openWaitJitter = 0.1;
	int halfOpenProbes = 10;
	double halfOpenProbeRatio = 0;
	int successesToClose = 5;
	Duration maxTimeInHalfOpen = Duration.ofMinutes(2);
	double hysteresis = 0.2;
	Duration minimumDwell = Duration.ofSeconds(5);
	TripPolicy tripPolicy = TripPolicy.failureRate();
	boolean recordClientErrors;
	Duration slowTimeToFirstTokenPerPromptToken = Duration.ZERO;
	int consecutiveFailuresToTrip;
	Duration tripDelay = Duration.ZERO;
	Duration rampUp = Duration.ZERO;
	Duration warmUp = Duration.ZERO;
	double warmUpThresholdFactor = 2.0;
	Duration p0ProbeWindow = Duration.ZERO;
	double openP0ProbeShare;

	BreakerConfigSetters() {
	}

	/** Starts from the values of {@code c}. */
	BreakerConfigSetters(BreakerConfig c) {
		this.failureRateThreshold = c.failureRateThreshold();
		this.slowCallRateThreshold = c.slowCallRateThreshold();
		this.slowTimeToFirstToken = c.slowTimeToFirstToken();
		this.minimumCalls = c.minimumCalls();
		this.windowType = c.windowType();
		this.windowSize = c.windowSize();
		this.bucketLength = c.bucketLength();
		this.openWait = c.openWait();
		this.openWaitMultiplier = c.openWaitMultiplier();
		this.maxOpenWait = c.maxOpenWait();
		this.openWaitJitter = c.openWaitJitter();
		this.halfOpenProbes = c.halfOpenProbes();
		this.halfOpenProbeRatio = c.halfOpenProbeRatio();
		this.successesToClose = c.successesToClose();
		this.maxTimeInHalfOpen = c.maxTimeInHalfOpen();
		this.hysteresis = c.hysteresis();
		this.minimumDwell = c.minimumDwell();
		this.tripPolicy = c.tripPolicy();
		this.recordClientErrors = c.recordClientErrors();
		this.slowTimeToFirstTokenPerPromptToken = c.slowTimeToFirstTokenPerPromptToken();
		this.consecutiveFailuresToTrip = c.consecutiveFailuresToTrip();
		this.tripDelay = c.tripDelay();
		this.rampUp = c.rampUp();
		this.warmUp = c.warmUp();
		this.warmUpThresholdFactor = c.warmUpThresholdFactor();
		this.p0ProbeWindow = c.p0ProbeWindow();
		this.openP0ProbeShare = c.openP0ProbeShare();
	}

	/** @return this builder, as its own type */
	abstract B self();

	/** @param threshold a fraction in (0, 1]: 0.5 trips at 50 % failures */
	public B failureRateThreshold(double threshold) {
		this.failureRateThreshold = fraction("failureRateThreshold", threshold);
		return self();
	}

	/** @param threshold a fraction in (0, 1]: 1.0 trips only when every call in the window is slow */
	public B slowCallRateThreshold(double threshold) {
		this.slowCallRateThreshold = fraction("slowCallRateThreshold", threshold);
		return self();
	}

	/**
	 * @param threshold time to first token at or above which a call is slow. A stream is judged by its
	 * first token, never by its total duration (which grows with the answer's length).
	 */
	public B slowTimeToFirstToken(Duration threshold) {
		this.slowTimeToFirstToken = positive("slowTimeToFirstToken", threshold);
		return self();
	}

	/** @param calls the fewest calls in the window for rates to be judged, at least 1 */
	public B minimumCalls(int calls) {
		if (calls < 1) {
			throw new IllegalArgumentException("minimumCalls must be at least 1, was " + calls);
		}
		this.minimumCalls = calls;
		return self();
	}

	/**
	 * A time-based window of {@code buckets} buckets of {@code bucketLength} each (the default is
	 * 60 × 1 s).
	 *
	 * @param buckets between 1 and 3600
	 * @param bucketLength at least 1 ms, at most 1 hour
	 */
	public B timeWindow(int buckets, Duration bucketLength) {
		if (buckets < 1 || buckets > 3600) {
			throw new IllegalArgumentException("timeWindow buckets must be between 1 and 3600, was " + buckets);
		}
		notNull("timeWindow bucketLength", bucketLength);
		if (bucketLength.compareTo(Duration.ofMillis(1)) < 0 || bucketLength.compareTo(Duration.ofHours(1)) > 0) {
			throw new IllegalArgumentException(
					"timeWindow bucketLength must be between 1 ms and 1 hour, was " + bucketLength);
		}
		this.windowType = WindowType.TIME_BASED;
		this.windowSize = buckets;
		this.bucketLength = bucketLength;
		return self();
	}

	/** A count-based window of the last {@code calls} calls, between 1 and 100 000. */
	public B countWindow(int calls) {
		if (calls < 1 || calls > 100_000) {
			throw new IllegalArgumentException("countWindow calls must be between 1 and 100000, was " + calls);
		}
		this.windowType = WindowType.COUNT_BASED;
		this.windowSize = calls;
		this.bucketLength = null;
		return self();
	}

	/** @param wait time OPEN before the first probe, positive */
	public B openWait(Duration wait) {
		this.openWait = positive("openWait", wait);
		return self();
	}

	/**
	 * @param multiplier growth of the open wait on each consecutive re-open (at least 1.0; 1.0 = no
	 * growth). A trip soon after a re-close counts as consecutive: the streak ends only once the breaker
	 * has stayed closed for as long as it was last held open.
	 */
	public B openWaitMultiplier(double multiplier) {
		if (!(multiplier >= 1.0) || multiplier > 100 || Double.isNaN(multiplier)) {
			throw new IllegalArgumentException("openWaitMultiplier must be between 1.0 and 100, was " + multiplier);
		}
		this.openWaitMultiplier = multiplier;
		return self();
	}

	/** @param wait the cap of the growing open wait, positive, at least {@code openWait} (checked by build) */
	public B maxOpenWait(Duration wait) {
		this.maxOpenWait = positive("maxOpenWait", wait);
		return self();
	}

	/**
	 * @param jitter share of the wait added at random, in [0, 1]: 0.1 makes a 60 s wait last 60 to 66 s, so
	 * breakers of many instances do not probe in lockstep. The wait is never shorter than computed.
	 */
	public B openWaitJitter(double jitter) {
		if (!(jitter >= 0 && jitter <= 1)) {
			throw new IllegalArgumentException("openWaitJitter must be between 0 and 1, was " + jitter);
		}
		this.openWaitJitter = jitter;
		return self();
	}

	/**
	 * Probes as a count: at most {@code probes} calls are let through per HALF_OPEN episode (a
	 * cancelled or ignored probe gives its slot back). Replaces a ratio set earlier.
	 *
	 * @param probes between 1 and 10 000
	 */
	public B halfOpenProbes(int probes) {
		if (probes < 1 || probes > 10_000) {
			throw new IllegalArgumentException("halfOpenProbes must be between 1 and 10000, was " + probes);
		}
		this.halfOpenProbes = probes;
		this.halfOpenProbeRatio = 0;
		return self();
	}

	/**
	 * Probes as a share of traffic: that fraction of the calls offered while HALF_OPEN is let through
	 * (deterministically: the 1st, then every {@code 1/ratio}-th). Replaces a count set earlier.
	 *
	 * @param ratio a fraction in (0, 1]
	 */
	public B halfOpenProbeRatio(double ratio) {
		this.halfOpenProbeRatio = fraction("halfOpenProbeRatio", ratio);
		this.halfOpenProbes = 0;
		return self();
	}

	/** @param successes healthy probes (not failed, not slow) needed to close, at least 1 */
	public B successesToClose(int successes) {
		if (successes < 1) {
			throw new IllegalArgumentException("successesToClose must be at least 1, was " + successes);
		}
		this.successesToClose = successes;
		return self();
	}

	/** @param max time HALF_OPEN may last without a decision before it re-opens, positive */
	public B maxTimeInHalfOpen(Duration max) {
		this.maxTimeInHalfOpen = positive("maxTimeInHalfOpen", max);
		return self();
	}

	/**
	 * @param band in [0, 1): the breaker trips when the pressure reaches 1 (rate = threshold) but closes
	 * only when the probes' pressure is below {@code 1 - band}; with 0.2 and a 50 % threshold, probes
	 * must fail less than 40 %.
	 */
	public B hysteresis(double band) {
		if (!(band >= 0 && band < 1)) {
			throw new IllegalArgumentException("hysteresis must be in [0, 1), was " + band);
		}
		this.hysteresis = band;
		return self();
	}

	/**
	 * @param dwell least time in a state before an automatic transition out of it: a breaker re-closed
	 * by its probes cannot trip again sooner, and HALF_OPEN cannot close sooner. Zero disables it; it
	 * must not exceed {@code openWait} (checked by build).
	 */
	public B minimumDwell(Duration dwell) {
		notNull("minimumDwell", dwell);
		if (dwell.isNegative()) {
			throw new IllegalArgumentException("minimumDwell must not be negative, was " + dwell);
		}
		this.minimumDwell = dwell;
		return self();
	}

	/** @param policy what trips CLOSED to OPEN */
	public B tripPolicy(TripPolicy policy) {
		this.tripPolicy = notNull("tripPolicy", policy);
		return self();
	}

	/** @param record whether client errors (400, context length exceeded...) count as failures */
	public B recordClientErrors(boolean record) {
		this.recordClientErrors = record;
		return self();
	}

	/**
	 * Normalises slowness by prompt size: a long prompt legitimately takes longer to its first
	 * token, so a call is slow from {@code slowTimeToFirstToken + perToken × promptTokens}, where
	 * the prompt tokens are what the caller gave the permit ({@link BreakerPermit#promptTokens(int)};
	 * the guard's call form passes an estimate of its request). A permit without a prompt size is
	 * judged by {@code slowTimeToFirstToken} alone. The trip policy sees the time to first token
	 * scaled down by the same factor, so policies that learn or limit first-token times compare like
	 * with like.
	 *
	 * <pre>{@code
	 * // 1 s for a short prompt, 10 s for 5000 characters (about 1250 tokens)
	 * .slowTimeToFirstToken(Duration.ofSeconds(1))
	 * .slowTimeToFirstTokenPerPromptToken(Duration.ofNanos(7_200_000))
	 * }</pre>
	 *
	 * @param perToken zero (off) up to 1 s
	 */
	public B slowTimeToFirstTokenPerPromptToken(Duration perToken) {
		notNull("slowTimeToFirstTokenPerPromptToken", perToken);
		if (perToken.isNegative() || perToken.compareTo(Duration.ofSeconds(1)) > 0) {
			throw new IllegalArgumentException(
					"slowTimeToFirstTokenPerPromptToken must be between 0 and 1 s, was " + perToken);
		}
		this.slowTimeToFirstTokenPerPromptToken = perToken;
		return self();
	}

	/**
	 * @param failures failures in a row (stalls, incomplete streams and recorded client errors
	 * included) that trip a CLOSED breaker at once, before {@code minimumCalls}, the trip delay and
	 * the warm-up; any success between them starts the count again. Between 1 and 10 000, or 0 for
	 * off (the default).
	 */
	public B consecutiveFailuresToTrip(int failures) {
		if (failures < 0 || failures > 10_000) {
			throw new IllegalArgumentException(
					"consecutiveFailuresToTrip must be between 0 (off) and 10000, was " + failures);
		}
		this.consecutiveFailuresToTrip = failures;
		return self();
	}

	/**
	 * @param delay how long the trip policy's pressure must stay at 1 or more before the breaker
	 * trips: a spike that is over sooner is ignored. While the pressure is up, every call is judged,
	 * successes too, so its fall is seen. Zero (the default) trips at once; at most 1 hour.
	 */
	public B tripDelay(Duration delay) {
		this.tripDelay = nonNegative("tripDelay", delay, Duration.ofHours(1));
		return self();
	}

	/**
	 * @param ramp after HALF_OPEN closes, the share of calls a CLOSED breaker admits grows linearly
	 * from 0 to 1 over this period; the others are refused like calls to an open breaker (the guard
	 * takes its fallback ladder) and are not counted as failures. The share is deterministic (the
	 * admitted calls are spread evenly among the offered ones). Zero (the default) admits everything
	 * at once; at most 1 hour. A new breaker and an operator's close do not ramp.
	 */
	public B rampUp(Duration ramp) {
		this.rampUp = nonNegative("rampUp", ramp, Duration.ofHours(1));
		return self();
	}

	/**
	 * @param warmUp for this long after the breaker is built, a trip needs
	 * {@link #warmUpThresholdFactor(double)} times the usual pressure (a cold provider's first calls
	 * are slower and fail more). Zero (the default) is off; at most 1 hour.
	 */
	public B warmUp(Duration warmUp) {
		this.warmUp = nonNegative("warmUp", warmUp, Duration.ofHours(1));
		return self();
	}

	/**
	 * @param factor the pressure a trip needs during warm-up, between 1 and 100 (default 2: with a
	 * 0.5 failure-rate threshold, warm-up trips only at 100 % failures)
	 */
	public B warmUpThresholdFactor(double factor) {
		if (!(factor >= 1 && factor <= 100)) {
			throw new IllegalArgumentException("warmUpThresholdFactor must be between 1 and 100, was " + factor);
		}
		this.warmUpThresholdFactor = factor;
		return self();
	}

	/**
	 * @param window for this long after the breaker enters HALF_OPEN, a call asked for at
	 * {@code P1} or {@code P2} ({@link CircuitBreaker#tryAcquire(dev.aiguard.core.Priority)}) is
	 * refused, so the probe slots go to {@code P0} first; after it, any priority probes. A call
	 * without a priority ({@link CircuitBreaker#tryAcquire()}) is not held back. Zero (the default)
	 * is off; at most 1 hour.
	 */
	public B p0ProbeWindow(Duration window) {
		this.p0ProbeWindow = nonNegative("p0ProbeWindow", window, Duration.ofHours(1));
		return self();
	}

	/**
	 * @param share while the breaker is OPEN (not FORCED_OPEN), this share of the {@code P0} calls
	 * still passes: the first P0 call offered in the stay, then each time the count of P0 calls
	 * times the share crosses a whole number. Their outcomes are counted in the window but decide
	 * nothing (the open wait still ends the stay). {@code P1}, {@code P2} and calls without a
	 * priority are refused. Between 0 (off, the default) and 0.5; meant for a system-wide breaker,
	 * so a total outage still lets a trickle of the most urgent traffic find the first recovery.
	 */
	public B openP0ProbeShare(double share) {
		if (!(share >= 0 && share <= 0.5)) {
			throw new IllegalArgumentException("openP0ProbeShare must be between 0 (off) and 0.5, was " + share);
		}
		this.openP0ProbeShare = share;
		return self();
	}

	private static double fraction(String field, double value) {
		if (!(value > 0 && value <= 1)) {
			throw new IllegalArgumentException(field + " must be a fraction in (0, 1], was " + value
					+ (value > 1 && value <= 100 ? " (write 0.5 for 50 %)" : ""));
		}
		return value;
	}

	private static Duration nonNegative(String field, Duration value, Duration max) {
		notNull(field, value);
		if (value.isNegative() || value.compareTo(max) > 0) {
			throw new IllegalArgumentException(field + " must be between 0 and " + max + ", was " + value);
		}
		return value;
	}

	private static Duration positive(String field, Duration value) {
		notNull(field, value);
		if (value.isZero() || value.isNegative() || value.compareTo(MAX_DURATION) > 0) {
			throw new IllegalArgumentException(field + " must be positive and at most 365 days, was " + value);
		}
		return value;
	}
}
