package dev.aiguard.benchmarks;

import static dev.aiguard.benchmarks.LoadGovernorSimulation.CAPACITY;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.CPU_FULL_AT_STREAMS;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.DECODE_NANOS;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.DRAIN_S;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.ERROR_CAP;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.ERROR_SLOPE;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.FIRST_TOKEN_TIMEOUT_NANOS;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.PRIORITIES;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.RAMP_FROM;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.RAMP_HOLD_TO;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.RAMP_RISE_FROM;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.SECOND;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.SLOWDOWN;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.STEADY_COUNT_FROM_S;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.STEADY_S;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.STREAMS;
import static dev.aiguard.benchmarks.LoadGovernorSimulation.TOTAL_S;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.benchmarks.GovernorSetups.Admission;
import dev.aiguard.benchmarks.GovernorSetups.Attempt;
import dev.aiguard.benchmarks.GovernorSetups.End;
import dev.aiguard.benchmarks.GovernorSetups.Setup;
import dev.aiguard.core.Priority;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.test.scheduler.VirtualTimeScheduler;

/** One setup over the whole traffic, on its own virtual clock. */
final class GovernorRun {

	final GovernorTraffic traffic;
	final Setup setup;
	final VirtualTimeScheduler clock = VirtualTimeScheduler.create();
	final Admission admission;

	int streams;
	double area;
	long areaAt;

	final long[] offered = new long[3];
	final long[] succeeded = new long[3];
	final long[] failed = new long[3];
	final long[] preempted = new long[3];
	final long[] cheap = new long[3];
	final long[] fallback = new long[3];
	final long[] shedCount = new long[3];
	final long[] refused = new long[3];
	/** Live answers completed in overloaded seconds, by overloaded phase (day's peak, ramp, spike). */
	final long[] overloadedByPhase = new long[3];
	long[] p0Ttft = new long[1024];
	int p0TtftCount;
	final int[] severity = new int[TOTAL_S];

	GovernorRun(GovernorTraffic traffic, Setup setup) {
		this.traffic = traffic;
		this.setup = setup;
		this.admission = setup.admission.apply(this);
	}

	long now() {
		return clock.now(TimeUnit.NANOSECONDS);
	}

	CpuMeter newCpuMeter() {
		CpuMeter meter = new CpuMeter(this);
		meter.markAt = now();
		meter.areaAtMark = streamArea();
		return meter;
	}

	double streamArea() {
		return area + streams * (double) (now() - areaAt);
	}

	private void streamsChange(int delta) {
		area = streamArea();
		areaAt = now();
		streams += delta;
	}

	GovernorReport.Result execute() {
		scheduleArrival(0);
		Arrays.fill(severity, -1);
		// one sample per second, just after the governors' decisions on the second
		clock.schedulePeriodically(this::sampleLevel, SECOND + 1_000_000, SECOND, TimeUnit.NANOSECONDS);
		clock.advanceTimeBy(Duration.ofSeconds(TOTAL_S + DRAIN_S));
		admission.dispose();
		clock.dispose();
		return result();
	}

	private void sampleLevel() {
		int s = (int) (now() / SECOND) - 1;
		Integer level = admission.severity();
		if (level != null && s >= 0 && s < TOTAL_S) {
			severity[s] = level;
		}
	}

	private void scheduleArrival(int i) {
		clock.schedule(() -> {
			Priority p = PRIORITIES[traffic.priority[i]];
			offered[p.ordinal()]++;
			admission.offer(i, p);
			if (i + 1 < traffic.size()) {
				scheduleArrival(i + 1);
			}
		}, traffic.at[i] - now(), TimeUnit.NANOSECONDS);
	}

