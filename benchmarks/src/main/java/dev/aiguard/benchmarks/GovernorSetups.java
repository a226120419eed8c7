package dev.aiguard.benchmarks;

import static dev.aiguard.benchmarks.LoadGovernorSimulation.CAPACITY;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.G2_INITIAL;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.G2_MAX;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.G2_MIN;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.LANE_P0;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.LANE_P1;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.LANE_P2;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.LOWER_WAIT;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.P0_WAIT;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.SECOND;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.STATIC_BURST;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.STATIC_CPU_LIMIT;

import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import com.netflix.concurrency.limits.Limiter;
import com.netflix.concurrency.limits.limit.Gradient2Limit;
import com.netflix.concurrency.limits.limiter.SimpleLimiter;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.benchmarks.GovernorRun.CpuMeter;
import dev.aiguard.core.Priority;
import dev.aiguard.load.LaneResizing;
import org.jspecify.annotations.Nullable;

/** The admission setups of {@link LoadGovernorSimulation}: what each does with an arriving request. */
final class GovernorSetups {

	enum Setup {
		NONE("1 no governor", Unguarded::new),
		STATIC("2 static thresholds", StaticThresholds::new),
		GRADIENT2("3 Gradient2 (Netflix)", Gradient2Admission::new),
		LANES("4 lanes only", LanesOnly::new),
		REACTIVE("5 governor+lanes, reactive", run -> new GovernedAdmission(run, false, LaneResizing.KEEP_TOTAL)),
		FULL("6 governor+lanes, full", run -> new GovernedAdmission(run, true, LaneResizing.KEEP_TOTAL)),
		SCALE("7 = 6 with SCALE lanes", run -> new GovernedAdmission(run, true, LaneResizing.SCALE));

		final String label;
		final Function<GovernorRun, Admission> admission;

		Setup(String label, Function<GovernorRun, Admission> admission) {
			this.label = label;
			this.admission = admission;
		}
	}

	/** How one setup routes a request: to the model (through lanes or not), to a cheaper answer, or refused. */
	interface Admission {

		/** A request arrived; route it through the {@link GovernorRun}. */
		void offer(int request, Priority priority);

		/** @return the setup's load level (0 = best) after its last decision, or null when it has none */
		default @Nullable Integer severity() {
			return null;
		}

		default void dispose() {
		}
	}

	/** How a live model attempt ended. */
	enum End {
		SUCCESS,
		/** The model failed it (overloaded). */
		FAILURE,
		/** No first token within the first-token timeout. */
		TIMEOUT,
		/** A lane took its permit back for a more urgent request. */
		PREEMPTED
	}

	/** Callbacks of one live model attempt. */
	interface Attempt {

		/** @param ttftNanos time to first token from the attempt's start */
		void firstToken(long ttftNanos);

		void ended(End end);
	}

	static final Attempt NO_CALLBACKS = new Attempt() {
		@Override
		public void firstToken(long ttftNanos) {
		}

		@Override
		public void ended(End end) {
		}
	};

	static final class Unguarded implements Admission {

		final GovernorRun run;

		Unguarded(GovernorRun run) {
			this.run = run;
		}

		@Override
		public void offer(int request, Priority priority) {
			run.live(request, NO_CALLBACKS);
		}
	}

	/**
	 * A token bucket refilled at the model's sustainable rate (burst of a quarter of its streams)
	 * and a fixed CPU limit, checked on the CPU of the last second; blind to priority.
	 */
	static final class StaticThresholds implements Admission {

		final GovernorRun run;
		double tokens = STATIC_BURST;
		long refilledAt;
		double cpu;

		StaticThresholds(GovernorRun run) {
			this.run = run;
			CpuMeter meter = run.newCpuMeter();
			run.clock.schedulePeriodically(() -> cpu = meter.take(), SECOND, SECOND, TimeUnit.NANOSECONDS);
		}

		@Override
		public void offer(int request, Priority priority) {
			long now = run.now();
			tokens = Math.min(STATIC_BURST, tokens + (now - refilledAt) * CAPACITY / SECOND);
			refilledAt = now;
			if (cpu >= STATIC_CPU_LIMIT || tokens < 1.0) {
				run.shed(request);
				return;
			}
			tokens -= 1.0;
			run.live(request, NO_CALLBACKS);
		}
	}

	/**
	 * Netflix's Gradient2 limit enforced by its SimpleLimiter on the simulation's clock. A permit is
	 * held for the whole stream (acquired before the call, settled when it ends: success, or
	 * dropped on a failure or timeout), so the round-trip time it learns from is the stream's.
	 */
	static final class Gradient2Admission implements Admission {

		final GovernorRun run;
		final Limiter<Priority> limiter;

		Gradient2Admission(GovernorRun run) {
			this.run = run;
			Gradient2Limit limit = Gradient2Limit.newBuilder()
					.initialLimit(G2_INITIAL)
					.minLimit(G2_MIN)
					.maxConcurrency(G2_MAX)
					.build();
			this.limiter = SimpleLimiter.newBuilder()
					.named("simulation")
					.limit(limit)
					.nanoClock(run::now)
					.build();
		}

		@Override
		public void offer(int request, Priority priority) {
			Optional<Limiter.Listener> permit = limiter.acquire(priority);
			if (permit.isEmpty()) {
				run.shed(request);
				return;
			}
			Limiter.Listener listener = permit.get();
			run.live(request, new Attempt() {
				@Override
				public void firstToken(long ttftNanos) {
				}

				@Override
				public void ended(End end) {
					if (end == End.SUCCESS) {
						listener.onSuccess();
					}
					else {
						listener.onDropped();
					}
				}
			});
		}
	}

	/**
	 * {@link PriorityLanes} sized to the model's streams in front of it, no governor: the lanes
	 * bound the model's concurrency and decide by priority who waits.
	 */
	static final class LanesOnly implements Admission {

		final GovernorRun run;
		final PriorityLanes lanes;

		LanesOnly(GovernorRun run) {
			this.run = run;
			this.lanes = lanes(run);
		}

		@Override
		public void offer(int request, Priority priority) {
			run.liveThroughLanes(request, priority, lanes, NO_CALLBACKS);
		}

		@Override
		public void dispose() {
			lanes.dispose();
		}
	}

	/**
	 * The lanes every governed row uses, their sizes a partition of the model's {@value LoadGovernorSimulation#STREAMS}
	 * streams: P0 holds half of them, reserved for interactive work, and lends what it does not
	 * use to the other lanes, taking it back by preemption when a P0 request finds nothing free;
	 * P1 lends its idle permits to P2 without preemption (a batch stream is not thrown away for
	 * a P1 request that can wait a moment); P2 only borrows. P0 waits in its queue at most
	 * {@link LoadGovernorSimulation#P0_WAIT}, P1 and P2 at most {@link LoadGovernorSimulation#LOWER_WAIT}; a longer wait, or a full queue
	 * (256), refuses the request.
	 */
	static PriorityLanes lanes(GovernorRun run) {
		return PriorityLanes.builder()
				.name("simulation")
				.timer(run.clock)
				.lane(Priority.P0, LaneSpec.of(LANE_P0).maxQueueWait(P0_WAIT).lendToLower(1.0).preemptBorrowers(true))
				.lane(Priority.P1, LaneSpec.of(LANE_P1).maxQueueWait(LOWER_WAIT).lendToLower(1.0))
				.lane(Priority.P2, LaneSpec.of(LANE_P2).maxQueueWait(LOWER_WAIT))
				.build();
	}

	private GovernorSetups() {
	}
}
