package dev.aiguard.boot.autoconfigure;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import dev.aiguard.load.LoadEvent;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.load.LoadState;
import org.jspecify.annotations.Nullable;

/**
 * A load governor's last decision as JSON-ready maps: the {@code load} section of the
 * {@code aiguard} Actuator endpoint, for views of one's own too. A number the governor has no
 * data for ({@code NaN}) is {@code null}.
 *
 * <pre>{@code
 * Map<String, Object> load = AiGuardLoadView.of(governor);   // level, mode, score, subScores, load, forecast...
 * }</pre>
 */
public final class AiGuardLoadView {

	private AiGuardLoadView() {
	}

	/**
	 * @param governor the governor to show
	 * @return its name, level, mode, score, sub-scores, load, request rate, forecast (request rates
	 *         for 1..horizon intervals ahead), forecast peak (share of capacity), decisions made and
	 *         the last level change
	 */
	public static Map<String, Object> of(LoadGovernor governor) {
		LoadState s = governor.state();
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("name", governor.name());
		m.put("level", s.level().name());
		m.put("mode", s.mode().name());
		m.put("score", number(s.score()));
		Map<String, Object> subScores = new LinkedHashMap<>();
		s.subScores().forEach((name, score) -> subScores.put(name, number(score)));
		m.put("subScores", subScores);
		m.put("load", number(s.load()));
		m.put("requestRate", number(s.requestRate()));
		List<Object> forecast = new ArrayList<>();
		for (double rate : s.forecast()) {
			forecast.add(number(rate));
		}
		m.put("forecast", forecast);
		m.put("forecastPeak", number(s.forecastPeak()));
		m.put("intervals", s.intervals());
		LoadEvent change = s.lastChange();
		m.put("lastChange", change == null ? null : change(change));
		return m;
	}

	private static Map<String, Object> change(LoadEvent e) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("from", e.from().name());
		m.put("to", e.to().name());
		m.put("reason", e.reason().name());
		m.put("detail", e.detail());
		return m;
	}

	private static @Nullable Double number(double value) {
		return Double.isFinite(value) ? value : null;
	}
}