	/**
	 * Sends request {@code i} to the model now. Its time to first token is the unloaded one,
	 * stretched when the model runs more than {@link LoadGovernorSimulation#STREAMS} streams (counting this one); it
	 * fails with a probability growing with the excess (the failure arrives when its first token
	 * would have), and a first token later than the timeout is a failure at the timeout.
	 */
	Call live(int i, Attempt attempt) {
		streamsChange(1);
		double x = Math.max(0.0, streams / (double) STREAMS - 1.0);
		long ttft = (long) (traffic.baseTtft[i] * (1 + SLOWDOWN * x * x));
		boolean fails = traffic.failureDraw[i] < Math.min(ERROR_CAP, ERROR_SLOPE * x);
		Call call = new Call(i, attempt);
		if (ttft >= FIRST_TOKEN_TIMEOUT_NANOS) {
			call.pending = clock.schedule(() -> call.end(End.TIMEOUT), FIRST_TOKEN_TIMEOUT_NANOS,
					TimeUnit.NANOSECONDS);
		}
		else if (fails) {
			call.pending = clock.schedule(() -> call.end(End.FAILURE), ttft, TimeUnit.NANOSECONDS);
		}
		else {
			call.pending = clock.schedule(() -> call.firstToken(ttft), ttft, TimeUnit.NANOSECONDS);
		}
		return call;
	}

	/** One live attempt on the model; ends exactly once. */
	final class Call {

		final int request;
		final int priority;
		final Attempt attempt;
		Disposable pending = Disposables.disposed();
		boolean ended;

		Call(int request, Attempt attempt) {
			this.request = request;
			this.priority = traffic.priority[request];
			this.attempt = attempt;
		}

		void firstToken(long ttft) {
			attempt.firstToken(ttft);
			long fromArrival = now() - traffic.at[request];
			if (priority == 0 && GovernorTraffic.overloaded((int) (traffic.at[request] / SECOND))) {
				recordP0Ttft(fromArrival);
			}
			pending = clock.schedule(() -> end(End.SUCCESS), DECODE_NANOS, TimeUnit.NANOSECONDS);
		}

		void end(End end) {
			if (ended) {
				return;
			}
			ended = true;
			pending.dispose();
			streamsChange(-1);
			if (end == End.SUCCESS) {
				succeeded[priority]++;
				int s = (int) (now() / SECOND);
				if (GovernorTraffic.overloaded(s)) {
					overloadedByPhase[GovernorTraffic.phase(s)]++;
				}
			}
			else if (end == End.PREEMPTED) {
				preempted[priority]++;
			}
			else {
				failed[priority]++;
			}
			attempt.ended(end);
		}
	}

	/**
	 * Request {@code i} through the lanes: the model call starts when a permit is granted (any
	 * queueing counts in its time to first token from arrival); a lane's refusal (queue full,
	 * wait timeout) never reaches the model and is a failure to serve; a preempted stream ends
	 * at once as {@link End#PREEMPTED}.
	 */
	void liveThroughLanes(int i, Priority priority, PriorityLanes lanes, Attempt attempt) {
		LanePermit permit = lanes.tryAcquire(priority);
		if (permit != null) {
			liveOnPermit(i, permit, attempt);
			return;
		}
		// a permit taken back from a borrower is handed over before that stream's preemption
		// action runs: start on the next task at the same instant, once the stream has ended
		lanes.acquire(priority).subscribe(
				granted -> clock.schedule(() -> liveOnPermit(i, granted, attempt)), refusal -> refused(i));
	}

	private void liveOnPermit(int i, LanePermit permit, Attempt attempt) {
		Call call = live(i, new Attempt() {
			@Override
			public void firstToken(long ttftNanos) {
				attempt.firstToken(ttftNanos);
			}

			@Override
			public void ended(End end) {
				permit.release();
				attempt.ended(end);
			}
		});
		permit.onPreempted(e -> call.end(End.PREEMPTED));
	}

	/** Request {@code i} answered by the cache or a lightweight answer: answered, not live. */
	void cheap(int i) {
		cheap[traffic.priority[i]]++;
	}

	/** Request {@code i} answered by a fallback model: answered, not by the primary. */
	void fallback(int i) {
		fallback[traffic.priority[i]]++;
	}

	/** Request {@code i} refused by admission before any lane or model. */
	void shed(int i) {
		shedCount[traffic.priority[i]]++;
	}

