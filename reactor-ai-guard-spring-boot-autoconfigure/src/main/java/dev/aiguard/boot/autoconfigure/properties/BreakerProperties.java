package dev.aiguard.boot.autoconfigure.properties;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.NestedConfigurationProperty;

/**
 * A circuit breaker, {@code aiguard.breakers.<name>}; an unset setting takes
 * {@code BreakerConfig.defaults()}'s value.
 *
 * <pre>
 * aiguard:
 *   breakers:
 *     openai: { failure-rate-threshold: 0.5, minimum-calls: 10, open-wait: 15s, trip-policy: failure-rate }
 * </pre>
 */
public class BreakerProperties {

	/** Failure rate 0..1 at which the breaker opens. */
	@Nullable
	private Double failureRateThreshold;

	/** Slow-call rate 0..1 at which the breaker opens. */
	@Nullable
	private Double slowCallRateThreshold;

	/** A call whose first token takes longer than this is slow. */
	@Nullable
	private Duration slowTimeToFirstToken;

	/** Calls in the window before a rate is judged. */
	@Nullable
	private Integer minimumCalls;

	/** A count window of this many calls; exclusive with {@code window-buckets}. */
	@Nullable
	private Integer windowSize;

	/** A time window of this many buckets of {@code bucket-length}; exclusive with {@code window-size}. */
	@Nullable
	private Integer windowBuckets;

	/** The length of one bucket of a time window. */
	@Nullable
	private Duration bucketLength;

	/** How long the breaker stays open before probing. */
	@Nullable
	private Duration openWait;

	/** Factor the open wait grows by on each re-open (1 = constant). */
	@Nullable
	private Double openWaitMultiplier;

	/** The longest open wait. */
	@Nullable
	private Duration maxOpenWait;

	/** Random spread 0..1 of the open wait. */
	@Nullable
	private Double openWaitJitter;

	/** Probe calls let through in HALF_OPEN. */
	@Nullable
	private Integer halfOpenProbes;

	/** Healthy probes that close the breaker; at most {@code half-open-probes}. */
	@Nullable
	private Integer successesToClose;

	/** How long HALF_OPEN may last before the breaker opens again. */
	@Nullable
	private Duration maxTimeInHalfOpen;

	/** The least time spent in HALF_OPEN and in CLOSED after a re-close; at most {@code open-wait}. */
	@Nullable
	private Duration minimumDwell;

	/** Share 0..1 of calls let through as probes in HALF_OPEN, instead of a count of probes. */
	@Nullable
	private Double halfOpenProbeRatio;

	/** Band 0..1 below the thresholds the probes must reach to close the breaker. */
	@Nullable
	private Double hysteresis;

	/** Whether client errors (400, 401, 403, 404) count as failures. Default: false. */
	@Nullable
	private Boolean recordClientErrors;

	public @Nullable Double getHalfOpenProbeRatio() {
		return halfOpenProbeRatio;
	}

	public void setHalfOpenProbeRatio(@Nullable Double halfOpenProbeRatio) {
		this.halfOpenProbeRatio = halfOpenProbeRatio;
	}

	public @Nullable Double getHysteresis() {
		return hysteresis;
	}

	public void setHysteresis(@Nullable Double hysteresis) {
		this.hysteresis = hysteresis;
	}

	public @Nullable Boolean getRecordClientErrors() {
		return recordClientErrors;
	}

	public void setRecordClientErrors(@Nullable Boolean recordClientErrors) {
		this.recordClientErrors = recordClientErrors;
	}

	/**
	 * What trips the breaker; several trip it when any of them would. Default: failure-rate.
	 */
	private List<TripPolicyKind> tripPolicy = new ArrayList<>(List.of(TripPolicyKind.FAILURE_RATE));

	/** The time to first token a healthy model reaches; required by the performance-score trip policy. */
	@Nullable
	private Duration baselineTtft;

	/** Whether the trip policy acts on the trend of its pressure (trips before the threshold is crossed). */
	private boolean predictive;

	/** Added to {@code slow-time-to-first-token} per prompt token (the guard's call form estimates its request's tokens). Default: 0. */
	@Nullable
	private Duration slowTimeToFirstTokenPerPromptToken;

	/** Failures in a row that trip the breaker at once; 0 is off (the default). */
	@Nullable
	private Integer consecutiveFailuresToTrip;

