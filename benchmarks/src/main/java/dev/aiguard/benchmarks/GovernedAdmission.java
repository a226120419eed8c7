package dev.aiguard.benchmarks;

import static dev.aiguard.benchmarks.LoadGovernorSimulation.CACHE_HIT_RATIO;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.CAPACITY;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.benchmarks.GovernorRun.CpuMeter;
import dev.aiguard.benchmarks.GovernorSetups.Admission;
import dev.aiguard.benchmarks.GovernorSetups.Attempt;
import dev.aiguard.benchmarks.GovernorSetups.End;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.load.HealthSignal;
import dev.aiguard.load.IntervalStats;
import dev.aiguard.load.LaneResizing;
import dev.aiguard.load.LoadGovernor;

/**
 * The load governor with its defaults (interval 1 s, Holt(0.3, 0.1), horizon 5, overload line
 * 0.85, load thresholds 0.8/∞/∞ smoothed at 0.3, score thresholds 80/60/40, dwell 30 s, the
 * default rules) in front of the lanes it resizes ({@code .lanes(lanes)}), driven the way the
 * guard drives it (see docs/guard.md, "Load governor inside the guard"): every request is one
 * arrival; its priority's action decides the path —
 * <ul>
 * <li>{@code REALTIME}: the lanes, then the model;</li>
 * <li>{@code CHEAPER_FIRST}: the cache or a lightweight answer, which has one for
 * {@link LoadGovernorSimulation#CACHE_HIT_RATIO} of the requests; a miss goes on to the lanes and the model;</li>
 * <li>{@code FALLBACK_FIRST}: a fallback model answers (another model: not the primary's
 * goodput);</li>
 * <li>{@code STATIC_OR_SHED} (the ladder has no static step) and {@code SHED}: refused before
 * any lane or model.</li>
 * </ul>
 * Each live attempt reports, when it ends, its time to first token (when one came) and its
 * outcome: {@code SUCCESS}, {@code FAILURE} (the model failed it), {@code STALLED} (no first
 * token within the first-token timeout), {@code REJECTED} (preempted by the lanes: not counted).
 * A lane's refusal never reaches the model and reports nothing. The JVM's CPU signal is replaced
 * by the simulated CPU and the memory signal is dropped, so the figures repeat.
 *
 * <p>The reactive variant is the same governor with the forecast's say removed: an overload
 * line no forecast reaches, so only the smoothed load and the health score set the level.
 */
final class GovernedAdmission implements Admission {

	final GovernorRun run;
	final LoadGovernor governor;
	final PriorityLanes lanes;

	GovernedAdmission(GovernorRun run, boolean forecast, LaneResizing resizing) {
		this.run = run;
		this.lanes = GovernorSetups.lanes(run);
		LoadGovernor.Builder builder = LoadGovernor.builder(forecast ? "full" : "reactive")
				.capacity(CAPACITY)
				.clock(run.clock)
				.withoutSignal("memory")
				.signal(new SimulatedCpu(run.newCpuMeter()), 0.20)
				.lanes(lanes, resizing);
		if (!forecast) {
			builder.overloadLine(Double.MAX_VALUE);
		}
		this.governor = builder.build();
		governor.start();
	}

	@Override
	public void offer(int request, Priority priority) {
		governor.arrived(priority);
		switch (governor.action(priority)) {
			case REALTIME:
				live(request, priority);
				break;
			case CHEAPER_FIRST:
				if (run.traffic.cacheDraw[request] < CACHE_HIT_RATIO) {
					run.cheap(request);
				}
				else {
					live(request, priority);
				}
				break;
			case FALLBACK_FIRST:
				run.fallback(request);
				break;
			default:
				run.shed(request);
		}
	}

	private void live(int request, Priority priority) {
		run.liveThroughLanes(request, priority, lanes, new Attempt() {
			long ttft = -1L;

			@Override
			public void firstToken(long ttftNanos) {
				ttft = ttftNanos;
			}

			@Override
			public void ended(End end) {
				// as the guard's ledger does: both when the attempt ends
				if (ttft >= 0L) {
					governor.firstToken(ttft);
				}
				governor.ended(outcome(end));
			}
		});
	}

	static Outcome outcome(End end) {
		switch (end) {
			case SUCCESS:
				return Outcome.SUCCESS;
			case FAILURE:
				return Outcome.FAILURE;
			case TIMEOUT:
				return Outcome.STALLED;
			default:
				return Outcome.REJECTED;
		}
	}

	@Override
	public Integer severity() {
		return governor.level().ordinal();
	}

	@Override
	public void dispose() {
		governor.dispose();
		lanes.dispose();
	}

	/** The simulated CPU as the governor's {@code cpu} signal: 100 − CPU % over the interval. */
	static final class SimulatedCpu implements HealthSignal {

		final CpuMeter meter;

		SimulatedCpu(CpuMeter meter) {
			this.meter = meter;
		}

		@Override
		public String name() {
			return "cpu";
		}

		@Override
		public double score(IntervalStats interval) {
			return 100.0 - meter.take();
		}
	}
}
