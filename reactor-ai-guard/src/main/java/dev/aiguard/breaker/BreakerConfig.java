package dev.aiguard.breaker;

import java.time.Duration;
import java.util.Objects;

/**
 * How a {@link CircuitBreaker} judges a stream and how it recovers. Immutable; built with
 * {@link #custom()} (or {@link #from(BreakerConfig)} to start from another config). Every setter
 * checks its value and fails with an {@link IllegalArgumentException} naming the field and the
 * value; rules that join two fields are checked by {@link Builder#build()}.
 *
 * <pre>{@code
 * BreakerConfig config = BreakerConfig.custom()
 *     .failureRateThreshold(0.5)                       // fractions, not percent
 *     .slowTimeToFirstToken(Duration.ofSeconds(5))
 *     .slowCallRateThreshold(0.8)
 *     .minimumCalls(20)
 *     .timeWindow(60, Duration.ofSeconds(1))
 *     .openWait(Duration.ofSeconds(60)).openWaitMultiplier(2).maxOpenWait(Duration.ofMinutes(10))
 *     .halfOpenProbes(10).successesToClose(5)
 *     .tripPolicy(TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.adaptiveTtft()))
 *     .build();
 * }</pre>
 *
 * <table>
 * <caption>Fields and defaults</caption>
 * <tr><th>field</th><th>default</th><th>meaning</th></tr>
 * <tr><td>failureRateThreshold</td><td>0.5</td><td>trip when failures / calls reaches it</td></tr>
 * <tr><td>slowCallRateThreshold</td><td>1.0</td><td>trip when slow calls / calls reaches it</td></tr>
 * <tr><td>slowTimeToFirstToken</td><td>10 s</td><td>a call is slow when its first token takes this long</td></tr>
 * <tr><td>minimumCalls</td><td>20</td><td>no trip on fewer calls in the window</td></tr>
 * <tr><td>window</td><td>time-based, 60 × 1 s</td><td>or count-based: the last N calls</td></tr>
 * <tr><td>openWait</td><td>60 s</td><td>time OPEN before probing</td></tr>
 * <tr><td>openWaitMultiplier</td><td>2.0</td><td>growth of the wait on each consecutive re-open</td></tr>
 * <tr><td>maxOpenWait</td><td>10 min</td><td>cap of that growth</td></tr>
 * <tr><td>openWaitJitter</td><td>0.1</td><td>up to this share of the wait is added at random</td></tr>
 * <tr><td>halfOpenProbes / halfOpenProbeRatio</td><td>10 probes</td><td>probes per HALF_OPEN, or a share of the traffic</td></tr>
 * <tr><td>successesToClose</td><td>5</td><td>healthy probes needed to close</td></tr>
 * <tr><td>maxTimeInHalfOpen</td><td>2 min</td><td>undecided HALF_OPEN re-opens after this</td></tr>
 * <tr><td>hysteresis</td><td>0.2</td><td>closing needs pressure below {@code 1 - hysteresis}</td></tr>
 * <tr><td>minimumDwell</td><td>5 s</td><td>least time in CLOSED (after a re-close) and HALF_OPEN</td></tr>
 * <tr><td>tripPolicy</td><td>{@link TripPolicy#failureRate()}</td><td>what trips CLOSED to OPEN</td></tr>
 * <tr><td>recordClientErrors</td><td>false</td><td>count 4xx / context-length errors as failures</td></tr>
 * <tr><td>slowTimeToFirstTokenPerPromptToken</td><td>0</td><td>added to the slow threshold per prompt token</td></tr>
 * <tr><td>consecutiveFailuresToTrip</td><td>0 (off)</td><td>this many failures in a row trip at once</td></tr>
 * <tr><td>tripDelay</td><td>0</td><td>the pressure must stay at 1 or more this long before a trip</td></tr>
 * <tr><td>rampUp</td><td>0</td><td>after a re-close, admit a share of calls growing from 0 to 1 over this</td></tr>
 * <tr><td>warmUp / warmUpThresholdFactor</td><td>0 / 2.0</td><td>after the breaker is built, trip only at
 * this factor × the usual pressure for this long</td></tr>
 * <tr><td>p0ProbeWindow</td><td>0 (off)</td><td>for this long after entering HALF_OPEN, only P0 calls take probe slots</td></tr>
 * <tr><td>openP0ProbeShare</td><td>0 (off)</td><td>while OPEN, this share of P0 calls still passes</td></tr>
 * </table>
 */
