package dev.aiguard.load;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The score as the library's defaults build it (signal window, minimum samples, smoothing, rise
 * confirmation): scattered failures on a quiet service are not an error rate, a sustained one is.
 * Only the JVM's cpu and memory are replaced by dials (90 and 70, a busy but healthy process) so
 * the score does not depend on the machine running the test.
 */
class LoadGovernorSignalsTest {

	final VirtualTimeScheduler time = VirtualTimeScheduler.create();
	final Dial cpu = new Dial("cpu", 90);
	final Dial memory = new Dial("memory", 70);
	final List<LoadEvent> events = new CopyOnWriteArrayList<>();
	LoadGovernor governor;

	@AfterEach
	void stop() {
		if (governor != null) {
			governor.dispose();
		}
	}

	LoadGovernor defaults() {
		governor = LoadGovernor.builder("chat").capacity(10).clock(time).signal(cpu, 0.20).signal(memory, 0.15)
				.listener(events::add).build().start();
		return governor;
	}

	/** Runs {@code seconds} one-second steps, calling {@code each} with the step's index before it passes. */
	void seconds(int seconds, Consumer<Integer> each) {
		for (int s = 0; s < seconds; s++) {
			each.accept(s);
			time.advanceTimeBy(Duration.ofSeconds(1));
		}
	}

	void attempt(boolean fails) {
		governor.arrived(Priority.P1);
		if (fails) {
			governor.ended(Outcome.FAILURE);
		}
		else {
			governor.firstToken(Duration.ofMillis(300).toNanos());
			governor.ended(Outcome.SUCCESS);
		}
	}

	@Test
	void oneFailedAttemptLeavesAnIdleGovernorHealthy() {
		defaults();
		seconds(60, s -> {
			if (s == 5) {
				attempt(true);
			}
		});
		assertThat(events).isEmpty();
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertThat(governor.action(Priority.P1)).isEqualTo(LoadAction.REALTIME);
	}

	@Test
	void fiveFailuresInAMinuteAtALowRateLeaveAnIdleGovernorHealthy() {
		defaults();
		// one request every 4 s, every third fails: 15 attempts, 5 failures in the minute
		int[] sent = {0};
		seconds(60, s -> {
			if (s % 4 == 0) {
				attempt(sent[0]++ % 3 == 0);
			}
		});
		assertThat(sent[0]).isEqualTo(15);
		assertThat(events).isEmpty();
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertThat(governor.state().subScores().get(HealthSignals.ERROR_RATE)).as("5 attempts in the window").isNaN();
	}

	@Test
	void fiveFailedRequestsInAMinuteLeaveAnIdleGovernorHealthy() {
		defaults();
		// one request every 12 s, every one of them failing
		seconds(60, s -> {
			if (s % 12 == 0) {
				attempt(true);
			}
		});
		assertThat(events).isEmpty();
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
	}

	@Test
	void fiveFailuresInOneSecondLeaveAnIdleGovernorHealthy() {
		defaults();
		seconds(60, s -> {
			if (s == 20) {
				for (int i = 0; i < 5; i++) {
					attempt(true);
				}
			}
		});
		assertThat(events).isEmpty();
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
	}

	@Test
	void aSustainedFailureRateRaisesTheLevelWithinTenSeconds() {
		defaults();
		// 5 requests per second, every other one fails, for 30 s
		long[] firstRise = {-1};
		seconds(30, s -> {
			for (int i = 0; i < 5; i++) {
				attempt(i % 2 == 0 ? s % 2 == 0 : s % 2 == 1);
			}
			if (firstRise[0] < 0 && governor.level() != LoadLevel.HEALTHY) {
				firstRise[0] = s;
			}
		});
		assertThat(firstRise[0]).as("seconds until the first rise").isBetween(4L, 10L);
		assertThat(events.get(0).reason()).isEqualTo(LoadEvent.Reason.SCORE);
		assertThat(events.get(0).detail()).startsWith("error-rate=0.0");
		assertThat(governor.level()).isIn(LoadLevel.DEGRADED, LoadLevel.CRITICAL);
	}

