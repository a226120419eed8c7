package dev.aiguard.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Turns the rig's results into a Markdown table and the {@code key=value} lines a reader (or a
 * script) compares with the goals. Ratios and differences are taken between variants measured at
 * the same concurrency in the same run.
 */
final class RigReport {

	/** The variant every other is compared with. */
	static final String UNGUARDED = "unguarded";
	/** The library's guard. */
	static final String GUARDED = "guarded";
	/** The library's guard without the budget (only when asked for with {@code --variants}). */
	static final String GUARDED_WITHOUT_BUDGET = "guarded-without-budget";
	/** The per-token timeout and resilience4j stack. */
	static final String ALTERNATIVE = "alternative";

	private RigReport() {
	}

	/** @return the results as a Markdown table, one row per concurrency and variant */
	static String table(List<VariantResult> results) {
		StringBuilder out = new StringBuilder();
		out.append("| K | variant | completed | failed | peak open | tokens/s | cores | CPU µs/token | alloc B/token "
				+ "| heap B/stream | TTFT p50 ms | TTFT p99 ms | GC ms | server CPU µs/token |\n");
		out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
		for (VariantResult r : results) {
			out.append("| ").append(r.k())
				.append(" | ").append(r.variant())
				.append(" | ").append(r.completed())
				.append(" | ").append(r.failed())
				.append(" | ").append(r.peakOpen())
				.append(" | ").append(format(r.tokensPerSecond(), 0))
				.append(" | ").append(format(r.cores(), 2))
				.append(" | ").append(format(r.cpuNanosPerToken() / 1000, 2))
				.append(" | ").append(format(r.allocatedBytesPerToken(), 0))
				.append(" | ").append(format(r.heapBytesPerStream(), 0))
				.append(" | ").append(format(r.ttftP50Ms(), 2))
				.append(" | ").append(format(r.ttftP99Ms(), 2))
				.append(" | ").append(r.gcMillis())
				.append(" | ").append(format(r.serverCpuNanosPerToken() / 1000, 2))
				.append(" |\n");
		}
		return out.toString();
	}

	/**
	 * @return where each variant's CPU per token went, by thread group ({@link ThreadCpu}), as a
	 *         Markdown table: one row per concurrency and variant, µs per delivered token
	 */
	static String threadTable(List<VariantResult> results) {
		StringBuilder out = new StringBuilder("| K | variant | all threads");
		StringBuilder rule = new StringBuilder("|---|---|---");
		for (ThreadCpu group : ThreadCpu.values()) {
			out.append(" | ").append(group.label());
			rule.append("|---");
		}
		out.append(" |\n").append(rule).append("|\n");
		for (VariantResult r : results) {
			out.append("| ").append(r.k()).append(" | ").append(r.variant())
				.append(" | ").append(format(r.cpuNanosPerToken() / 1000, 2));
			for (ThreadCpu group : ThreadCpu.values()) {
				out.append(" | ").append(format(r.threadCpuNanosPerToken(group) / 1000, 2));
			}
			out.append(" |\n");
		}
		return out.toString();
	}

	/**
	 * The goal lines for the largest concurrency, then the same per concurrency with a
	 * {@code .k<K>} suffix: {@code cpu-per-token-ratio} (guarded ÷ unguarded),
	 * {@code alternative-cpu-per-token-ratio} (alternative ÷ guarded), {@code heap-per-stream-bytes}
	 * (guarded minus unguarded retained heap per open stream), {@code ttft-p99-added-ms} and
	 * {@code ttft-p50-added-ms} (guarded minus unguarded), and {@code streams-held}: the largest K at which the guarded variant had K
	 * streams open at once and every stream of every variant completed (0 when none). A warning
	 * comment line comes first for each variant that had streams that did not complete.
	 */
	static List<String> lines(List<VariantResult> results) {
		return lines(results, List.of());
	}