public final class BreakerConfig {

	/** How the sliding window is measured. */
	public enum WindowType {
		/** A ring of time buckets: the calls of the last {@code size × bucketLength}. */
		TIME_BASED,
		/** The last {@code size} calls, however old. */
		COUNT_BASED
	}

	private static final BreakerConfig DEFAULTS = new Builder().build();

	private final double failureRateThreshold;
	private final double slowCallRateThreshold;
	private final Duration slowTimeToFirstToken;
	private final int minimumCalls;
	private final WindowType windowType;
	private final int windowSize;
	private final Duration bucketLength;
	private final Duration openWait;
	private final double openWaitMultiplier;
	private final Duration maxOpenWait;
	private final double openWaitJitter;
	private final int halfOpenProbes;
	private final double halfOpenProbeRatio;
	private final int successesToClose;
	private final Duration maxTimeInHalfOpen;
	private final double hysteresis;
	private final Duration minimumDwell;
	private final TripPolicy tripPolicy;
	private final boolean recordClientErrors;
	private final Duration slowTimeToFirstTokenPerPromptToken;
	private final int consecutiveFailuresToTrip;
	private final Duration tripDelay;
	private final Duration rampUp;
	private final Duration warmUp;
	private final double warmUpThresholdFactor;
	private final Duration p0ProbeWindow;
	private final double openP0ProbeShare;

	// nanosecond forms, read on the record path
	final long slowNanos;
	final long slowPerPromptTokenNanos;
	/** {@link #slowNanos} as a double, for the prompt-size normalisation on the record path. */
	final double slowNanosDouble;
	final long tripDelayNanos;
	final long rampUpNanos;
	final long warmUpNanos;
	final long openWaitNanos;
	final long maxOpenWaitNanos;
	final long maxTimeInHalfOpenNanos;
	final long minimumDwellNanos;
	final long p0ProbeWindowNanos;

	private BreakerConfig(Builder b) {
		this.failureRateThreshold = b.failureRateThreshold;
		this.slowCallRateThreshold = b.slowCallRateThreshold;
		this.slowTimeToFirstToken = b.slowTimeToFirstToken;
		this.minimumCalls = b.minimumCalls;
		this.windowType = b.windowType;
		this.windowSize = b.windowSize;
		this.bucketLength = b.bucketLength;
		this.openWait = b.openWait;
		this.openWaitMultiplier = b.openWaitMultiplier;
		this.maxOpenWait = b.maxOpenWait;
		this.openWaitJitter = b.openWaitJitter;
		this.halfOpenProbes = b.halfOpenProbes;
		this.halfOpenProbeRatio = b.halfOpenProbeRatio;
		this.successesToClose = b.successesToClose;
		this.maxTimeInHalfOpen = b.maxTimeInHalfOpen;
		this.hysteresis = b.hysteresis;
		this.minimumDwell = b.minimumDwell;
		this.tripPolicy = b.tripPolicy;
		this.recordClientErrors = b.recordClientErrors;
		this.slowTimeToFirstTokenPerPromptToken = b.slowTimeToFirstTokenPerPromptToken;
		this.consecutiveFailuresToTrip = b.consecutiveFailuresToTrip;
		this.tripDelay = b.tripDelay;
		this.rampUp = b.rampUp;
		this.warmUp = b.warmUp;
		this.warmUpThresholdFactor = b.warmUpThresholdFactor;
		this.p0ProbeWindow = b.p0ProbeWindow;
		this.openP0ProbeShare = b.openP0ProbeShare;
		this.slowNanos = slowTimeToFirstToken.toNanos();
		this.slowPerPromptTokenNanos = slowTimeToFirstTokenPerPromptToken.toNanos();
		this.slowNanosDouble = slowNanos;
		this.tripDelayNanos = tripDelay.toNanos();
		this.rampUpNanos = rampUp.toNanos();
		this.warmUpNanos = warmUp.toNanos();
		this.openWaitNanos = openWait.toNanos();
		this.maxOpenWaitNanos = maxOpenWait.toNanos();
		this.maxTimeInHalfOpenNanos = maxTimeInHalfOpen.toNanos();
		this.minimumDwellNanos = minimumDwell.toNanos();
		this.p0ProbeWindowNanos = p0ProbeWindow.toNanos();
	}

