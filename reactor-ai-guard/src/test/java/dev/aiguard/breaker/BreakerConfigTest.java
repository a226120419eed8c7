package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

class BreakerConfigTest {

	private static void rejects(Consumer<BreakerConfig.Builder> setter, String field, String value) {
		assertThatThrownBy(() -> setter.accept(BreakerConfig.custom())).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining(field).hasMessageContaining(value);
	}

	@Test
	void defaultsAreDocumentedValues() {
		BreakerConfig c = BreakerConfig.defaults();
		assertThat(c.failureRateThreshold()).isEqualTo(0.5);
		assertThat(c.slowCallRateThreshold()).isEqualTo(1.0);
		assertThat(c.slowTimeToFirstToken()).isEqualTo(Duration.ofSeconds(10));
		assertThat(c.minimumCalls()).isEqualTo(20);
		assertThat(c.windowType()).isEqualTo(BreakerConfig.WindowType.TIME_BASED);
		assertThat(c.windowSize()).isEqualTo(60);
		assertThat(c.bucketLength()).isEqualTo(Duration.ofSeconds(1));
		assertThat(c.openWait()).isEqualTo(Duration.ofSeconds(60));
		assertThat(c.openWaitMultiplier()).isEqualTo(2.0);
		assertThat(c.maxOpenWait()).isEqualTo(Duration.ofMinutes(10));
		assertThat(c.openWaitJitter()).isEqualTo(0.1);
		assertThat(c.halfOpenProbes()).isEqualTo(10);
		assertThat(c.halfOpenProbeRatio()).isZero();
		assertThat(c.successesToClose()).isEqualTo(5);
		assertThat(c.maxTimeInHalfOpen()).isEqualTo(Duration.ofMinutes(2));
		assertThat(c.hysteresis()).isEqualTo(0.2);
		assertThat(c.minimumDwell()).isEqualTo(Duration.ofSeconds(5));
		assertThat(c.tripPolicy()).isSameAs(TripPolicy.failureRate());
		assertThat(c.recordClientErrors()).isFalse();
		assertThat(c.slowTimeToFirstTokenPerPromptToken()).isZero();
		assertThat(c.consecutiveFailuresToTrip()).isZero();
		assertThat(c.tripDelay()).isZero();
		assertThat(c.rampUp()).isZero();
		assertThat(c.warmUp()).isZero();
		assertThat(c.warmUpThresholdFactor()).isEqualTo(2.0);
	}

	@Test
	void theTripRuleSettingsRejectBadValuesNamingFieldAndValue() {
		rejects(b -> b.slowTimeToFirstTokenPerPromptToken(Duration.ofMillis(-1)), "slowTimeToFirstTokenPerPromptToken",
				"PT-0.001S");
		rejects(b -> b.slowTimeToFirstTokenPerPromptToken(Duration.ofSeconds(2)), "slowTimeToFirstTokenPerPromptToken",
				"PT2S");
		rejects(b -> b.consecutiveFailuresToTrip(-1), "consecutiveFailuresToTrip", "-1");
		rejects(b -> b.consecutiveFailuresToTrip(10_001), "consecutiveFailuresToTrip", "10001");
		rejects(b -> b.tripDelay(Duration.ofSeconds(-1)), "tripDelay", "PT-1S");
		rejects(b -> b.tripDelay(Duration.ofHours(2)), "tripDelay", "PT2H");
		rejects(b -> b.rampUp(Duration.ofHours(2)), "rampUp", "PT2H");
		rejects(b -> b.warmUp(Duration.ofSeconds(-5)), "warmUp", "PT-5S");
		rejects(b -> b.warmUpThresholdFactor(0.5), "warmUpThresholdFactor", "0.5");
		rejects(b -> b.warmUpThresholdFactor(Double.NaN), "warmUpThresholdFactor", "NaN");
	}

	@Test
	void theTripRuleSettingsAreCopiedAndCompared() {
		BreakerConfig c = BreakerConfig.custom().slowTimeToFirstTokenPerPromptToken(Duration.ofMillis(7))
				.consecutiveFailuresToTrip(5).tripDelay(Duration.ofSeconds(3)).rampUp(Duration.ofSeconds(30))
				.warmUp(Duration.ofMinutes(2)).warmUpThresholdFactor(1.5).build();
		assertThat(BreakerConfig.from(c).build()).isEqualTo(c).hasSameHashCodeAs(c);
		assertThat(BreakerConfig.from(c).consecutiveFailuresToTrip(6).build()).isNotEqualTo(c);
		assertThat(BreakerConfig.from(c).tripDelay(Duration.ZERO).build()).isNotEqualTo(c);
		assertThat(BreakerConfig.from(c).rampUp(Duration.ZERO).build()).isNotEqualTo(c);
		assertThat(BreakerConfig.from(c).warmUp(Duration.ZERO).build()).isNotEqualTo(c);
		assertThat(BreakerConfig.from(c).warmUpThresholdFactor(2).build()).isNotEqualTo(c);
		assertThat(BreakerConfig.from(c).slowTimeToFirstTokenPerPromptToken(Duration.ZERO).build()).isNotEqualTo(c);
		assertThat(c.toString()).contains("consecutiveFailuresToTrip=5", "tripDelay=PT3S", "rampUp=PT30S",
				"warmUp=PT2M", "warmUpThresholdFactor=1.5", "slowTimeToFirstTokenPerPromptToken=PT0.007S");
	}