	/** Request {@code i} refused by a lane (queue full or wait timeout). */
	void refused(int i) {
		refused[traffic.priority[i]]++;
	}

	private void recordP0Ttft(long nanos) {
		if (p0TtftCount == p0Ttft.length) {
			p0Ttft = Arrays.copyOf(p0Ttft, p0Ttft.length * 2);
		}
		p0Ttft[p0TtftCount++] = nanos;
	}

	GovernorReport.Result result() {
		GovernorReport.Result r = new GovernorReport.Result();
		r.setup = setup;
		long[] ttfts = Arrays.copyOf(p0Ttft, p0TtftCount);
		Arrays.sort(ttfts);
		r.p0Success = succeeded[0] / (double) offered[0];
		r.p0TtftP50 = LatencyHistogram.nearestRankMillis(ttfts, 0.50);
		r.p0TtftP99 = LatencyHistogram.nearestRankMillis(ttfts, 0.99);
		r.p1Answered = (succeeded[1] + cheap[1] + fallback[1]) / (double) offered[1];
		r.p2Answered = (succeeded[2] + cheap[2] + fallback[2]) / (double) offered[2];
		double all = offered[0] + offered[1] + offered[2];
		r.liveShare = sum(succeeded) / all;
		r.cheapShare = sum(cheap) / all;
		r.fallbackShare = sum(fallback) / all;
		r.shedShare = sum(shedCount) / all;
		r.refusedShare = sum(refused) / all;
		r.failedShare = sum(failed) / all;
		r.preemptedShare = sum(preempted) / all;
		int[] overloadedSeconds = new int[3];
		for (int s = 0; s < TOTAL_S; s++) {
			if (GovernorTraffic.overloaded(s)) {
				overloadedSeconds[GovernorTraffic.phase(s)]++;
			}
		}
		r.goodput = sum(overloadedByPhase) / (CAPACITY * (overloadedSeconds[0] + overloadedSeconds[1]
				+ overloadedSeconds[2]));
		for (int phase = 0; phase < 3; phase++) {
			r.goodputByPhase[phase] = overloadedByPhase[phase] / (CAPACITY * overloadedSeconds[phase]);
		}
		r.hasLevels = severity[TOTAL_S - 1] >= 0;
		if (r.hasLevels) {
			int changes = 0;
			for (int s = STEADY_COUNT_FROM_S + 1; s < STEADY_S; s++) {
				if (severity[s] != severity[s - 1]) {
					changes++;
				}
			}
			r.steadyChangesPerMinute = changes / ((STEADY_S - STEADY_COUNT_FROM_S) / 60.0);
			r.rampDegradeSecond = firstHeldDegradation();
			for (int s = 0; s < TOTAL_S; s++) {
				if (GovernorTraffic.overloaded(s) && severity[s] >= 0) {
					r.overloadedSecondsAt[severity[s]]++;
				}
			}
		}
		return r;
	}

	private static long sum(long[] counts) {
		return counts[0] + counts[1] + counts[2];
	}

	/**
	 * Seconds after the ramp starts rising at which the setup leaves its best level and stays at
	 * a worse one until the end of the hold at 3× (blips before that do not count).
	 */
	private int firstHeldDegradation() {
		int from = RAMP_HOLD_TO - 1;
		if (severity[from] <= 0) {
			return Integer.MAX_VALUE;
		}
		while (from - 1 >= RAMP_FROM && severity[from - 1] > 0) {
			from--;
		}
		return from - RAMP_RISE_FROM;
	}

	/** Time-weighted mean of the model's streams since the last {@link #take()}, as CPU %. */
	static final class CpuMeter {

		final GovernorRun run;
		double areaAtMark;
		long markAt;

		CpuMeter(GovernorRun run) {
			this.run = run;
		}

		double take() {
			long now = run.now();
			double area = run.streamArea();
			double mean = now == markAt ? run.streams : (area - areaAtMark) / (now - markAt);
			areaAtMark = area;
			markAt = now;
			return Math.min(100.0, 100.0 * mean / CPU_FULL_AT_STREAMS);
		}
	}
}
