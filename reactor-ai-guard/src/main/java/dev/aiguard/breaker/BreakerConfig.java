package dev.aiguard.breaker;

import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

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
	private final @Nullable Duration bucketLength;
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
	public @Nullable Duration bucketLength() {
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
	public static final class Builder extends BreakerConfigSetters<Builder> {

		private Builder() {
		}

		private Builder(BreakerConfig c) {
			super(c);
		}

		@Override
		Builder self() {
			return this;
		}

		/**
		 * @return the config
		 * @throws IllegalArgumentException when {@code maxOpenWait < openWait}, {@code minimumDwell > openWait},
		 * {@code successesToClose > halfOpenProbes}, or an {@link ExpectedLossPolicy} whose failed attempt costs nothing
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
			ExpectedLossPolicy.check(tripPolicy);
			return new BreakerConfig(this);
		}
	}
}
