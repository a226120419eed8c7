package dev.aiguard.load;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.core.Priority;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Hooks;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;

class LoadGovernorHoldTest {

	final GovernorFixture f = new GovernorFixture();
	final List<LoadEvent> events = new CopyOnWriteArrayList<>();
	LoadGovernor governor;

	@AfterEach
	void stop() {
		if (governor != null) {
			governor.dispose();
		}
		Hooks.resetOnErrorDropped();
	}

	@Test
	void aHeldLevelStaysWhileTheDecisionsKeepScoringAndTheReleaseLetsThemMoveItFromThere() {
		PriorityLanes lanes = PriorityLanes.builder().name("chat-lanes").lane(Priority.P0, LaneSpec.of(4))
				.lane(Priority.P1, LaneSpec.of(6)).lane(Priority.P2, LaneSpec.of(5)).timer(f.time).build();
		governor = f.builder().dwell(Duration.ofSeconds(5)).lanes(lanes, LaneResizing.SCALE).listener(events::add)
				.build().start();
		Disposable held = governor.hold(LoadLevel.CRITICAL);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		assertThat(governor.state().held()).isTrue();
		assertThat(governor.action(Priority.P2)).isEqualTo(LoadAction.SHED);
		assertThat(lanes.concurrency(Priority.P2)).isZero();
		assertThat(events).extracting(LoadEvent::reason).containsExactly(LoadEvent.Reason.HOLD);

		f.score(100);
		f.intervals(governor, 10, 3); // healthy inputs: the decisions see them, the level stays
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		assertThat(governor.state().score()).isEqualTo(100.0);
		assertThat(governor.state().load()).isEqualTo(0.3);
		assertThat(governor.state().intervals()).isEqualTo(10);
		assertThat(events).hasSize(1);

		held.dispose();
		assertThat(held.isDisposed()).isTrue();
		assertThat(governor.state().held()).isFalse();
		assertThat(events).extracting(LoadEvent::reason).containsExactly(LoadEvent.Reason.HOLD,
				LoadEvent.Reason.RELEASE);
		assertThat(events.get(1).from()).isEqualTo(LoadLevel.CRITICAL);
		assertThat(events.get(1).to()).isEqualTo(LoadLevel.CRITICAL);
		// the dwell counts from the hold (10 s ago): the next decision recovers one level
		f.interval(governor, 3);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		assertThat(events.get(2).reason()).isEqualTo(LoadEvent.Reason.RECOVERY);
		held.dispose(); // idempotent
		assertThat(events).hasSize(3);
		lanes.dispose();
	}

	@Test
	void aSecondHoldReplacesTheFirstAndOnlyItsReleaseReleases() {
		governor = f.builder().listener(events::add).build().start();
		Disposable first = governor.hold(LoadLevel.WARNING);
		Disposable second = governor.hold(LoadLevel.DEGRADED);
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		first.dispose();
		assertThat(governor.state().held()).isTrue();
		assertThat(governor.level()).isEqualTo(LoadLevel.DEGRADED);
		second.dispose();
		assertThat(governor.state().held()).isFalse();
		assertThat(events).extracting(LoadEvent::toString).containsExactly(
				"HEALTHY -> WARNING (HOLD: held at WARNING)",
				"WARNING -> DEGRADED (HOLD: held at DEGRADED)",
				"DEGRADED -> DEGRADED (RELEASE: released at DEGRADED)");
	}

	@Test
	void aDecisionOrAHoldAskedForWhileTheGovernorStartsIsMadeAndTheLoopStaysFree() {
		for (int round = 0; round < 200; round++) {
			LoadGovernor g = f.builder().build();
			RaceTestUtils.race(g::start, g::decide, () -> g.hold(LoadLevel.WARNING));
			assertThat(g.state().intervals()).as("round %d: the racing decision was made", round).isEqualTo(1);
			assertThat(g.level()).isEqualTo(LoadLevel.WARNING);
			g.decide();
			assertThat(g.state().intervals()).as("round %d: a later decision is made too", round).isEqualTo(2);
			g.dispose();
		}
	}

	@Test
	void holdAndReleaseRaceWithDecisions() {
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		List<LoadEvent.Reason> reasons = new ArrayList<>();
		// the listener runs on the serialised decision loop: a plain list is enough
		governor = f.builder().dwell(Duration.ZERO).listener(e -> reasons.add(e.reason())).build().start();
		f.score(100);
		for (int round = 0; round < 500; round++) {
			LoadLevel level = LoadLevel.values()[1 + round % 3];
			RaceTestUtils.race(governor::decide, () -> governor.hold(level).dispose());
			assertThat(governor.state().held()).isFalse();
		}
		// each published hold is followed by its release before the next hold (a hold released while
		// the racing decision still ran is published by neither event)
		List<LoadEvent.Reason> holds = reasons.stream()
				.filter(r -> r == LoadEvent.Reason.HOLD || r == LoadEvent.Reason.RELEASE).toList();
		assertThat(holds).isNotEmpty().hasSizeLessThanOrEqualTo(1000);
		for (int i = 0; i < holds.size(); i++) {
			assertThat(holds.get(i)).isEqualTo(i % 2 == 0 ? LoadEvent.Reason.HOLD : LoadEvent.Reason.RELEASE);
		}
		assertThat(holds.size() % 2).isZero();
		governor.hold(LoadLevel.CRITICAL);
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		assertThat(governor.state().held()).isTrue();
		assertThat(governor.state().intervals()).isEqualTo(500);
		assertThat(dropped).isEmpty();
	}
}
