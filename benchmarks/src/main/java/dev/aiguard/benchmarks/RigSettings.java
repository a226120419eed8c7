package dev.aiguard.benchmarks;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/** The load rig's command line (see {@link LoadRig#main}). */
record RigSettings(int[] ks, int[] tokensPerK, long firstMs, long[] intervalsMs, int windowSeconds, int warmupSeconds,
		int rounds,
		List<String> variants, String serverHeap, List<String> serverOptions, boolean histogram, boolean paired,
		int jitQuietMaxSeconds) {

	static RigSettings parse(String[] args) {
		Map<String, String> options = new LinkedHashMap<>();
		for (String arg : args) {
			int eq = arg.indexOf('=');
			if (!arg.startsWith("--") || eq < 0) {
				throw new IllegalArgumentException("arguments are --name=value, was '" + arg + "'");
			}
			options.put(arg.substring(2, eq), arg.substring(eq + 1));
		}
		int[] ks = ints(options.remove("k"), "1000,5000,10000", "k", 1, 20_000);
		// by default the whole run streams about 25 000 tokens a second, what leaves the two cores
		// of the project's machines headroom with the server on the same machine: 40 ms between
		// tokens up to K = 1000 (100-token answers), proportionally slower above (answers of
		// 8 s, at least 20 tokens), so a pass stays within seconds
		String defaultIntervals = Arrays.stream(ks).mapToObj(k -> String.valueOf(defaultIntervalMs(k)))
			.reduce((a, b) -> a + "," + b).orElseThrow();
		String defaultTokens = Arrays.stream(ks)
			.mapToObj(k -> String.valueOf(k <= 1000 ? 100 : Math.max(20, 8000 / defaultIntervalMs(k))))
			.reduce((a, b) -> a + "," + b).orElseThrow();
		int[] tokens = ints(options.remove("tokens"), defaultTokens, "tokens", 1, 1000);
		long first = ints(options.remove("first-ms"), "20", "first-ms", 0, 10_000)[0];
		long[] intervals = Arrays.stream(ints(options.remove("interval-ms"), defaultIntervals, "interval-ms", 1, 10_000))
			.asLongStream().toArray();
		perK("interval-ms", intervals.length, ks.length);
		perK("tokens", tokens.length, ks.length);
		int window = ints(options.remove("window-s"), "6", "window-s", 1, 300)[0];
		int warmup = ints(options.remove("warmup-s"), "2", "warmup-s", 1, 300)[0];
		int rounds = ints(options.remove("rounds"), "2", "rounds", 1, 10)[0];
		List<String> variants = List.of(options.getOrDefault("variants",
				RigReport.UNGUARDED + "," + RigReport.GUARDED + "," + RigReport.ALTERNATIVE).split(","));
		options.remove("variants");
		String serverHeap = options.getOrDefault("server-heap", "1g");
		options.remove("server-heap");
		String serverOptions = options.getOrDefault("server-opts", "").trim();
		options.remove("server-opts");
		boolean histogram = Boolean.parseBoolean(options.getOrDefault("histogram", "false"));
		options.remove("histogram");
		boolean paired = Boolean.parseBoolean(options.getOrDefault("paired", "true"));
		options.remove("paired");
		int jitQuietMax = ints(options.remove("jit-quiet-max-s"), "12", "jit-quiet-max-s", 0, 600)[0];
		if (!options.isEmpty()) {
			throw new IllegalArgumentException("unknown options: " + options.keySet());
		}
		return new RigSettings(ks, tokens, first, intervals, window, warmup, rounds, variants, serverHeap,
				serverOptions.isEmpty() ? List.of() : List.of(serverOptions.split("\\s+")), histogram, paired,
				jitQuietMax);
	}

	int largestK() {
		return Arrays.stream(ks).max().orElseThrow();
	}

	private static int defaultIntervalMs(int k) {
		return Math.max(40, k / 25);
	}

	long intervalMs(int index) {
		return intervalsMs.length == 1 ? intervalsMs[0] : intervalsMs[index];
	}

	int tokens(int index) {
		return tokensPerK.length == 1 ? tokensPerK[0] : tokensPerK[index];
	}

	/** A per-K setting has one value for all K, or one per K. */
	private static void perK(String name, int values, int ks) {
		if (values != 1 && values != ks) {
			throw new IllegalArgumentException("--" + name + ": one value or one per K (" + ks + "), was " + values);
		}
	}

	private static int[] ints(@Nullable String value, String otherwise, String name, int min, int max) {
		String text = value == null ? otherwise : value;
		int[] parsed;
		try {
			parsed = Arrays.stream(text.split(",")).map(String::trim).mapToInt(Integer::parseInt).toArray();
		}
		catch (NumberFormatException e) {
			throw new IllegalArgumentException("--" + name + " must be whole numbers, was '" + text + "'", e);
		}
		for (int p : parsed) {
			if (p < min || p > max) {
				throw new IllegalArgumentException("--" + name + " must be between " + min + " and " + max
						+ ", was " + p);
			}
		}
		return parsed;
	}

	@Override
	public String toString() {
		return "k=" + Arrays.toString(ks) + " tokens=" + Arrays.toString(tokensPerK) + " first-ms=" + firstMs + " interval-ms="
				+ Arrays.toString(intervalsMs) + " window-s=" + windowSeconds + " warmup-s=" + warmupSeconds + " rounds=" + rounds
				+ " variants=" + variants + " paired=" + paired + " jit-quiet-max-s=" + jitQuietMaxSeconds + " cores=" + Runtime.getRuntime().availableProcessors() + " max-heap="
				+ Runtime.getRuntime().maxMemory() / (1024 * 1024) + "m";
	}
}
