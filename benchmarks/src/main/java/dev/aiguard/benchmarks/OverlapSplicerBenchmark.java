package dev.aiguard.benchmarks;

import java.util.concurrent.TimeUnit;

import dev.aiguard.retry.splice.OverlapSplicer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * What splicing a 1000-delta continuation costs, against handing the same deltas on untouched:
 * a continuation that does not repeat (decided on its first delta), one that repeats the last
 * 100 delivered characters, and the worst case (every candidate stays alive for the whole tail,
 * one character per delta).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class OverlapSplicerBenchmark {

	private static final int DELTAS = 1000;

	String delivered;
	String[] fresh;
	String[] repeating;
	String worstDelivered;
	String[] worst;

	@Setup
	public void setup() {
		StringBuilder text = new StringBuilder();
		for (int i = 0; text.length() < 2_000; i++) {
			text.append(" word").append(i);
		}
		delivered = text.toString();
		fresh = new String[DELTAS];
		for (int i = 0; i < DELTAS; i++) {
			fresh[i] = " tok" + (i % 10);
		}
		// the model repeats the last 100 characters in 4-character deltas, then goes on
		String repeat = delivered.substring(delivered.length() - 100);
		repeating = new String[DELTAS];
		for (int i = 0; i < DELTAS; i++) {
			repeating[i] = i < 25 ? repeat.substring(i * 4, i * 4 + 4) : fresh[i];
		}
		worstDelivered = "a".repeat(200);
		worst = new String[DELTAS];
		for (int i = 0; i < DELTAS; i++) {
			worst[i] = i < 200 ? "a" : fresh[i];
		}
	}

	@Benchmark
	public void baseline(Blackhole bh) {
		for (String delta : fresh) {
			bh.consume(delta);
		}
	}

	@Benchmark
	public void noRepeat(Blackhole bh) {
		OverlapSplicer splicer = OverlapSplicer.of(delivered);
		for (String delta : fresh) {
			bh.consume(splicer.accept(delta));
		}
		bh.consume(splicer.finish());
	}

	@Benchmark
	public void repeat100(Blackhole bh) {
		OverlapSplicer splicer = OverlapSplicer.of(delivered);
		for (String delta : repeating) {
			bh.consume(splicer.accept(delta));
		}
		bh.consume(splicer.finish());
	}

	@Benchmark
	public void worstCase(Blackhole bh) {
		OverlapSplicer splicer = OverlapSplicer.of(worstDelivered);
		for (String delta : worst) {
			bh.consume(splicer.accept(delta));
		}
		bh.consume(splicer.finish());
	}
}
