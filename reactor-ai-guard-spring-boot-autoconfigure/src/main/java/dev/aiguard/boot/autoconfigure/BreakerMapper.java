package dev.aiguard.boot.autoconfigure;

import static dev.aiguard.boot.autoconfigure.PropertyChecks.checkName;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.make;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.set;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.with;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;

import dev.aiguard.boot.autoconfigure.properties.BreakerProperties;
import dev.aiguard.boot.autoconfigure.properties.ExpectedLossProperties;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.breaker.ExpectedLossPolicy;
import dev.aiguard.breaker.TripPolicy;
import dev.aiguard.breaker.TtftPercentilePolicy;
import dev.aiguard.metrics.GuardMetrics;

/** {@code aiguard.breakers.<name>} → a {@link CircuitBreaker}: its config and its trip policies. */
final class BreakerMapper {

	private BreakerMapper() {
	}

	static CircuitBreaker breaker(String name, BreakerProperties b, GuardMetrics metrics) {
		String at = AiGuardProperties.PREFIX + ".breakers." + name;
		checkName(at, name);
		BreakerConfig.Builder c = BreakerConfig.custom();
		set(at + ".failure-rate-threshold", b.getFailureRateThreshold(), c::failureRateThreshold);
		set(at + ".slow-call-rate-threshold", b.getSlowCallRateThreshold(), c::slowCallRateThreshold);
		set(at + ".slow-time-to-first-token", b.getSlowTimeToFirstToken(), c::slowTimeToFirstToken);
		set(at + ".minimum-calls", b.getMinimumCalls(), c::minimumCalls);
		if (b.getWindowSize() != null && (b.getWindowBuckets() != null || b.getBucketLength() != null)) {
			throw new InvalidGuardPropertyException(at + ".window-size", b.getWindowSize(),
					"a breaker has either a count window (window-size) or a time window (window-buckets and bucket-length), not both",
					null);
		}
		set(at + ".window-size", b.getWindowSize(), c::countWindow);
		if (b.getWindowBuckets() != null || b.getBucketLength() != null) {
			if (b.getWindowBuckets() == null || b.getBucketLength() == null) {
				String missing = b.getWindowBuckets() == null ? ".window-buckets" : ".bucket-length";
				throw new InvalidGuardPropertyException(at + missing, null,
						"a time window needs both window-buckets and bucket-length", null);
			}
			int buckets = b.getWindowBuckets();
			set(at + ".window-buckets", b.getBucketLength(), length -> c.timeWindow(buckets, length));
		}
		set(at + ".open-wait", b.getOpenWait(), c::openWait);
		set(at + ".open-wait-multiplier", b.getOpenWaitMultiplier(), c::openWaitMultiplier);
		set(at + ".max-open-wait", b.getMaxOpenWait(), c::maxOpenWait);
		set(at + ".open-wait-jitter", b.getOpenWaitJitter(), c::openWaitJitter);
		set(at + ".half-open-probes", b.getHalfOpenProbes(), c::halfOpenProbes);
		set(at + ".successes-to-close", b.getSuccessesToClose(), c::successesToClose);
		set(at + ".max-time-in-half-open", b.getMaxTimeInHalfOpen(), c::maxTimeInHalfOpen);
		set(at + ".minimum-dwell", b.getMinimumDwell(), c::minimumDwell);
		set(at + ".half-open-probe-ratio", b.getHalfOpenProbeRatio(), c::halfOpenProbeRatio);
		set(at + ".hysteresis", b.getHysteresis(), c::hysteresis);
		set(at + ".record-client-errors", b.getRecordClientErrors(), c::recordClientErrors);
		set(at + ".slow-time-to-first-token-per-prompt-token", b.getSlowTimeToFirstTokenPerPromptToken(),
				c::slowTimeToFirstTokenPerPromptToken);
		set(at + ".consecutive-failures-to-trip", b.getConsecutiveFailuresToTrip(), c::consecutiveFailuresToTrip);
		set(at + ".trip-delay", b.getTripDelay(), c::tripDelay);
		set(at + ".ramp-up", b.getRampUp(), c::rampUp);
		set(at + ".warm-up", b.getWarmUp(), c::warmUp);
		set(at + ".warm-up-threshold-factor", b.getWarmUpThresholdFactor(), c::warmUpThresholdFactor);
		c.tripPolicy(tripPolicy(at, b));
		BreakerConfig config = make(at, c::build);
		return CircuitBreaker.builder(name).config(config).metrics(metrics).build();
	}