	/** @return the default config (see the table above) */
	public static BreakerConfig defaults() {
		return DEFAULTS;
	}

	/**
	 * The breaker package's null check for settings: an {@link IllegalArgumentException} naming the
	 * field, like every other bad setting (not the {@code NullPointerException} of
	 * {@code Objects.requireNonNull}).
	 */
	static <T> T notNull(String field, T value) {
		if (value == null) {
			throw new IllegalArgumentException(field + " must not be null");
		}
		return value;
	}

	/** @return a builder holding the defaults */
	public static Builder custom() {
		return new Builder();
	}

	/** @return a builder holding {@code config}'s values, to derive a changed copy */
	public static Builder from(BreakerConfig config) {
		return new Builder(notNull("config", config));
	}

	/** @return the failure rate (a fraction) at or above which the breaker trips */
	public double failureRateThreshold() {
		return failureRateThreshold;
	}

	/** @return the slow-call rate (a fraction) at or above which the breaker trips */
	public double slowCallRateThreshold() {
		return slowCallRateThreshold;
	}

	/** @return the time to first token from which a call counts as slow */
	public Duration slowTimeToFirstToken() {
		return slowTimeToFirstToken;
	}

	/** @return the fewest calls in the window for the breaker to judge rates */
	public int minimumCalls() {
		return minimumCalls;
	}

	public WindowType windowType() {
		return windowType;
	}

	/** @return buckets of a time-based window, calls of a count-based one */
	public int windowSize() {
		return windowSize;
	}

	/** @return the length of one bucket of a time-based window ({@code null} when count-based) */
	public Duration bucketLength() {
		return bucketLength;
	}

	public Duration openWait() {
		return openWait;
	}

	public double openWaitMultiplier() {
		return openWaitMultiplier;
	}

	public Duration maxOpenWait() {
		return maxOpenWait;
	}

	public double openWaitJitter() {
		return openWaitJitter;
	}

	/** @return the probes allowed per HALF_OPEN episode, or 0 when probes are a share of traffic */
	public int halfOpenProbes() {
		return halfOpenProbes;
	}

	/** @return the share of traffic let through as probes, or 0 when probes are counted */
	public double halfOpenProbeRatio() {
		return halfOpenProbeRatio;
	}

	public int successesToClose() {
		return successesToClose;
	}

	public Duration maxTimeInHalfOpen() {
		return maxTimeInHalfOpen;
	}

	public double hysteresis() {
		return hysteresis;
	}

	public Duration minimumDwell() {
		return minimumDwell;
	}

	public TripPolicy tripPolicy() {
		return tripPolicy;
	}

	public boolean recordClientErrors() {
		return recordClientErrors;
	}

	/** @return time added to {@link #slowTimeToFirstToken()} per prompt token, zero when off */
	public Duration slowTimeToFirstTokenPerPromptToken() {
		return slowTimeToFirstTokenPerPromptToken;
	}

	/** @return failures in a row that trip the breaker at once, 0 when off */
	public int consecutiveFailuresToTrip() {
		return consecutiveFailuresToTrip;
	}

	/** @return how long the pressure must stay at 1 or more before a trip, zero for at once */
	public Duration tripDelay() {
		return tripDelay;
	}

	/** @return the ramp-up period after a re-close, zero for full traffic at once */
	public Duration rampUp() {
		return rampUp;
	}

	/** @return the warm-up period after the breaker is built, zero when off */
	public Duration warmUp() {
		return warmUp;
	}