	@Test
	void everySetterRejectsBadValuesNamingFieldAndValue() {
		rejects(b -> b.failureRateThreshold(50), "failureRateThreshold", "50.0");
		rejects(b -> b.failureRateThreshold(0), "failureRateThreshold", "0.0");
		rejects(b -> b.slowCallRateThreshold(-0.1), "slowCallRateThreshold", "-0.1");
		rejects(b -> b.slowTimeToFirstToken(Duration.ZERO), "slowTimeToFirstToken", "PT0S");
		rejects(b -> b.minimumCalls(0), "minimumCalls", "0");
		rejects(b -> b.timeWindow(0, Duration.ofSeconds(1)), "timeWindow buckets", "0");
		rejects(b -> b.timeWindow(60, Duration.ofNanos(10)), "timeWindow bucketLength", "PT0.00000001S");
		rejects(b -> b.countWindow(0), "countWindow", "0");
		rejects(b -> b.openWait(Duration.ofSeconds(-1)), "openWait", "PT-1S");
		rejects(b -> b.openWaitMultiplier(0.5), "openWaitMultiplier", "0.5");
		rejects(b -> b.maxOpenWait(Duration.ofDays(400)), "maxOpenWait", "PT9600H");
		rejects(b -> b.openWaitJitter(1.5), "openWaitJitter", "1.5");
		rejects(b -> b.halfOpenProbes(0), "halfOpenProbes", "0");
		rejects(b -> b.halfOpenProbeRatio(2), "halfOpenProbeRatio", "2.0");
		rejects(b -> b.successesToClose(0), "successesToClose", "0");
		rejects(b -> b.maxTimeInHalfOpen(Duration.ZERO), "maxTimeInHalfOpen", "PT0S");
		rejects(b -> b.hysteresis(1), "hysteresis", "1.0");
		rejects(b -> b.minimumDwell(Duration.ofSeconds(-2)), "minimumDwell", "PT-2S");
		assertThatThrownBy(() -> BreakerConfig.custom().tripPolicy(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("tripPolicy");
	}

	@Test
	void percentInsteadOfAFractionGetsAHint() {
		rejects(b -> b.failureRateThreshold(50), "failureRateThreshold", "write 0.5 for 50 %");
	}

	@Test
	void buildChecksRulesBetweenFields() {
		assertThatThrownBy(() -> BreakerConfig.custom().openWait(Duration.ofMinutes(5))
				.maxOpenWait(Duration.ofMinutes(1)).build()).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("maxOpenWait").hasMessageContaining("PT1M");
		assertThatThrownBy(() -> BreakerConfig.custom().openWait(Duration.ofSeconds(1))
				.maxOpenWait(Duration.ofSeconds(1)).minimumDwell(Duration.ofSeconds(2)).build())
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("minimumDwell")
				.hasMessageContaining("PT2S");
		assertThatThrownBy(() -> BreakerConfig.custom().halfOpenProbes(3).successesToClose(4).build())
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("successesToClose")
				.hasMessageContaining("4");
		assertThat(BreakerConfig.custom().halfOpenProbeRatio(0.1).successesToClose(50).build().halfOpenProbes())
				.isZero();
	}

	@Test
	void probesAreACountOrARatioWhicheverWasSetLast() {
		BreakerConfig ratio = BreakerConfig.custom().successesToClose(2).halfOpenProbes(4).halfOpenProbeRatio(0.2)
				.build();
		assertThat(ratio.halfOpenProbes()).isZero();
		assertThat(ratio.halfOpenProbeRatio()).isEqualTo(0.2);
		BreakerConfig count = BreakerConfig.from(ratio).halfOpenProbes(4).build();
		assertThat(count.halfOpenProbes()).isEqualTo(4);
		assertThat(count.halfOpenProbeRatio()).isZero();
	}

	@Test
	void fromCopiesEveryFieldAndEqualityIsByValue() {
		BreakerConfig c = BreakerConfig.custom().failureRateThreshold(0.3).countWindow(200).recordClientErrors(true)
				.tripPolicy(TripPolicy.decayedFailureRate()).build();
		BreakerConfig copy = BreakerConfig.from(c).build();
		assertThat(copy).isEqualTo(c).hasSameHashCodeAs(c).isNotSameAs(c);
		assertThat(copy.bucketLength()).isNull();
		assertThat(BreakerConfig.from(c).minimumCalls(3).build()).isNotEqualTo(c);
		assertThat(c.toString()).contains("last 200 calls").contains("decayedFailureRate");
	}
}
