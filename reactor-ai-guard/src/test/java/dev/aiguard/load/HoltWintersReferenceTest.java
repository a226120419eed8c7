package dev.aiguard.load;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import dev.aiguard.load.RReference.Case;
import dev.aiguard.load.RReference.Fitted;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link HoltWinters} and {@link Holt} against the values R 4.2 printed for
 * {@code src/test/resources/load/holt-winters-airpassengers.R} (AirPassengers, fixed parameters),
 * to 1e-9 relative. R is not needed: the series and R's results are in the fixture.
 */
class HoltWintersReferenceTest {

	static final double RELATIVE = 1e-9;
	static final Map<String, Case> CASES = RReference.cases();

	static Stream<Case> seasonalCases() {
		return CASES.values().stream().filter(Case::seasonal);
	}

	static Case holtCase() {
		return CASES.get("airpassengers-holt");
	}

	@Test
	void fixtureHoldsTheExpectedCases() {
		assertThat(CASES).containsKeys("airpassengers-additive", "airpassengers-holt",
				"airpassengers-first84-weekly", "airpassengers-first24-additive");
		Case air = CASES.get("airpassengers-additive");
		assertThat(air.series()).hasSize(144).startsWith(112, 118, 132).endsWith(390, 432);
		assertThat(air.frequency()).isEqualTo(12);
		assertThat(air.s()).hasSize(12);
		assertThat(air.predict()).hasSize(5);
		assertThat(holtCase().seasonal()).isFalse();
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("seasonalCases")
	void coefficientsAndSseMatchR(Case c) {
		HoltWinters hw = fed(c, c.series().length);

		assertThat(hw.ready()).isTrue();
		assertClose(hw.level(), c.a(), "a");
		assertClose(hw.trend(), c.b(), "b");
		for (int i = 1; i <= c.frequency(); i++) {
			assertClose(hw.season(i), c.s()[i - 1], "s" + i);
		}
		assertClose(hw.sse(), c.sse(), "SSE");
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("seasonalCases")
	void everySmoothingStepMatchesRsFittedRows(Case c) {
		Map<Long, double[]> steps = new HashMap<>();
		HoltWinters hw = HoltWinters.additive(c.alpha(), c.beta(), c.gamma(), c.frequency())
				.onStep((t, xhat, level, trend, season) -> steps.put(t, new double[] { xhat, level, trend, season }));
		for (double x : c.series()) {
			hw.observe(x);
		}

		// R smooths from time f + 1, the start window's second season included
		assertThat(steps.keySet()).hasSize(c.series().length - c.frequency());
		assertThat(steps).containsKey((long) c.frequency() + 1).doesNotContainKey((long) c.frequency());
		for (Fitted row : c.fitted()) {
			double[] step = steps.get((long) row.t());
			assertThat(step).as("step at t=%d", row.t()).isNotNull();
			assertClose(step[0], row.xhat(), "xhat at t=" + row.t());
			assertClose(step[1], row.level(), "level at t=" + row.t());
			assertClose(step[2], row.trend(), "trend at t=" + row.t());
			assertClose(step[3], row.season(), "season at t=" + row.t());
		}
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("seasonalCases")
	void stateAfterTheStartMatchesRsFittedRowsOnline(Case c) {
		List<Fitted> online = c.fitted().stream().filter(row -> row.t() > 2 * c.frequency()).toList();
		for (Fitted row : online) {
			// fitted row t is the state after t - 1 values, predicting x[t]
			HoltWinters hw = fed(c, row.t() - 1);
			assertClose(hw.forecast(1), row.xhat(), "xhat at t=" + row.t());
			assertClose(hw.level(), row.level(), "level at t=" + row.t());
			assertClose(hw.trend(), row.trend(), "trend at t=" + row.t());
			assertClose(hw.season(1), row.season(), "season at t=" + row.t());
		}
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("seasonalCases")
	void forecastsMatchRsPredict(Case c) {
		HoltWinters hw = fed(c, c.series().length);
		for (int k = 1; k <= c.predict().length; k++) {
			assertClose(hw.forecast(k), c.predict()[k - 1], "predict " + k);
		}
	}

	@Test
	void holtMatchesRWithoutSeason() {
		Case c = holtCase();
		Holt holt = Holt.of(c.alpha(), c.beta());
		for (double x : c.series()) {
			holt.observe(x);
		}
		assertClose(holt.level(), c.a(), "a");
		assertClose(holt.trend(), c.b(), "b");
		assertClose(holt.sse(), c.sse(), "SSE");
		for (int k = 1; k <= c.predict().length; k++) {
			assertClose(holt.forecast(k), c.predict()[k - 1], "predict " + k);
		}
	}

	@Test
	void holtFittedRowsMatchR() {
		Case c = holtCase();
		assertThat(c.fitted()).isNotEmpty();
		for (Fitted row : c.fitted()) {
			Holt holt = Holt.of(c.alpha(), c.beta());
			for (int i = 0; i < row.t() - 1; i++) {
				holt.observe(c.series()[i]);
			}
			assertClose(holt.forecast(1), row.xhat(), "xhat at t=" + row.t());
			assertClose(holt.level(), row.level(), "level at t=" + row.t());
			assertClose(holt.trend(), row.trend(), "trend at t=" + row.t());
		}
	}

	private static HoltWinters fed(Case c, int values) {
		HoltWinters hw = HoltWinters.additive(c.alpha(), c.beta(), c.gamma(), c.frequency());
		for (int i = 0; i < values; i++) {
			hw.observe(c.series()[i]);
		}
		return hw;
	}

	static void assertClose(double actual, double expected, String what) {
		double tolerance = RELATIVE * Math.abs(expected);
		assertThat(Math.abs(actual - expected))
				.as("%s: %s vs R's %s", what, actual, expected)
				.isLessThanOrEqualTo(tolerance);
	}
}
