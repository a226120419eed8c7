package dev.aiguard.benchmarks;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import org.openjdk.jmh.profile.GCProfiler;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link ChunkDecodeBenchmark} in one JMH run, with the GC profiler, and prints the statements
 * a user can check, each from benchmarks of that run on the same events:
 *
 * <ul>
 * <li>{@code decoder-speedup-vs-tree=} {@code tree} ÷ {@code streaming} (goal ≥ 5);</li>
 * <li>{@code decoder-speedup-vs-spring-ai=} {@code springAi} ÷ {@code streaming} (goal ≥ 2);</li>
 * <li>{@code decoder-speedup-vs-openai-sdk=} {@code openAiSdk} ÷ {@code streaming} (goal ≥ 2);</li>
 * <li>{@code decoder-bytes-per-event=} what {@code streaming} allocates per operation
 * ({@code gc.alloc.rate.norm}) ÷ the events of the answer (goal ≤ 400).</li>
 * </ul>
 *
 * The default run is {@code -f 1 -wi 3 -w 1s -i 5 -r 1s}; JMH command-line options given as
 * arguments override it.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.DecoderRatios
 * java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.DecoderRatios -f 3
 * </pre>
 */
public final class DecoderRatios {

	/** The benchmarks the printed ratios read. */
	static final String DEFAULT_SELECTION = ChunkDecodeBenchmark.class.getName()
			+ "\\.(streaming|tree|openAiSdk|springAi)$";

	/** The events of the answer each operation decodes: {@link ChunkDecodeBenchmark#chunks}'s default. */
	static final int EVENTS = 1000;

	private DecoderRatios() {
	}

	/**
	 * @param args JMH command-line options (optional)
	 */
	public static void main(String[] args) throws RunnerException, CommandLineOptionException {
		CommandLineOptions given = new CommandLineOptions(args);
		OptionsBuilder builder = new OptionsBuilder();
		if (given.getIncludes().isEmpty()) {
			builder.include(DEFAULT_SELECTION);
		}
		Options options = builder.forks(given.getForkCount().orElse(1))
				.warmupIterations(given.getWarmupIterations().orElse(3))
				.warmupTime(given.getWarmupTime().orElse(TimeValue.seconds(1)))
				.measurementIterations(given.getMeasurementIterations().orElse(5))
				.measurementTime(given.getMeasurementTime().orElse(TimeValue.seconds(1)))
				.addProfiler(GCProfiler.class)
				.parent(given)
				.build();
		Collection<RunResult> results = new Runner(options).run();
		Map<String, Double> scores = new TreeMap<>();
		Map<String, Double> allocated = new TreeMap<>();
		for (RunResult r : results) {
			String label = r.getParams().getBenchmark();
			String name = label.substring(label.lastIndexOf('.') + 1);
			scores.put(name, r.getPrimaryResult().getScore());
			for (Map.Entry<String, Result> secondary : r.getSecondaryResults().entrySet()) {
				if (secondary.getKey().endsWith("gc.alloc.rate.norm")) {
					allocated.put(name, secondary.getValue().getScore());
				}
			}
		}
		for (String line : ratios(scores, allocated)) {
			System.out.println(line);
		}
	}

	/**
	 * @param scores average time per operation by benchmark method name, all in one unit
	 * @param allocated bytes allocated per operation by benchmark method name
	 * @return the lines whose benchmarks are all present
	 */
	static List<String> ratios(Map<String, Double> scores, Map<String, Double> allocated) {
		List<String> lines = new ArrayList<>();
		Double streaming = scores.get("streaming");
		if (streaming == null) {
			return lines;
		}
		speedup(lines, "decoder-speedup-vs-tree", scores.get("tree"), streaming);
		speedup(lines, "decoder-speedup-vs-spring-ai", scores.get("springAi"), streaming);
		speedup(lines, "decoder-speedup-vs-openai-sdk", scores.get("openAiSdk"), streaming);
		Double bytes = allocated.get("streaming");
		if (bytes != null) {
			lines.add(String.format(Locale.ROOT, "decoder-bytes-per-event=%.0f", bytes / EVENTS));
		}
		for (Map.Entry<String, Double> other : allocated.entrySet()) {
			if (!other.getKey().equals("streaming")) {
				lines.add(String.format(Locale.ROOT, "%s-bytes-per-event=%.0f", other.getKey(), other.getValue() / EVENTS));
			}
		}
		return lines;
	}

	private static void speedup(List<String> lines, String name, Double other, double streaming) {
		if (other != null) {
			lines.add(String.format(Locale.ROOT, "%s=%.2f", name, other / streaming));
		}
	}
}
