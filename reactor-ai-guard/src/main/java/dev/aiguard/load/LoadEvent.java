package dev.aiguard.load;

import java.util.Objects;

/**
 * One level change of a {@link LoadGovernor}, with what caused it. Immutable.
 *
 * <pre>{@code
 * governor.state().lastChange(); // e.g. WARNING -> DEGRADED (SCORE: error-rate=35.0)
 * }</pre>
 */
public final class LoadEvent {

	/** What moved the level. */
	public enum Reason {
		/** The health score fell under a level's threshold. */
		SCORE,
		/** The offered load (request rate ÷ capacity) crossed a level's threshold. */
		LOAD,
		/** The forecast request rate reaches the overload line within the horizon. */
		FORECAST,
		/** Every input allowed the next better level after the dwell time. */
		RECOVERY,
		/** {@link LoadGovernor#hold(LoadLevel)} pinned the level. */
		HOLD,
		/** A hold was released: the decisions move the level again, from the held one. */
		RELEASE,
		/** {@link LoadGovernor#reset()} forgot what was measured and returned the level to HEALTHY (unless held). */
		RESET
	}

	private final LoadLevel from;
	private final LoadLevel to;
	private final Reason reason;
	private final String detail;
	private final double score;
	private final double load;
	private final double forecastPeak;
	private final long atNanos;

	LoadEvent(LoadLevel from, LoadLevel to, Reason reason, String detail, double score, double load,
			double forecastPeak, long atNanos) {
		this.from = Objects.requireNonNull(from, "from");
		this.to = Objects.requireNonNull(to, "to");
		this.reason = Objects.requireNonNull(reason, "reason");
		this.detail = Objects.requireNonNull(detail, "detail");
		this.score = score;
		this.load = load;
		this.forecastPeak = forecastPeak;
		this.atNanos = atNanos;
	}

	/** @return the level left */
	public LoadLevel from() {
		return from;
	}

	/** @return the level entered */
	public LoadLevel to() {
		return to;
	}

	/** @return what moved the level */
	public Reason reason() {
		return reason;
	}

	/**
	 * @return the input behind the change, e.g. {@code "error-rate=35.0"} (the lowest sub-score),
	 *         {@code "load 1.12 of capacity"}, {@code "forecast peak 0.91 of capacity in 3 intervals"}
	 */
	public String detail() {
		return detail;
	}

	/** @return the health score at the decision (NaN when no signal had data) */
	public double score() {
		return score;
	}

	/** @return the offered load at the decision (request rate ÷ capacity) */
	public double load() {
		return load;
	}

	/** @return the forecast peak ÷ capacity at the decision */
	public double forecastPeak() {
		return forecastPeak;
	}

	/** @return the governor's clock, in nanoseconds, when the change was decided */
	public long atNanos() {
		return atNanos;
	}

	@Override
	public String toString() {
		return from + " -> " + to + " (" + reason + ": " + detail + ')';
	}
}
