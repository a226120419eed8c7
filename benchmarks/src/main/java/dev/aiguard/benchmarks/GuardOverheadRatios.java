package dev.aiguard.benchmarks;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.CommandLineOptionException;
import org.openjdk.jmh.runner.options.CommandLineOptions;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link GuardOverheadBenchmark} in one JMH run and prints the statements a user can check,
 * each a ratio of two benchmarks of that run:
 *
 * <ul>
 * <li>{@code guard-added-per-answer-of-decode=} ({@code guarded} − {@code passThrough}) ÷
 * {@code decode}: what the guard adds to a 1000-token answer, as a fraction of decoding that
 * answer from its bytes (goal ≤ 0.01);</li>
 * <li>{@code flux-timeout-over-guard=} {@code fluxTimeout} ÷ {@code guarded} (goal ≥ 50);</li>
 * <li>{@code validated-over-guarded=} {@code guardedValidated} ÷ {@code guarded}: the empty-answer
 * validator and the repetition detector together (goal ≤ 1.1).</li>
 * </ul>
 *
 * The default run is {@code -f 1 -wi 3 -w 1s -i 5 -r 1s} over the benchmarks the ratios need;
 * JMH command-line options given as arguments override it (a benchmark pattern among them
 * replaces the default selection, e.g. to add the floors).
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.GuardOverheadRatios
 * java -cp benchmarks/target/benchmarks.jar dev.aiguard.benchmarks.GuardOverheadRatios -f 3
 * </pre>
 */
public final class GuardOverheadRatios {

	/** The benchmarks the printed ratios read. */
	static final String DEFAULT_SELECTION = GuardOverheadBenchmark.class.getName()
			+ "\\.(passThrough|guarded|guardedValidated|fluxTimeout|decode)$";

	private GuardOverheadRatios() {
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
				.parent(given)
				.build();
		Collection<RunResult> results = new Runner(options).run();
		Map<String, Double> scores = new TreeMap<>();
		for (RunResult r : results) {
			String label = r.getParams().getBenchmark();
			scores.put(label.substring(label.lastIndexOf('.') + 1), r.getPrimaryResult().getScore());
		}
		for (String line : ratios(scores)) {
			System.out.println(line);
		}
	}

	/**
	 * @param scores average time per operation by benchmark method name, all in one unit
	 * @return the ratio lines whose benchmarks are all present
	 */
	static List<String> ratios(Map<String, Double> scores) {
		List<String> lines = new ArrayList<>();
		Double pass = scores.get("passThrough");
		Double guarded = scores.get("guarded");
		Double decode = scores.get("decode");
		Double timeout = scores.get("fluxTimeout");
		Double validated = scores.get("guardedValidated");
		if (pass != null && guarded != null && decode != null) {
			lines.add(String.format(Locale.ROOT, "guard-added-per-answer-of-decode=%.4f", (guarded - pass) / decode));
		}
		if (timeout != null && guarded != null) {
			lines.add(String.format(Locale.ROOT, "flux-timeout-over-guard=%.1f", timeout / guarded));
		}
		if (validated != null && guarded != null) {
			lines.add(String.format(Locale.ROOT, "validated-over-guarded=%.2f", validated / guarded));
		}
		return lines;
	}
}
