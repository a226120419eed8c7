package dev.aiguard.load;

import java.time.Duration;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Priority;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static org.assertj.core.api.Assertions.assertThat;

class LoadGovernorActionTest {

	final GovernorFixture f = new GovernorFixture();
	LoadGovernor governor;

	@AfterEach
	void stop() {
		if (governor != null) {
			governor.dispose();
		}
	}

	@Test
	void actionsFollowTheDefaultRulesAtEachLevel() {
		governor = f.builder().dwell(Duration.ZERO).build().start();
		assertActions(LoadAction.REALTIME, LoadAction.REALTIME, LoadAction.REALTIME);
		f.interval(governor, 8);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		assertActions(LoadAction.REALTIME, LoadAction.REALTIME, LoadAction.CHEAPER_FIRST);
		f.interval(governor, 10);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		assertActions(LoadAction.REALTIME, LoadAction.FALLBACK_FIRST, LoadAction.SHED);
		f.interval(governor, 20);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		assertActions(LoadAction.REALTIME, LoadAction.STATIC_OR_SHED, LoadAction.SHED);
		f.interval(governor, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		assertActions(LoadAction.REALTIME, LoadAction.FALLBACK_FIRST, LoadAction.SHED);
	}

	@Test
	void customRulesAreApplied() {
		LoadRules rules = LoadRules.defaults().withAction(LoadLevel.WARNING, P1, LoadAction.CHEAPER_FIRST)
				.withAction(LoadLevel.WARNING, P2, LoadAction.SHED);
		governor = f.builder().rules(rules).build().start();
		f.interval(governor, 8);
		assertActions(LoadAction.REALTIME, LoadAction.CHEAPER_FIRST, LoadAction.SHED);
		assertThat(governor.rules()).isSameAs(rules);
	}

	private void assertActions(LoadAction p0, LoadAction p1, LoadAction p2) {
		assertThat(governor.action(P0)).isEqualTo(p0);
		assertThat(governor.action(P1)).isEqualTo(p1);
		assertThat(governor.action(P2)).isEqualTo(p2);
	}

	@Test
	void shedNamesTheLevelAndHintsTheRestOfTheDwell() {
		governor = f.builder().dwell(Duration.ofSeconds(30)).build().start();
		f.interval(governor, 10); // DEGRADED at t = 1 s
		f.intervals(governor, 10, 10); // t = 11 s: 10 s at DEGRADED
		AdmissionRejectedException e = governor.shed(P2);
		assertThat(e.reason()).isEqualTo(AdmissionRejectedException.Reason.SHED);
		assertThat(e.priority()).isEqualTo(P2);
		assertThat(e.getMessage()).startsWith("chat: P2 shed at level DEGRADED (SHED)");
		assertThat(e.retryAfter()).as("P2 is served again one level up, after the 20 s left of the dwell")
				.contains(Duration.ofSeconds(20));
		assertThat(e.retryable()).isTrue();
	}

	@Test
	void shedHintsADwellPerLevelToClimb() {
		governor = f.builder().dwell(Duration.ofSeconds(30)).build().start();
		f.interval(governor, 20); // CRITICAL at t = 1 s
		f.intervals(governor, 5, 20);
		// P2 is shed at CRITICAL and DEGRADED: 25 s left here, then 30 s at DEGRADED
		assertThat(governor.shed(P2).retryAfter()).contains(Duration.ofSeconds(55));
		// P1 is served (FALLBACK_FIRST) at DEGRADED
		assertThat(governor.shed(P1).retryAfter()).contains(Duration.ofSeconds(25));
		assertThat(governor.shed(P1).getMessage()).startsWith("chat: P1 shed at level CRITICAL (STATIC_OR_SHED)");
	}

	@Test
	void shedHintsAtLeastOneInterval() {
		governor = f.builder().dwell(Duration.ZERO).interval(Duration.ofMillis(250)).build().start();
		f.interval(governor, 3); // 4 intervals of 250 ms pass: the last ones see no load
		for (int i = 0; i < 5; i++) {
			governor.arrived(Priority.P2);
		}
		f.time.advanceTimeBy(Duration.ofMillis(250)); // 20 per second: CRITICAL
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		assertThat(governor.shed(P2).retryAfter()).contains(Duration.ofMillis(250));
	}
}
