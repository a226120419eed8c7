package dev.aiguard.load;

import java.time.Duration;

import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static org.assertj.core.api.Assertions.assertThat;

class LoadGovernorLanesTest {

	final GovernorFixture f = new GovernorFixture();
	final PriorityLanes lanes = PriorityLanes.builder().name("chat-lanes")
			.lane(P0, LaneSpec.of(4))
			.lane(P1, LaneSpec.of(6))
			.lane(P2, LaneSpec.of(5))
			.timer(f.time)
			.build();
	LoadGovernor governor;

	@AfterEach
	void stop() {
		if (governor != null) {
			governor.dispose();
		}
		lanes.dispose();
	}

	private void assertSizes(int p0, int p1, int p2) {
		assertThat(lanes.concurrency(P0)).isEqualTo(p0);
		assertThat(lanes.concurrency(P1)).isEqualTo(p1);
		assertThat(lanes.concurrency(P2)).isEqualTo(p2);
	}

	@Test
	void laneSizesFollowTheLevelFromTheBuiltSizes() {
		governor = f.builder().dwell(Duration.ZERO).lanes(lanes, LaneResizing.SCALE).build().start();
		assertSizes(4, 6, 5);
		f.interval(governor, 8);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		assertSizes(4, 6, 3); // ceil(5 * 0.5)
		f.interval(governor, 20);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		assertSizes(4, 0, 0);
		f.interval(governor, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		assertSizes(4, 6, 3);
		f.intervals(governor, 2, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertSizes(4, 6, 5);
	}

	@Test
	void aPositiveFactorLeavesAtLeastOnePermitAndStartAppliesTheCurrentLevel() {
		LoadRules rules = LoadRules.defaults().withLaneFactor(LoadLevel.HEALTHY, P2, 0.1)
				.withLaneFactor(LoadLevel.WARNING, P1, 0.5);
		governor = f.builder().rules(rules).lanes(lanes, LaneResizing.SCALE).build();
		assertSizes(4, 6, 5);
		governor.start();
		assertSizes(4, 6, 1);
		f.interval(governor, 9);
		assertSizes(4, 3, 3);
	}

	@Test
	void aShrunkLaneAdmitsAgainAsItsStreamsFinish() {
		governor = f.builder().lanes(lanes, LaneResizing.SCALE).build().start();
		LanePermit[] running = new LanePermit[5];
		for (int i = 0; i < running.length; i++) {
			running[i] = lanes.tryAcquire(P2);
			assertThat(running[i]).isNotNull();
		}
		f.interval(governor, 8); // WARNING: P2 lane 3
		assertThat(lanes.inFlight(P2)).as("admitted streams keep running").isEqualTo(5);
		assertThat(lanes.tryAcquire(P2)).isNull();
		running[0].release();
		running[1].release();
		assertThat(lanes.tryAcquire(P2)).as("3 in flight on a lane of 3").isNull();
		running[2].release();
		assertThat(lanes.tryAcquire(P2)).isNotNull();
	}

	@Test
	void keepTotalGivesWhatALevelTakesToTheNearestMoreUrgentOpenLane() {
		governor = f.builder().dwell(Duration.ZERO).lanes(lanes, LaneResizing.KEEP_TOTAL).build().start();
		assertSizes(4, 6, 5);
		f.interval(governor, 8);
		assertThat(governor.level()).isEqualTo(LoadLevel.WARNING);
		assertSizes(4, 8, 3); // P2 keeps ceil(5 * 0.5), P1 gets the other 2
		f.interval(governor, 20);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		assertSizes(15, 0, 0); // P1 closed: P2's permits skip it
		f.interval(governor, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		assertSizes(4, 8, 3);
		f.intervals(governor, 2, 0);
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertSizes(4, 6, 5);
	}

	@Test
	void keepTotalLetsTheMoreUrgentLaneRunWhatTheLessUrgentGaveUp() {
		governor = f.builder().lanes(lanes, LaneResizing.KEEP_TOTAL).build().start();
		f.interval(governor, 8); // WARNING
		for (int i = 0; i < 8; i++) {
			assertThat(lanes.tryAcquire(P1)).as("P1 permit %d of 8", i + 1).isNotNull();
		}
		assertThat(lanes.tryAcquire(P1)).isNull();
	}

	@Test
	void keepTotalDropsWhatTheMostUrgentOpenLaneGivesUp() {
		LoadRules rules = LoadRules.defaults().withLaneFactor(LoadLevel.WARNING, P0, 0.5);
		governor = f.builder().rules(rules).lanes(lanes, LaneResizing.KEEP_TOTAL).build().start();
		f.interval(governor, 8); // WARNING
		assertSizes(2, 8, 3);
	}

	@Test
	void scaleIsTheDefaultResizing() {
		governor = f.builder().lanes(lanes, LaneResizing.SCALE).build().start();
		f.interval(governor, 8); // WARNING
		assertSizes(4, 6, 3);
		assertThat(governor.laneSizes(LoadLevel.CRITICAL)).containsExactly(4, 0, 0);
	}
}
