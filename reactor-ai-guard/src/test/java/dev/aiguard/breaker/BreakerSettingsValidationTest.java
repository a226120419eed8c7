package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import dev.aiguard.core.Outcome;

/**
 * Every setter of the breaker package's public builders and specs ({@link BreakerConfig}, the trip
 * policies, {@link BreakerTree}, {@link BreakerRegistry}, {@link CircuitBreaker}) refuses a null and a
 * NaN with an {@link IllegalArgumentException} naming the field, as every other bad setting is refused.
 */
class BreakerSettingsValidationTest {

	static Stream<Arguments> nullSettings() {
		return Stream.of(
				// BreakerConfig
				of("config", () -> BreakerConfig.from(null)),
				of("slowTimeToFirstToken", () -> BreakerConfig.custom().slowTimeToFirstToken(null)),
				of("timeWindow bucketLength", () -> BreakerConfig.custom().timeWindow(60, null)),
				of("openWait", () -> BreakerConfig.custom().openWait(null)),
				of("maxOpenWait", () -> BreakerConfig.custom().maxOpenWait(null)),
				of("maxTimeInHalfOpen", () -> BreakerConfig.custom().maxTimeInHalfOpen(null)),
				of("minimumDwell", () -> BreakerConfig.custom().minimumDwell(null)),
				of("tripPolicy", () -> BreakerConfig.custom().tripPolicy(null)),
				of("slowTimeToFirstTokenPerPromptToken",
						() -> BreakerConfig.custom().slowTimeToFirstTokenPerPromptToken(null)),
				of("tripDelay", () -> BreakerConfig.custom().tripDelay(null)),
				of("rampUp", () -> BreakerConfig.custom().rampUp(null)),
				of("warmUp", () -> BreakerConfig.custom().warmUp(null)),
				of("p0ProbeWindow", () -> BreakerConfig.custom().p0ProbeWindow(null)),
				// trip policies
				of("period", () -> TripPolicy.adaptiveTtft().period(null)),
				of("startingBaseline", () -> TripPolicy.adaptiveTtft().startingBaseline(null)),
				of("halfLife", () -> TripPolicy.decayedFailureRate().halfLife(null)),
				of("outcome", () -> TripPolicy.decayedFailureRate().severity(null, 1)),
				of("baseline", () -> TripPolicy.performanceScore(null)),
				of("halfLife", () -> TripPolicy.performanceScore(Duration.ofSeconds(1)).halfLife(null)),
				of("inner", () -> TripPolicy.predictive(null)),
				of("sampleInterval", () -> TripPolicy.predictive(TripPolicy.failureRate()).sampleInterval(null)),
				of("horizon", () -> TripPolicy.predictive(TripPolicy.failureRate()).horizon(null)),
				of("limit", () -> TripPolicy.ttftPercentile(null)),
				of("window", () -> TripPolicy.ttftPercentile(Duration.ofSeconds(1)).window(null)),
				of("policies", () -> TripPolicy.anyOf((TripPolicy[]) null)),
				of("policies[1]", () -> TripPolicy.anyOf(TripPolicy.failureRate(), null)),
				// BreakerTree.Builder
				of("name", () -> BreakerTree.builder(null)),
				of("systemConfig", () -> BreakerTree.builder("t").systemConfig(null)),
				of("providerConfig", () -> BreakerTree.builder("t").providerConfig(null)),
				of("endpointConfig", () -> BreakerTree.builder("t").endpointConfig(null)),
				of("systemConfig", () -> BreakerTree.builder("t").config(null)),
				of("provider", () -> BreakerTree.builder("t").provider(null, "e")),
				of("endpoints", () -> BreakerTree.builder("t").provider("p", (String[]) null)),
				of("endpoint", () -> BreakerTree.builder("t").provider("p", "e", null)),
				of("needs at least one endpoint", () -> BreakerTree.builder("t").provider("p", (List<String>) null)),
				of("clock", () -> BreakerTree.builder("t").clock(null)),
				of("wallClock", () -> BreakerTree.builder("t").wallClock(null)),
				of("metrics", () -> BreakerTree.builder("t").metrics(null)),
				of("listener", () -> BreakerTree.builder("t").listener(null)),
				// BreakerRegistry
				of("defaultConfig", () -> BreakerRegistry.builder().defaultConfig(null)),
				of("clock", () -> BreakerRegistry.builder().clock(null)),
				of("wallClock", () -> BreakerRegistry.builder().wallClock(null)),
				of("metrics", () -> BreakerRegistry.builder().metrics(null)),
				of("listener", () -> BreakerRegistry.builder().listener(null)),
				of("name", () -> BreakerRegistry.ofDefaults().breaker(null)),
				of("config", () -> BreakerRegistry.ofDefaults().breaker("b", null)),
				of("name", () -> BreakerRegistry.ofDefaults().tree(null, t -> t.provider("p", "e"))),
				of("spec", () -> BreakerRegistry.ofDefaults().tree("t", null)),
				// CircuitBreaker.Builder
				of("name", () -> CircuitBreaker.builder(null)),
				of("config", () -> CircuitBreaker.builder("b").config(null)),
				of("clock", () -> CircuitBreaker.builder("b").clock(null)),
				of("wallClock", () -> CircuitBreaker.builder("b").wallClock(null)),
				of("metrics", () -> CircuitBreaker.builder("b").metrics(null)),
				of("listener", () -> CircuitBreaker.builder("b").listener(null)));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("nullSettings")
	void aNullSettingIsAnIllegalArgumentNamingTheField(String field, ThrowingCallable setter) {
		assertThatThrownBy(setter).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(field);
	}

	static Stream<Arguments> nanSettings() {
		double nan = Double.NaN;
		return Stream.of(
				of("failureRateThreshold", () -> BreakerConfig.custom().failureRateThreshold(nan)),
				of("slowCallRateThreshold", () -> BreakerConfig.custom().slowCallRateThreshold(nan)),
				of("openWaitMultiplier", () -> BreakerConfig.custom().openWaitMultiplier(nan)),
				of("openWaitJitter", () -> BreakerConfig.custom().openWaitJitter(nan)),
				of("halfOpenProbeRatio", () -> BreakerConfig.custom().halfOpenProbeRatio(nan)),
				of("hysteresis", () -> BreakerConfig.custom().hysteresis(nan)),
				of("warmUpThresholdFactor", () -> BreakerConfig.custom().warmUpThresholdFactor(nan)),
				of("openP0ProbeShare", () -> BreakerConfig.custom().openP0ProbeShare(nan)),
				of("multiplier", () -> TripPolicy.adaptiveTtft().multiplier(nan)),
				of("learningRate", () -> TripPolicy.adaptiveTtft().learningRate(nan)),
				of("severity", () -> TripPolicy.decayedFailureRate().severity(Outcome.STALLED, nan)),
				of("alpha", () -> TripPolicy.performanceScore(Duration.ofSeconds(1)).alpha(nan)),
				of("threshold", () -> TripPolicy.performanceScore(Duration.ofSeconds(1)).threshold(nan)),
				of("levelSmoothing", () -> TripPolicy.predictive(TripPolicy.failureRate()).levelSmoothing(nan)),
				of("trendSmoothing", () -> TripPolicy.predictive(TripPolicy.failureRate()).trendSmoothing(nan)),
				of("armedAt", () -> TripPolicy.predictive(TripPolicy.failureRate()).armedAt(nan)),
				of("percentile", () -> TripPolicy.ttftPercentile(Duration.ofSeconds(1)).percentile(nan)),
				of("childrenShareToTrip", () -> BreakerTree.builder("t").childrenShareToTrip(nan)));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("nanSettings")
	void aNanSettingIsAnIllegalArgumentNamingTheField(String field, ThrowingCallable setter) {
		assertThatThrownBy(setter).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(field)
				.hasMessageContaining("NaN");
	}

	private static Arguments of(String field, ThrowingCallable setter) {
		return Arguments.of(field, setter);
	}
}