	/** @return the pressure a trip needs during warm-up (1 = no relaxation) */
	public double warmUpThresholdFactor() {
		return warmUpThresholdFactor;
	}

	/**
	 * @return how long after entering HALF_OPEN only {@code P0} calls take probe slots (calls asked for
	 *         with {@link CircuitBreaker#tryAcquire(dev.aiguard.core.Priority)}); zero when off
	 */
	public Duration p0ProbeWindow() {
		return p0ProbeWindow;
	}

	/** @return the share of {@code P0} calls an OPEN breaker still lets through, 0 when off */
	public double openP0ProbeShare() {
		return openP0ProbeShare;
	}

	@Override
	public boolean equals(Object o) {
		if (this == o) {
			return true;
		}
		if (!(o instanceof BreakerConfig)) {
			return false;
		}
		BreakerConfig c = (BreakerConfig) o;
		return Double.compare(failureRateThreshold, c.failureRateThreshold) == 0
				&& Double.compare(slowCallRateThreshold, c.slowCallRateThreshold) == 0
				&& slowTimeToFirstToken.equals(c.slowTimeToFirstToken) && minimumCalls == c.minimumCalls
				&& windowType == c.windowType && windowSize == c.windowSize
				&& Objects.equals(bucketLength, c.bucketLength) && openWait.equals(c.openWait)
				&& Double.compare(openWaitMultiplier, c.openWaitMultiplier) == 0 && maxOpenWait.equals(c.maxOpenWait)
				&& Double.compare(openWaitJitter, c.openWaitJitter) == 0 && halfOpenProbes == c.halfOpenProbes
				&& Double.compare(halfOpenProbeRatio, c.halfOpenProbeRatio) == 0
				&& successesToClose == c.successesToClose && maxTimeInHalfOpen.equals(c.maxTimeInHalfOpen)
				&& Double.compare(hysteresis, c.hysteresis) == 0 && minimumDwell.equals(c.minimumDwell)
				&& tripPolicy.equals(c.tripPolicy) && recordClientErrors == c.recordClientErrors
				&& slowTimeToFirstTokenPerPromptToken.equals(c.slowTimeToFirstTokenPerPromptToken)
				&& consecutiveFailuresToTrip == c.consecutiveFailuresToTrip && tripDelay.equals(c.tripDelay)
				&& rampUp.equals(c.rampUp) && warmUp.equals(c.warmUp)
				&& Double.compare(warmUpThresholdFactor, c.warmUpThresholdFactor) == 0
				&& p0ProbeWindow.equals(c.p0ProbeWindow) && Double.compare(openP0ProbeShare, c.openP0ProbeShare) == 0;
	}

	@Override
	public int hashCode() {
		return Objects.hash(failureRateThreshold, slowCallRateThreshold, slowTimeToFirstToken, minimumCalls,
				windowType, windowSize, bucketLength, openWait, openWaitMultiplier, maxOpenWait, openWaitJitter,
				halfOpenProbes, halfOpenProbeRatio, successesToClose, maxTimeInHalfOpen, hysteresis, minimumDwell,
				tripPolicy, recordClientErrors, slowTimeToFirstTokenPerPromptToken, consecutiveFailuresToTrip, tripDelay,
				rampUp, warmUp, warmUpThresholdFactor, p0ProbeWindow, openP0ProbeShare);
	}