	/**
	 * As {@link #lines(List)}, where a K with a paired pass takes its first-token lines from it
	 * (both halves measured at once) and keeps the separate passes' figure as
	 * {@code ttft-p99-added-ms-separate-passes}.
	 */
	static List<String> lines(List<VariantResult> results, List<PairedTtft> paired) {
		List<String> lines = new ArrayList<>();
		for (VariantResult r : results) {
			if (r.failed() > 0) {
				lines.add("# warning: " + r.variant() + " at K=" + r.k() + " had " + r.failed()
						+ " streams that did not complete: its figures are not comparable");
			}
		}
		int largest = results.stream().mapToInt(VariantResult::k).max().orElse(0);
		lines.addAll(linesFor(results, paired, largest, ""));
		lines.add("streams-held=" + streamsHeld(results));
		for (int k : results.stream().mapToInt(VariantResult::k).distinct().sorted().toArray()) {
			lines.addAll(linesFor(results, paired, k, ".k" + k));
		}
		return lines;
	}

	private static List<String> linesFor(List<VariantResult> results, List<PairedTtft> paired, int k, String suffix) {
		Optional<PairedTtft> pair = paired.stream().filter(p -> p.k() == k).findFirst();
		Optional<VariantResult> unguarded = find(results, k, UNGUARDED);
		Optional<VariantResult> guarded = find(results, k, GUARDED);
		Optional<VariantResult> alternative = find(results, k, ALTERNATIVE);
		List<String> lines = new ArrayList<>();
		if (unguarded.isPresent() && guarded.isPresent()) {
			VariantResult u = unguarded.get();
			VariantResult g = guarded.get();
			lines.add("cpu-per-token-ratio" + suffix + "=" + format(ratio(g.cpuNanosPerToken(), u.cpuNanosPerToken()), 3));
		}
		if (guarded.isPresent() && alternative.isPresent()) {
			lines.add("alternative-cpu-per-token-ratio" + suffix + "="
					+ format(ratio(alternative.get().cpuNanosPerToken(), guarded.get().cpuNanosPerToken()), 3));
		}
		if (unguarded.isPresent() && guarded.isPresent()) {
			VariantResult u = unguarded.get();
			VariantResult g = guarded.get();
			lines.add("heap-per-stream-bytes" + suffix + "=" + format(g.heapBytesPerStream() - u.heapBytesPerStream(), 0));
			double separateP99 = g.ttftP99Ms() - u.ttftP99Ms();
			lines.add("ttft-p99-added-ms" + suffix + "=" + format(pair.map(PairedTtft::addedP99Ms).orElse(separateP99), 2));
			lines.add("ttft-p50-added-ms" + suffix + "="
					+ format(pair.map(PairedTtft::addedP50Ms).orElse(g.ttftP50Ms() - u.ttftP50Ms()), 2));
			if (pair.isPresent()) {
				lines.add("ttft-p99-added-ms-separate-passes" + suffix + "=" + format(separateP99, 2));
			}
		}
		return lines;
	}

	/** @return the largest K whose guarded run held K streams open and whose runs all completed every stream */
	static int streamsHeld(List<VariantResult> results) {
		int held = 0;
		for (int k : results.stream().mapToInt(VariantResult::k).distinct().toArray()) {
			boolean allComplete = results.stream().filter(r -> r.k() == k).allMatch(r -> r.failed() == 0);
			boolean open = find(results, k, GUARDED).map(r -> r.peakOpen() >= k).orElse(false);
			if (allComplete && open) {
				held = Math.max(held, k);
			}
		}
		return held;
	}

	/** @return {@code a / b}; {@code NaN} when {@code b} is zero or either is not a number */
	static double ratio(double a, double b) {
		return b == 0 || Double.isNaN(a) || Double.isNaN(b) ? Double.NaN : a / b;
	}

	/** @return the value with this many decimals (a dot, whatever the locale); {@code n/a} for {@code NaN} */
	static String format(double value, int decimals) {
		if (Double.isNaN(value) || Double.isInfinite(value)) {
			return "n/a";
		}
		return String.format(Locale.ROOT, "%." + decimals + "f", value);
	}

	private static Optional<VariantResult> find(List<VariantResult> results, int k, String variant) {
		return results.stream().filter(r -> r.k() == k && r.variant().equals(variant)).findFirst();
	}
}
