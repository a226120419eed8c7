package dev.aiguard.benchmarks;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.load.Holt;
import dev.aiguard.load.LoadAction;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.load.LoadState;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Threads;
import reactor.core.scheduler.Schedulers;

/**
 * What the load governor costs, each against a baseline measured in the same run.
 *
 * <ul>
 * <li>Hot path, once per request: {@code arrivedAndAction} (count the arrival, read the action)
 * against {@code baselineCounterAndRead} (one striped-counter increment and one volatile array
 * read, the least such a pair can cost), on 1 and 2 threads sharing one governor.</li>
 * <li>Once per interval: {@code decide} with the default signals (JVM CPU and heap read through
 * their MXBeans), {@code decideStreamSignals} with only the signals computed from the interval's
 * counts, against {@code baselineHolt} (the forecaster's observe and five forecasts alone).</li>
 * </ul>
 *
 * Run: {@code java -jar benchmarks/target/benchmarks.jar LoadGovernorBenchmark -f 1 -wi 2 -w 1s -i 3 -r 1s}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
public class LoadGovernorBenchmark {

	LoadGovernor governor;
	LoadGovernor streamSignalsOnly;
	Holt holt;
	double rate;

	final LongAdder baselineCounter = new LongAdder();
	volatile LoadAction[] baselineRow = {LoadAction.REALTIME, LoadAction.REALTIME, LoadAction.REALTIME};

	@Setup
	public void setUp() {
		governor = LoadGovernor.builder("bench").capacity(1e12).clock(Schedulers.immediate()).build();
		streamSignalsOnly = LoadGovernor.builder("bench-stream").capacity(1e12).clock(Schedulers.immediate())
				.withoutSignal("cpu").withoutSignal("memory").build();
		holt = Holt.of(0.3, 0.1);
		for (LoadGovernor g : new LoadGovernor[] {governor, streamSignalsOnly}) {
			g.firstToken(250_000_000L);
			g.ended(Outcome.SUCCESS);
		}
	}

	@Benchmark
	@Threads(1)
	public LoadAction arrivedAndAction() {
		governor.arrived(Priority.P1);
		return governor.action(Priority.P1);
	}

	@Benchmark
	@Threads(2)
	public LoadAction arrivedAndAction2Threads() {
		governor.arrived(Priority.P1);
		return governor.action(Priority.P1);
	}

	@Benchmark
	@Threads(1)
	public LoadAction baselineCounterAndRead() {
		baselineCounter.increment();
		return baselineRow[Priority.P1.ordinal()];
	}

	@Benchmark
	@Threads(2)
	public LoadAction baselineCounterAndRead2Threads() {
		baselineCounter.increment();
		return baselineRow[Priority.P1.ordinal()];
	}

	@Benchmark
	@Threads(1)
	public LoadState decide() {
		return governor.decide();
	}

	@Benchmark
	@Threads(1)
	public LoadState decideStreamSignals() {
		return streamSignalsOnly.decide();
	}

	@Benchmark
	@Threads(1)
	public double baselineHolt() {
		holt.observe(rate);
		rate = rate > 1000 ? 0 : rate + 1;
		double peak = 0;
		for (int k = 1; k <= 5; k++) {
			peak = Math.max(peak, holt.forecast(k));
		}
		return peak;
	}
}
