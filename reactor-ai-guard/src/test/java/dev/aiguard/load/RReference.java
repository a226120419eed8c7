package dev.aiguard.load;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The values R printed for {@code load/holt-winters-airpassengers.R}, read from
 * {@code load/airpassengers-reference.txt} (format described in the script).
 */
final class RReference {

	static final String RESOURCE = "/load/airpassengers-reference.txt";

	/** One {@code fitted()} row: the one-step prediction of x[t] and the state it came from. */
	record Fitted(int t, double xhat, double level, double trend, double season) {
	}

	/** One {@code case ... end} block. */
	record Case(String name, double[] series, double alpha, double beta, double gamma, boolean seasonal,
			int frequency, double a, double b, double[] s, double sse, List<Fitted> fitted, double[] predict) {

		@Override
		public String toString() {
			return name;
		}
	}

	private RReference() {
	}

	static Map<String, Case> cases() {
		InputStream in = Objects.requireNonNull(RReference.class.getResourceAsStream(RESOURCE), RESOURCE);
		Map<String, Case> cases = new LinkedHashMap<>();
		try (BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
			Map<String, String[]> fields = new LinkedHashMap<>();
			List<Fitted> fitted = new ArrayList<>();
			String name = null;
			for (String line = reader.readLine(); line != null; line = reader.readLine()) {
				if (line.isBlank() || line.startsWith("#")) {
					continue;
				}
				String[] tokens = line.trim().split(" ");
				switch (tokens[0]) {
					case "case" -> {
						name = tokens[1];
						fields.clear();
						fitted = new ArrayList<>();
					}
					case "fitted" -> {
						double[] v = numbers(tokens, 2);
						fitted.add(new Fitted(Integer.parseInt(tokens[1]), v[0], v[1], v[2], v.length > 3 ? v[3] : 0.0));
					}
					case "end" -> {
						cases.put(name, build(Objects.requireNonNull(name, "case before end"), fields, fitted));
						name = null;
					}
					default -> fields.put(tokens[0], tokens);
				}
			}
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
		return cases;
	}

	private static Case build(String name, Map<String, String[]> fields, List<Fitted> fitted) {
		String[] params = field(fields, "params");
		boolean seasonal = !"FALSE".equals(params[3]);
		return new Case(name, counted(field(fields, "series")), Double.parseDouble(params[1]),
				Double.parseDouble(params[2]), seasonal ? Double.parseDouble(params[3]) : Double.NaN, seasonal,
				Integer.parseInt(params[4]), numbers(field(fields, "a"), 1)[0], numbers(field(fields, "b"), 1)[0],
				seasonal ? numbers(field(fields, "s"), 1) : new double[0], numbers(field(fields, "sse"), 1)[0],
				List.copyOf(fitted), counted(field(fields, "predict")));
	}

	private static String[] field(Map<String, String[]> fields, String key) {
		return Objects.requireNonNull(fields.get(key), () -> "missing " + key);
	}

	/** A record whose first number is the count of the numbers that follow. */
	private static double[] counted(String[] tokens) {
		double[] values = numbers(tokens, 2);
		if (values.length != Integer.parseInt(tokens[1])) {
			throw new IllegalStateException(tokens[0] + ": expected " + tokens[1] + " values, read " + values.length);
		}
		return values;
	}

	private static double[] numbers(String[] tokens, int from) {
		double[] values = new double[tokens.length - from];
		for (int i = from; i < tokens.length; i++) {
			values[i - from] = Double.parseDouble(tokens[i]);
		}
		return values;
	}
}