	@Override
	public String toString() {
		String window = windowType == WindowType.TIME_BASED ? windowSize + " x " + bucketLength
				: "last " + windowSize + " calls";
		String probes = halfOpenProbes > 0 ? String.valueOf(halfOpenProbes) : halfOpenProbeRatio + " of traffic";
		return "BreakerConfig{failureRateThreshold=" + failureRateThreshold + ", slowCallRateThreshold="
				+ slowCallRateThreshold + ", slowTimeToFirstToken=" + slowTimeToFirstToken + ", minimumCalls="
				+ minimumCalls + ", window=" + window + ", openWait=" + openWait + ", openWaitMultiplier="
				+ openWaitMultiplier + ", maxOpenWait=" + maxOpenWait + ", openWaitJitter=" + openWaitJitter
				+ ", halfOpenProbes=" + probes + ", successesToClose=" + successesToClose + ", maxTimeInHalfOpen="
				+ maxTimeInHalfOpen + ", hysteresis=" + hysteresis + ", minimumDwell=" + minimumDwell
				+ ", tripPolicy=" + tripPolicy + ", recordClientErrors=" + recordClientErrors
				+ ", slowTimeToFirstTokenPerPromptToken=" + slowTimeToFirstTokenPerPromptToken
				+ ", consecutiveFailuresToTrip=" + consecutiveFailuresToTrip + ", tripDelay=" + tripDelay + ", rampUp="
				+ rampUp + ", warmUp=" + warmUp + ", warmUpThresholdFactor=" + warmUpThresholdFactor + ", p0ProbeWindow=" + p0ProbeWindow
				+ ", openP0ProbeShare=" + openP0ProbeShare + "}";
	}

	/**
	 * Builds a {@link BreakerConfig}. Each setter validates at once; {@link #build()} checks the rules
	 * between fields. A builder is not thread-safe; the config it builds is.
	 */
	public static final class Builder {

		private double failureRateThreshold = 0.5;
		private double slowCallRateThreshold = 1.0;
		private Duration slowTimeToFirstToken = Duration.ofSeconds(10);
		private int minimumCalls = 20;
		private WindowType windowType = WindowType.TIME_BASED;
		private int windowSize = 60;
		private Duration bucketLength = Duration.ofSeconds(1);
		private Duration openWait = Duration.ofSeconds(60);
		private double openWaitMultiplier = 2.0;
		private Duration maxOpenWait = Duration.ofMinutes(10);
		private double openWaitJitter = 0.1;
		private int halfOpenProbes = 10;
		private double halfOpenProbeRatio = 0;
		private int successesToClose = 5;
		private Duration maxTimeInHalfOpen = Duration.ofMinutes(2);
		private double hysteresis = 0.2;
		private Duration minimumDwell = Duration.ofSeconds(5);
		private TripPolicy tripPolicy = TripPolicy.failureRate();
		private boolean recordClientErrors;
		private Duration slowTimeToFirstTokenPerPromptToken = Duration.ZERO;
		private int consecutiveFailuresToTrip;
		private Duration tripDelay = Duration.ZERO;
		private Duration rampUp = Duration.ZERO;
		private Duration warmUp = Duration.ZERO;
		private double warmUpThresholdFactor = 2.0;
		private Duration p0ProbeWindow = Duration.ZERO;
		private double openP0ProbeShare;

		private static final Duration MAX_DURATION = Duration.ofDays(365);

		private Builder() {
		}

		private Builder(BreakerConfig c) {
			this.failureRateThreshold = c.failureRateThreshold;
			this.slowCallRateThreshold = c.slowCallRateThreshold;
			this.slowTimeToFirstToken = c.slowTimeToFirstToken;
			this.minimumCalls = c.minimumCalls;
			this.windowType = c.windowType;
			this.windowSize = c.windowSize;
			this.bucketLength = c.bucketLength;
			this.openWait = c.openWait;
			this.openWaitMultiplier = c.openWaitMultiplier;
			this.maxOpenWait = c.maxOpenWait;
			this.openWaitJitter = c.openWaitJitter;
			this.halfOpenProbes = c.halfOpenProbes;
			this.halfOpenProbeRatio = c.halfOpenProbeRatio;
			this.successesToClose = c.successesToClose;
			this.maxTimeInHalfOpen = c.maxTimeInHalfOpen;
			this.hysteresis = c.hysteresis;
			this.minimumDwell = c.minimumDwell;
			this.tripPolicy = c.tripPolicy;
			this.recordClientErrors = c.recordClientErrors;
			this.slowTimeToFirstTokenPerPromptToken = c.slowTimeToFirstTokenPerPromptToken;
			this.consecutiveFailuresToTrip = c.consecutiveFailuresToTrip;
			this.tripDelay = c.tripDelay;
			this.rampUp = c.rampUp;
			this.warmUp = c.warmUp;
			this.warmUpThresholdFactor = c.warmUpThresholdFactor;
			this.p0ProbeWindow = c.p0ProbeWindow;
			this.openP0ProbeShare = c.openP0ProbeShare;
		}