	private static TripPolicy tripPolicy(String at, BreakerProperties b) {
		List<BreakerProperties.TripPolicyKind> kinds = b.getTripPolicy();
		if (kinds == null || kinds.isEmpty()) {
			throw new InvalidGuardPropertyException(at + ".trip-policy", kinds, "name at least one trip policy", null);
		}
		List<TripPolicy> policies = new ArrayList<>();
		for (BreakerProperties.TripPolicyKind kind : new LinkedHashSet<>(kinds)) {
			policies.add(switch (kind) {
				case FAILURE_RATE -> TripPolicy.failureRate();
				case DECAYED_FAILURE_RATE -> TripPolicy.decayedFailureRate();
				case ADAPTIVE_TTFT -> b.getAdaptiveTtftBaseline() == null ? TripPolicy.adaptiveTtft()
						: make(at + ".adaptive-ttft-baseline", b.getAdaptiveTtftBaseline(),
								TripPolicy.adaptiveTtft()::startingBaseline);
				case TTFT_PERCENTILE -> {
					if (b.getTtftPercentileLimit() == null) {
						throw new InvalidGuardPropertyException(at + ".ttft-percentile-limit", null,
								"the ttft-percentile trip policy needs the limit of the percentile's time to first token",
								null);
					}
					TtftPercentilePolicy percentile = make(at + ".ttft-percentile-limit", b.getTtftPercentileLimit(),
							TripPolicy::ttftPercentile);
					yield b.getTtftPercentile() == null ? percentile
							: make(at + ".ttft-percentile", b.getTtftPercentile(), percentile::percentile);
				}
				case PERFORMANCE_SCORE -> {
					if (b.getBaselineTtft() == null) {
						throw new InvalidGuardPropertyException(at + ".baseline-ttft", null,
								"the performance-score trip policy needs the baseline time to first token", null);
					}
					yield make(at + ".baseline-ttft", b.getBaselineTtft(), TripPolicy::performanceScore);
				}
				case EXPECTED_LOSS -> expectedLoss(at + ".expected-loss", b.getExpectedLoss());
			});
		}
		TripPolicy policy = policies.size() == 1 ? policies.get(0) : TripPolicy.anyOf(policies.toArray(TripPolicy[]::new));
		return b.isPredictive() ? TripPolicy.predictive(policy) : policy;
	}

	private static ExpectedLossPolicy expectedLoss(String at, ExpectedLossProperties e) {
		if (e.getUnavailableCost() == null) {
			throw new InvalidGuardPropertyException(at + ".unavailable-cost", null,
					"the expected-loss trip policy needs the cost of an answer from the ladder's next step", null);
		}
		ExpectedLossPolicy p = make(at + ".unavailable-cost", e.getUnavailableCost(), TripPolicy::expectedLoss);
		p = with(at + ".prompt-tokens", e.getPromptTokens(), p, ExpectedLossPolicy::promptTokens);
		p = with(at + ".prompt-price-per-million", e.getPromptPricePerMillion(), p,
				ExpectedLossPolicy::promptPricePerMillion);
		p = with(at + ".wait-price-per-second", e.getWaitPricePerSecond(), p, ExpectedLossPolicy::waitPricePerSecond);
		p = with(at + ".failure-wait", e.getFailureWait(), p, ExpectedLossPolicy::failureWait);
		return with(at + ".failed-answer-cost", e.getFailedAnswerCost(), p, ExpectedLossPolicy::failedAnswerCost);
	}
}