	/** How long the trip pressure must last before the breaker trips; shorter spikes are ignored. Default: 0. */
	@Nullable
	private Duration tripDelay;

	/** After a re-close, the period over which the admitted share of calls grows from 0 to all. Default: 0. */
	@Nullable
	private Duration rampUp;

	/** The period after start during which tripping needs {@code warm-up-threshold-factor} times the pressure. Default: 0. */
	@Nullable
	private Duration warmUp;

	/** The pressure a trip needs during warm-up (1 to 100). Default: 2. */
	@Nullable
	private Double warmUpThresholdFactor;

	/** The time to first token the percentile must stay under; required by the ttft-percentile trip policy. */
	@Nullable
	private Duration ttftPercentileLimit;

	/** Which percentile the ttft-percentile trip policy reads, 0.5 to below 1. Default: 0.95. */
	@Nullable
	private Double ttftPercentile;

	/** A starting baseline for the adaptive-ttft trip policy, so it judges from the first call. */
	@Nullable
	private Duration adaptiveTtftBaseline;

	/** The costs the expected-loss trip policy weighs; {@code unavailable-cost} is required by it. */
	@NestedConfigurationProperty
	private ExpectedLossProperties expectedLoss = new ExpectedLossProperties();

	public ExpectedLossProperties getExpectedLoss() {
		return expectedLoss;
	}

	public void setExpectedLoss(ExpectedLossProperties expectedLoss) {
		this.expectedLoss = expectedLoss;
	}

	public @Nullable Duration getSlowTimeToFirstTokenPerPromptToken() {
		return slowTimeToFirstTokenPerPromptToken;
	}

	public void setSlowTimeToFirstTokenPerPromptToken(@Nullable Duration slowTimeToFirstTokenPerPromptToken) {
		this.slowTimeToFirstTokenPerPromptToken = slowTimeToFirstTokenPerPromptToken;
	}

	public @Nullable Integer getConsecutiveFailuresToTrip() {
		return consecutiveFailuresToTrip;
	}

	public void setConsecutiveFailuresToTrip(@Nullable Integer consecutiveFailuresToTrip) {
		this.consecutiveFailuresToTrip = consecutiveFailuresToTrip;
	}

	public @Nullable Duration getTripDelay() {
		return tripDelay;
	}

	public void setTripDelay(@Nullable Duration tripDelay) {
		this.tripDelay = tripDelay;
	}

	public @Nullable Duration getRampUp() {
		return rampUp;
	}

	public void setRampUp(@Nullable Duration rampUp) {
		this.rampUp = rampUp;
	}

	public @Nullable Duration getWarmUp() {
		return warmUp;
	}

	public void setWarmUp(@Nullable Duration warmUp) {
		this.warmUp = warmUp;
	}

	public @Nullable Double getWarmUpThresholdFactor() {
		return warmUpThresholdFactor;
	}

	public void setWarmUpThresholdFactor(@Nullable Double warmUpThresholdFactor) {
		this.warmUpThresholdFactor = warmUpThresholdFactor;
	}

	public @Nullable Duration getTtftPercentileLimit() {
		return ttftPercentileLimit;
	}

	public void setTtftPercentileLimit(@Nullable Duration ttftPercentileLimit) {
		this.ttftPercentileLimit = ttftPercentileLimit;
	}

	public @Nullable Double getTtftPercentile() {
		return ttftPercentile;
	}

	public void setTtftPercentile(@Nullable Double ttftPercentile) {
		this.ttftPercentile = ttftPercentile;
	}

	public @Nullable Duration getAdaptiveTtftBaseline() {
		return adaptiveTtftBaseline;
	}

	public void setAdaptiveTtftBaseline(@Nullable Duration adaptiveTtftBaseline) {
		this.adaptiveTtftBaseline = adaptiveTtftBaseline;
	}

	public List<TripPolicyKind> getTripPolicy() {
		return tripPolicy;
	}

	public void setTripPolicy(List<TripPolicyKind> tripPolicy) {
		this.tripPolicy = tripPolicy;
	}

	public @Nullable Duration getBaselineTtft() {
		return baselineTtft;
	}

	public void setBaselineTtft(@Nullable Duration baselineTtft) {
		this.baselineTtft = baselineTtft;
	}

	public boolean isPredictive() {
		return predictive;
	}