		/** @param threshold a fraction in (0, 1]: 0.5 trips at 50 % failures */
		public Builder failureRateThreshold(double threshold) {
			this.failureRateThreshold = fraction("failureRateThreshold", threshold);
			return this;
		}

		/** @param threshold a fraction in (0, 1]: 1.0 trips only when every call in the window is slow */
		public Builder slowCallRateThreshold(double threshold) {
			this.slowCallRateThreshold = fraction("slowCallRateThreshold", threshold);
			return this;
		}

		/**
		 * @param threshold time to first token at or above which a call is slow. A stream is judged by its
		 * first token, never by its total duration (which grows with the answer's length).
		 */
		public Builder slowTimeToFirstToken(Duration threshold) {
			this.slowTimeToFirstToken = positive("slowTimeToFirstToken", threshold);
			return this;
		}

		/** @param calls the fewest calls in the window for rates to be judged, at least 1 */
		public Builder minimumCalls(int calls) {
			if (calls < 1) {
				throw new IllegalArgumentException("minimumCalls must be at least 1, was " + calls);
			}
			this.minimumCalls = calls;
			return this;
		}

		/**
		 * A time-based window of {@code buckets} buckets of {@code bucketLength} each (the default is
		 * 60 × 1 s).
		 *
		 * @param buckets between 1 and 3600
		 * @param bucketLength at least 1 ms, at most 1 hour
		 */
		public Builder timeWindow(int buckets, Duration bucketLength) {
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
			return this;
		}

		/** A count-based window of the last {@code calls} calls, between 1 and 100 000. */
		public Builder countWindow(int calls) {
			if (calls < 1 || calls > 100_000) {
				throw new IllegalArgumentException("countWindow calls must be between 1 and 100000, was " + calls);
			}
			this.windowType = WindowType.COUNT_BASED;
			this.windowSize = calls;
			this.bucketLength = null;
			return this;
		}

		/** @param wait time OPEN before the first probe, positive */
		public Builder openWait(Duration wait) {
			this.openWait = positive("openWait", wait);
			return this;
		}

		/**
		 * @param multiplier growth of the open wait on each consecutive re-open (at least 1.0; 1.0 = no
		 * growth). A trip soon after a re-close counts as consecutive: the streak ends only once the breaker
		 * has stayed closed for as long as it was last held open.
		 */
		public Builder openWaitMultiplier(double multiplier) {
			if (!(multiplier >= 1.0) || multiplier > 100 || Double.isNaN(multiplier)) {
				throw new IllegalArgumentException("openWaitMultiplier must be between 1.0 and 100, was " + multiplier);
			}
			this.openWaitMultiplier = multiplier;
			return this;
		}

		/** @param wait the cap of the growing open wait, positive, at least {@code openWait} (checked by build) */
		public Builder maxOpenWait(Duration wait) {
			this.maxOpenWait = positive("maxOpenWait", wait);
			return this;
		}

		/**
		 * @param jitter share of the wait added at random, in [0, 1]: 0.1 makes a 60 s wait last 60 to 66 s, so
		 * breakers of many instances do not probe in lockstep. The wait is never shorter than computed.
		 */
		public Builder openWaitJitter(double jitter) {
			if (!(jitter >= 0 && jitter <= 1)) {
				throw new IllegalArgumentException("openWaitJitter must be between 0 and 1, was " + jitter);
			}
			this.openWaitJitter = jitter;
			return this;
		}

		/**
		 * Probes as a count: at most {@code probes} calls are let through per HALF_OPEN episode (a
		 * cancelled or ignored probe gives its slot back). Replaces a ratio set earlier.
		 *
		 * @param probes between 1 and 10 000
		 */
		public Builder halfOpenProbes(int probes) {
			if (probes < 1 || probes > 10_000) {
				throw new IllegalArgumentException("halfOpenProbes must be between 1 and 10000, was " + probes);
			}
			this.halfOpenProbes = probes;
			this.halfOpenProbeRatio = 0;
			return this;
		}

