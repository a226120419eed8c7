package dev.aiguard.load;

import java.time.Duration;

import dev.aiguard.core.Priority;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A governor on virtual time with capacity 10 requests per second, one-second intervals, and the
 * JVM signals (cpu, memory) replaced by dials so its score is what the test sets. The load is read
 * unsmoothed and every level has a load line (0.8, 1.0, 2.0), so one interval's arrivals set the
 * level a test expects. The score reads each interval alone, every sample counts, it is not
 * smoothed and a rise needs no confirmation, so one interval's dials set the level; the defaults
 * (load and score smoothing, signal window, minimum samples, rise confirmation, DEGRADED and
 * CRITICAL from the score only) have their own tests.
 */
final class GovernorFixture {

	final VirtualTimeScheduler time = VirtualTimeScheduler.create();
	final Dial cpu = new Dial("cpu", 100);
	final Dial memory = new Dial("memory", 100);

	/** Cold start for ever: levels from the current values only, unless the test sets a warm-up. */
	LoadGovernor.Builder builder() {
		return LoadGovernor.builder("chat")
				.capacity(10)
				.interval(Duration.ofSeconds(1))
				.clock(time)
				.signal(cpu, 0.20)
				.signal(memory, 0.15)
				.warmupIntervals(1_000_000)
				.loadSmoothing(1.0)
				.loadThresholds(0.8, 1.0, 2.0)
				.signalWindow(Duration.ofSeconds(1))
				.minSamples(0)
				.scoreSmoothing(1.0)
				.riseAfter(Duration.ZERO);
	}

	/** Sets both dials: with no stream data the score is this value. */
	void score(double value) {
		cpu.set(value);
		memory.set(value);
	}

	/** {@code requests} arrivals of {@code priority}, then one interval passes (one decision on a started governor). */
	void interval(LoadGovernor governor, int requests, Priority priority) {
		for (int i = 0; i < requests; i++) {
			governor.arrived(priority);
		}
		time.advanceTimeBy(Duration.ofSeconds(1));
	}

	void interval(LoadGovernor governor, int requests) {
		interval(governor, requests, Priority.P1);
	}

	void intervals(LoadGovernor governor, int count, int requestsEach) {
		for (int i = 0; i < count; i++) {
			interval(governor, requestsEach);
		}
	}
}
