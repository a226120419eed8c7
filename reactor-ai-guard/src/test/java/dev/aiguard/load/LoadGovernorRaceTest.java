package dev.aiguard.load;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Hooks;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Recording and reading race with decisions that change the level: every count lands in exactly
 * one interval, nothing throws, and the action read is always one of the current level's.
 */
class LoadGovernorRaceTest {

	static final int ROUNDS = 500;
	static final int PER_ROUND = 20;

	final List<Throwable> dropped = new ArrayList<>();
	final GovernorFixture f = new GovernorFixture();

	@AfterEach
	void resetHooks() {
		Hooks.resetOnErrorDropped();
	}

	/** Flips the score between CRITICAL and healthy at every decision, so every decision changes the level. */
	LoadGovernor flipping() {
		Hooks.onErrorDropped(dropped::add);
		boolean[] low = {false};
		HealthSignal flipping = HealthSignals.of("flip", s -> {
			low[0] = !low[0];
			return low[0] ? 0.0 : 100.0;
		});
		return f.builder().withoutSignal("cpu").withoutSignal("memory").withoutSignal("response-time")
				.withoutSignal("error-rate").signal(flipping, 1.0).capacity(1e9).dwell(Duration.ZERO).build();
	}

	@Test
	void countsAreConservedWhileTheLevelChanges() {
		LoadGovernor governor = flipping();
		long[] arrivals = new long[1];
		long[] attempts = new long[1];
		long[] failures = new long[1];
		long[] firstTokens = new long[1];
		AtomicLong actionsRead = new AtomicLong();
		int[] changes = {0};
		for (int round = 0; round < ROUNDS; round++) {
			RaceTestUtils.race(
					() -> {
						for (int i = 0; i < PER_ROUND; i++) {
							governor.arrived(Priority.values()[i % 3]);
							governor.firstToken(1_000_000L);
						}
					},
					() -> {
						for (int i = 0; i < PER_ROUND; i++) {
							governor.ended(i % 4 == 0 ? Outcome.FAILURE : Outcome.SUCCESS);
							LoadAction a = governor.action(Priority.P2);
							assertThat(a).isIn(LoadAction.REALTIME, LoadAction.CHEAPER_FIRST, LoadAction.SHED);
							actionsRead.incrementAndGet();
						}
					},
					() -> {
						LoadLevel before = governor.level();
						LoadState s = governor.decide();
						if (s.level() != before) {
							changes[0]++;
						}
						arrivals[0] += s.interval().arrivals();
						attempts[0] += s.interval().attempts();
						failures[0] += s.interval().failures();
						firstTokens[0] += s.interval().firstTokens();
					});
		}
		LoadState last = governor.decide();
		arrivals[0] += last.interval().arrivals();
		attempts[0] += last.interval().attempts();
		failures[0] += last.interval().failures();
		firstTokens[0] += last.interval().firstTokens();

		assertThat(arrivals[0]).isEqualTo((long) ROUNDS * PER_ROUND);
		assertThat(firstTokens[0]).isEqualTo((long) ROUNDS * PER_ROUND);
		assertThat(attempts[0]).isEqualTo((long) ROUNDS * PER_ROUND);
		assertThat(failures[0]).isEqualTo((long) ROUNDS * PER_ROUND / 4);
		assertThat(actionsRead.get()).isEqualTo((long) ROUNDS * PER_ROUND);
		assertThat(changes[0]).as("the level changed at every decision").isEqualTo(ROUNDS);
		assertThat(last.intervals()).isEqualTo(ROUNDS + 1);
		assertThat(dropped).isEmpty();
	}

	@Test
	void concurrentDecisionsAreSerialisedAndNoneIsLost() {
		LoadGovernor governor = flipping();
		for (int round = 0; round < ROUNDS; round++) {
			RaceTestUtils.race(governor::decide, governor::decide, () -> governor.arrived(Priority.P0));
		}
		assertThat(governor.state().intervals()).isEqualTo(2L * ROUNDS);
		// every decision took its delta: one more finds at most the last round's arrival, when it
		// came after both of that round's decisions
		assertThat(governor.decide().interval().arrivals()).isBetween(0L, 1L);
		assertThat(dropped).isEmpty();
	}
}