		/**
		 * Probes as a share of traffic: that fraction of the calls offered while HALF_OPEN is let through
		 * (deterministically: the 1st, then every {@code 1/ratio}-th). Replaces a count set earlier.
		 *
		 * @param ratio a fraction in (0, 1]
		 */
		public Builder halfOpenProbeRatio(double ratio) {
			this.halfOpenProbeRatio = fraction("halfOpenProbeRatio", ratio);
			this.halfOpenProbes = 0;
			return this;
		}

		/** @param successes healthy probes (not failed, not slow) needed to close, at least 1 */
		public Builder successesToClose(int successes) {
			if (successes < 1) {
				throw new IllegalArgumentException("successesToClose must be at least 1, was " + successes);
			}
			this.successesToClose = successes;
			return this;
		}

		/** @param max time HALF_OPEN may last without a decision before it re-opens, positive */
		public Builder maxTimeInHalfOpen(Duration max) {
			this.maxTimeInHalfOpen = positive("maxTimeInHalfOpen", max);
			return this;
		}

		/**
		 * @param band in [0, 1): the breaker trips when the pressure reaches 1 (rate = threshold) but closes
		 * only when the probes' pressure is below {@code 1 - band}; with 0.2 and a 50 % threshold, probes
		 * must fail less than 40 %.
		 */
		public Builder hysteresis(double band) {
			if (!(band >= 0 && band < 1)) {
				throw new IllegalArgumentException("hysteresis must be in [0, 1), was " + band);
			}
			this.hysteresis = band;
			return this;
		}

		/**
		 * @param dwell least time in a state before an automatic transition out of it: a breaker re-closed
		 * by its probes cannot trip again sooner, and HALF_OPEN cannot close sooner. Zero disables it; it
		 * must not exceed {@code openWait} (checked by build).
		 */
		public Builder minimumDwell(Duration dwell) {
			notNull("minimumDwell", dwell);
			if (dwell.isNegative()) {
				throw new IllegalArgumentException("minimumDwell must not be negative, was " + dwell);
			}
			this.minimumDwell = dwell;
			return this;
		}

		/** @param policy what trips CLOSED to OPEN */
		public Builder tripPolicy(TripPolicy policy) {
			this.tripPolicy = notNull("tripPolicy", policy);
			return this;
		}