	@Test
	void aResetForgetsTheWindowSoTheFailuresBeforeItRaiseNothingAfterIt() {
		defaults();
		seconds(15, s -> {
			for (int i = 0; i < 5; i++) {
				attempt(true);
			}
		});
		assertThat(governor.level()).isIn(LoadLevel.DEGRADED, LoadLevel.CRITICAL);
		governor.reset();
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertThat(events.get(events.size() - 1).reason()).isEqualTo(LoadEvent.Reason.RESET);
		int changes = events.size();
		// without the reset, the window's 50 failed attempts would keep the score at 0 for 10 s more
		seconds(10, s -> { });
		assertThat(events).hasSize(changes);
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		assertThat(governor.state().subScores().get(HealthSignals.ERROR_RATE)).isNaN();
		// a sustained rate afterwards raises it again, by the same rule
		seconds(10, s -> {
			for (int i = 0; i < 5; i++) {
				attempt(true);
			}
		});
		assertThat(governor.level()).isIn(LoadLevel.DEGRADED, LoadLevel.CRITICAL);

		Disposable held = governor.hold(LoadLevel.WARNING);
		governor.reset();
		assertThat(governor.level()).as("a reset leaves a hold in force").isEqualTo(LoadLevel.WARNING);
		assertThat(governor.state().held()).isTrue();
		held.dispose();
	}

	@Test
	void oneBadDecisionNeverRaisesTheLevel() {
		defaults();
		seconds(10, s -> cpu.set(s == 3 ? 0 : 90));
		memory.set(0);
		cpu.set(0);
		time.advanceTimeBy(Duration.ofSeconds(1));
		memory.set(70);
		cpu.set(90);
		seconds(40, s -> { });
		assertThat(events).isEmpty();
	}

	@Test
	void aScoreThatStaysLowRisesOnceItHasStayedPastTheLineForRiseAfter() {
		defaults();
		time.advanceTimeBy(Duration.ofSeconds(1)); // score 82.9 (cpu, memory only)
		cpu.set(10);
		memory.set(10);
		// smoothed: 82.9 -> 61.0 (WARNING's line crossed) -> 45.7 -> 35.0 -> 27.5: confirmed 3 s later
		time.advanceTimeBy(Duration.ofSeconds(3));
		assertThat(governor.level()).isEqualTo(LoadLevel.HEALTHY);
		time.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(governor.level()).isEqualTo(LoadLevel.CRITICAL);
		assertThat(events).hasSize(1);
		assertThat(events.get(0).score()).isLessThan(40.0);
	}

	@Test
	void badSettingsAreRefusedNamingTheField() {
		LoadGovernor.Builder b = LoadGovernor.builder("chat").capacity(10);
		assertThatThrownBy(() -> b.minSamples(-1)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("minSamples must be >= 0, was -1");
		assertThatThrownBy(() -> b.scoreSmoothing(0.0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("scoreSmoothing must be in (0, 1], was 0.0");
		assertThatThrownBy(() -> b.riseAfter(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("riseAfter must be >= 0, was PT-1S");
		assertThatThrownBy(() -> b.signalWindow(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("signalWindow must be > 0, was PT0S");
		assertThatThrownBy(() -> LoadGovernor.builder("chat").capacity(10).interval(Duration.ofSeconds(2))
				.signalWindow(Duration.ofSeconds(1)).build()).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("signalWindow must be >= interval (PT2S), was PT1S");
		assertThatThrownBy(() -> LoadGovernor.builder("chat").capacity(10).dwell(Duration.ofSeconds(5))
				.riseAfter(Duration.ofSeconds(5)).build()).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("riseAfter must be shorter than dwell (PT5S), was PT5S");
	}
}
