package dev.aiguard.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The live objects of this JVM per class, as {@code jcmd <pid> GC.class_histogram} prints them
 * (which collects first), and the difference between two such histograms: where the retained
 * heap of the rig's open streams goes.
 *
 * @param classes instances and bytes per class name
 */
record ClassHistogram(Map<String, long[]> classes) {

	private static final Pattern ROW = Pattern.compile("^\\s*\\d+:\\s+(\\d+)\\s+(\\d+)\\s+(\\S+)");

	/** @return the histogram of this JVM now, taken with the JDK's {@code jcmd} */
	static ClassHistogram ofThisJvm() throws IOException, InterruptedException {
		String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
		Process p = new ProcessBuilder(jcmd, String.valueOf(ProcessHandle.current().pid()), "GC.class_histogram")
			.redirectErrorStream(true)
			.start();
		String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
		if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
			throw new IOException("jcmd GC.class_histogram failed: " + out.lines().findFirst().orElse(""));
		}
		return parse(out);
	}

	/** @return the rows of a {@code GC.class_histogram} listing; other lines are skipped */
	static ClassHistogram parse(String listing) {
		Map<String, long[]> classes = new HashMap<>();
		listing.lines().forEach(line -> {
			Matcher m = ROW.matcher(line);
			if (m.find()) {
				classes.put(m.group(3), new long[] { Long.parseLong(m.group(1)), Long.parseLong(m.group(2)) });
			}
		});
		return new ClassHistogram(classes);
	}

	/**
	 * @param earlier the histogram before
	 * @param perStreams divides the differences
	 * @param top rows kept
	 * @return the classes that grew most in bytes, as {@code bytes/stream instances/stream class}
	 */
	List<String> growthSince(ClassHistogram earlier, long perStreams, int top) {
		List<Map.Entry<String, long[]>> grown = new ArrayList<>();
		classes.forEach((name, now) -> {
			long[] before = earlier.classes.getOrDefault(name, new long[2]);
			grown.add(Map.entry(name, new long[] { now[0] - before[0], now[1] - before[1] }));
		});
		grown.sort((a, b) -> Long.compare(b.getValue()[1], a.getValue()[1]));
		List<String> rows = new ArrayList<>();
		for (Map.Entry<String, long[]> e : grown.subList(0, Math.min(top, grown.size()))) {
			rows.add(String.format(java.util.Locale.ROOT, "%8.1f B %6.2f x %s", (double) e.getValue()[1] / perStreams,
					(double) e.getValue()[0] / perStreams, e.getKey()));
		}
		return rows;
	}
}