		/** @param record whether client errors (400, context length exceeded...) count as failures */
		public Builder recordClientErrors(boolean record) {
			this.recordClientErrors = record;
			return this;
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
		public Builder slowTimeToFirstTokenPerPromptToken(Duration perToken) {
			notNull("slowTimeToFirstTokenPerPromptToken", perToken);
			if (perToken.isNegative() || perToken.compareTo(Duration.ofSeconds(1)) > 0) {
				throw new IllegalArgumentException(
						"slowTimeToFirstTokenPerPromptToken must be between 0 and 1 s, was " + perToken);
			}
			this.slowTimeToFirstTokenPerPromptToken = perToken;
			return this;
		}

		/**
		 * @param failures failures in a row (stalls, incomplete streams and recorded client errors
		 * included) that trip a CLOSED breaker at once, before {@code minimumCalls}, the trip delay and
		 * the warm-up; any success between them starts the count again. Between 1 and 10 000, or 0 for
		 * off (the default).
		 */
		public Builder consecutiveFailuresToTrip(int failures) {
			if (failures < 0 || failures > 10_000) {
				throw new IllegalArgumentException(
						"consecutiveFailuresToTrip must be between 0 (off) and 10000, was " + failures);
			}
			this.consecutiveFailuresToTrip = failures;
			return this;
		}

		/**
		 * @param delay how long the trip policy's pressure must stay at 1 or more before the breaker
		 * trips: a spike that is over sooner is ignored. While the pressure is up, every call is judged,
		 * successes too, so its fall is seen. Zero (the default) trips at once; at most 1 hour.
		 */
		public Builder tripDelay(Duration delay) {
			this.tripDelay = nonNegative("tripDelay", delay, Duration.ofHours(1));
			return this;
		}

		/**
		 * @param ramp after HALF_OPEN closes, the share of calls a CLOSED breaker admits grows linearly
		 * from 0 to 1 over this period; the others are refused like calls to an open breaker (the guard
		 * takes its fallback ladder) and are not counted as failures. The share is deterministic (the
		 * admitted calls are spread evenly among the offered ones). Zero (the default) admits everything
		 * at once; at most 1 hour. A new breaker and an operator's close do not ramp.
		 */
		public Builder rampUp(Duration ramp) {
			this.rampUp = nonNegative("rampUp", ramp, Duration.ofHours(1));
			return this;
		}

		/**
		 * @param warmUp for this long after the breaker is built, a trip needs
		 * {@link #warmUpThresholdFactor(double)} times the usual pressure (a cold provider's first calls
		 * are slower and fail more). Zero (the default) is off; at most 1 hour.
		 */
		public Builder warmUp(Duration warmUp) {
			this.warmUp = nonNegative("warmUp", warmUp, Duration.ofHours(1));
			return this;
		}

		/**
		 * @param factor the pressure a trip needs during warm-up, between 1 and 100 (default 2: with a
		 * 0.5 failure-rate threshold, warm-up trips only at 100 % failures)
		 */
		public Builder warmUpThresholdFactor(double factor) {
			if (!(factor >= 1 && factor <= 100)) {
				throw new IllegalArgumentException("warmUpThresholdFactor must be between 1 and 100, was " + factor);
			}
			this.warmUpThresholdFactor = factor;
			return this;
		}

		/**
		 * @param window for this long after the breaker enters HALF_OPEN, a call asked for at
		 * {@code P1} or {@code P2} ({@link CircuitBreaker#tryAcquire(dev.aiguard.core.Priority)}) is
		 * refused, so the probe slots go to {@code P0} first; after it, any priority probes. A call
		 * without a priority ({@link CircuitBreaker#tryAcquire()}) is not held back. Zero (the default)
		 * is off; at most 1 hour.
		 */
		public Builder p0ProbeWindow(Duration window) {
			this.p0ProbeWindow = nonNegative("p0ProbeWindow", window, Duration.ofHours(1));
			return this;
		}

		/**
		 * @param share while the breaker is OPEN (not FORCED_OPEN), this share of the {@code P0} calls
		 * still passes: the first P0 call offered in the stay, then each time the count of P0 calls
		 * times the share crosses a whole number. Their outcomes are counted in the window but decide
		 * nothing (the open wait still ends the stay). {@code P1}, {@code P2} and calls without a
		 * priority are refused. Between 0 (off, the default) and 0.5; meant for a system-wide breaker,
		 * so a total outage still lets a trickle of the most urgent traffic find the first recovery.
		 */
		public Builder openP0ProbeShare(double share) {
			if (!(share >= 0 && share <= 0.5)) {
				throw new IllegalArgumentException("openP0ProbeShare must be between 0 (off) and 0.5, was " + share);
			}
			this.openP0ProbeShare = share;
			return this;
		}

		/**
		 * @return the config
		 * @throws IllegalArgumentException when {@code maxOpenWait < openWait}, {@code minimumDwell > openWait},
		 * or {@code successesToClose > halfOpenProbes}
		 */
		public BreakerConfig build() {
			if (maxOpenWait.compareTo(openWait) < 0) {
				throw new IllegalArgumentException(
						"maxOpenWait must be at least openWait (" + openWait + "), was " + maxOpenWait);
			}
			if (minimumDwell.compareTo(openWait) > 0) {
				throw new IllegalArgumentException(
						"minimumDwell must not exceed openWait (" + openWait + "), was " + minimumDwell);
			}
			if (halfOpenProbes > 0 && successesToClose > halfOpenProbes) {
				throw new IllegalArgumentException("successesToClose must not exceed halfOpenProbes ("
						+ halfOpenProbes + "), was " + successesToClose);
			}
			return new BreakerConfig(this);
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
}
