package dev.aiguard.load;

import dev.aiguard.core.Priority;
import org.junit.jupiter.api.Test;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static dev.aiguard.load.LoadAction.CHEAPER_FIRST;
import static dev.aiguard.load.LoadAction.FALLBACK_FIRST;
import static dev.aiguard.load.LoadAction.REALTIME;
import static dev.aiguard.load.LoadAction.SHED;
import static dev.aiguard.load.LoadAction.STATIC_OR_SHED;
import static dev.aiguard.load.LoadLevel.CRITICAL;
import static dev.aiguard.load.LoadLevel.DEGRADED;
import static dev.aiguard.load.LoadLevel.HEALTHY;
import static dev.aiguard.load.LoadLevel.WARNING;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LoadRulesTest {

	final LoadRules rules = LoadRules.defaults();

	@Test
	void healthyServesEveryPriorityLiveOnFullLanes() {
		for (Priority p : Priority.values()) {
			assertThat(rules.action(HEALTHY, p)).isEqualTo(REALTIME);
			assertThat(rules.laneFactor(HEALTHY, p)).isEqualTo(1.0);
		}
	}

	@Test
	void warningMakesBatchWorkCheaperOnHalfItsLane() {
		assertThat(rules.action(WARNING, P0)).isEqualTo(REALTIME);
		assertThat(rules.action(WARNING, P1)).isEqualTo(REALTIME);
		assertThat(rules.action(WARNING, P2)).isEqualTo(CHEAPER_FIRST);
		assertThat(rules.laneFactor(WARNING, P1)).isEqualTo(1.0);
		assertThat(rules.laneFactor(WARNING, P2)).isEqualTo(0.5);
	}

	@Test
	void degradedSendsAssistiveWorkToFallbacksAndShedsBatchWork() {
		assertThat(rules.action(DEGRADED, P0)).isEqualTo(REALTIME);
		assertThat(rules.action(DEGRADED, P1)).isEqualTo(FALLBACK_FIRST);
		assertThat(rules.action(DEGRADED, P2)).isEqualTo(SHED);
		assertThat(rules.laneFactor(DEGRADED, P1)).isEqualTo(1.0);
		assertThat(rules.laneFactor(DEGRADED, P2)).isEqualTo(0.5);
	}

	@Test
	void criticalServesOnlyInteractiveWorkLive() {
		assertThat(rules.action(CRITICAL, P0)).isEqualTo(REALTIME);
		assertThat(rules.action(CRITICAL, P1)).isEqualTo(STATIC_OR_SHED);
		assertThat(rules.action(CRITICAL, P2)).isEqualTo(SHED);
		assertThat(rules.laneFactor(CRITICAL, P0)).isEqualTo(1.0);
		assertThat(rules.laneFactor(CRITICAL, P1)).isZero();
		assertThat(rules.laneFactor(CRITICAL, P2)).isZero();
	}

	@Test
	void interactiveWorkIsLiveOnAFullLaneAtEveryLevel() {
		for (LoadLevel level : LoadLevel.values()) {
			assertThat(rules.action(level, P0)).isEqualTo(REALTIME);
			assertThat(rules.laneFactor(level, P0)).isEqualTo(1.0);
		}
	}

	@Test
	void withMethodsCopyAndLeaveTheTemplateAlone() {
		LoadRules strict = rules.withAction(WARNING, P2, SHED).withLaneFactor(WARNING, P2, 0.25);
		assertThat(strict.action(WARNING, P2)).isEqualTo(SHED);
		assertThat(strict.laneFactor(WARNING, P2)).isEqualTo(0.25);
		assertThat(rules.action(WARNING, P2)).isEqualTo(CHEAPER_FIRST);
		assertThat(rules.laneFactor(WARNING, P2)).isEqualTo(0.5);
		assertThat(LoadRules.defaults()).isEqualTo(rules).isNotEqualTo(strict);
		assertThat(strict.action(DEGRADED, P1)).isEqualTo(FALLBACK_FIRST);
	}

	@Test
	void laneFactorOutsideZeroToOneIsRefusedNamingIt() {
		assertThatThrownBy(() -> rules.withLaneFactor(WARNING, P2, 1.5))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("laneFactor for WARNING P2 must be in [0, 1], was 1.5");
		assertThatThrownBy(() -> rules.withLaneFactor(WARNING, P2, Double.NaN))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("was NaN");
		assertThatThrownBy(() -> rules.withLaneFactor(WARNING, P2, -0.1))
				.isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void aPositiveFactorNeverClosesALane() {
		assertThat(rules.laneSize(WARNING, P2, 1)).isEqualTo(1);
		assertThat(rules.laneSize(WARNING, P2, 5)).isEqualTo(3);
		assertThat(rules.laneSize(WARNING, P2, 8)).isEqualTo(4);
		assertThat(rules.withLaneFactor(WARNING, P2, 0.01).laneSize(WARNING, P2, 8)).isEqualTo(1);
		assertThat(rules.laneSize(CRITICAL, P2, 8)).isZero();
		assertThat(rules.laneSize(HEALTHY, P2, 8)).isEqualTo(8);
	}
}