	public void setPredictive(boolean predictive) {
		this.predictive = predictive;
	}

	public @Nullable Double getFailureRateThreshold() {
		return failureRateThreshold;
	}

	public void setFailureRateThreshold(@Nullable Double failureRateThreshold) {
		this.failureRateThreshold = failureRateThreshold;
	}

	public @Nullable Double getSlowCallRateThreshold() {
		return slowCallRateThreshold;
	}

	public void setSlowCallRateThreshold(@Nullable Double slowCallRateThreshold) {
		this.slowCallRateThreshold = slowCallRateThreshold;
	}

	public @Nullable Duration getSlowTimeToFirstToken() {
		return slowTimeToFirstToken;
	}

	public void setSlowTimeToFirstToken(@Nullable Duration slowTimeToFirstToken) {
		this.slowTimeToFirstToken = slowTimeToFirstToken;
	}

	public @Nullable Integer getMinimumCalls() {
		return minimumCalls;
	}

	public void setMinimumCalls(@Nullable Integer minimumCalls) {
		this.minimumCalls = minimumCalls;
	}

	public @Nullable Integer getWindowSize() {
		return windowSize;
	}

	public void setWindowSize(@Nullable Integer windowSize) {
		this.windowSize = windowSize;
	}

	public @Nullable Integer getWindowBuckets() {
		return windowBuckets;
	}

	public void setWindowBuckets(@Nullable Integer windowBuckets) {
		this.windowBuckets = windowBuckets;
	}

	public @Nullable Duration getBucketLength() {
		return bucketLength;
	}

	public void setBucketLength(@Nullable Duration bucketLength) {
		this.bucketLength = bucketLength;
	}

	public @Nullable Duration getOpenWait() {
		return openWait;
	}

	public void setOpenWait(@Nullable Duration openWait) {
		this.openWait = openWait;
	}

	public @Nullable Double getOpenWaitMultiplier() {
		return openWaitMultiplier;
	}

	public void setOpenWaitMultiplier(@Nullable Double openWaitMultiplier) {
		this.openWaitMultiplier = openWaitMultiplier;
	}

	public @Nullable Duration getMaxOpenWait() {
		return maxOpenWait;
	}

	public void setMaxOpenWait(@Nullable Duration maxOpenWait) {
		this.maxOpenWait = maxOpenWait;
	}

	public @Nullable Double getOpenWaitJitter() {
		return openWaitJitter;
	}

	public void setOpenWaitJitter(@Nullable Double openWaitJitter) {
		this.openWaitJitter = openWaitJitter;
	}

	public @Nullable Integer getHalfOpenProbes() {
		return halfOpenProbes;
	}

	public void setHalfOpenProbes(@Nullable Integer halfOpenProbes) {
		this.halfOpenProbes = halfOpenProbes;
	}

	public @Nullable Integer getSuccessesToClose() {
		return successesToClose;
	}

	public void setSuccessesToClose(@Nullable Integer successesToClose) {
		this.successesToClose = successesToClose;
	}

	public @Nullable Duration getMinimumDwell() {
		return minimumDwell;
	}

	public void setMinimumDwell(@Nullable Duration minimumDwell) {
		this.minimumDwell = minimumDwell;
	}

	public @Nullable Duration getMaxTimeInHalfOpen() {
		return maxTimeInHalfOpen;
	}

	public void setMaxTimeInHalfOpen(@Nullable Duration maxTimeInHalfOpen) {
		this.maxTimeInHalfOpen = maxTimeInHalfOpen;
	}

	/** The breaker's trip policies (see docs/breaker.md). */
	public enum TripPolicyKind {
		/** The failure and slow-call rates of the window against their thresholds. */
		FAILURE_RATE,
		/** Rates that decay with age, recent calls weighing more. */
		DECAYED_FAILURE_RATE,
		/** Time to first token against a learned baseline. */
		ADAPTIVE_TTFT,
		/** A score of time to first token and failures against {@code baseline-ttft}. */
		PERFORMANCE_SCORE,
		/** The p95 (or {@code ttft-percentile}) time to first token of the last minute against {@code ttft-percentile-limit}. */
		TTFT_PERCENTILE,
		/** Failure rate × the cost of a failed attempt against the cost of the ladder's next step ({@code expected-loss.*}). */
		EXPECTED_LOSS
	}
}
