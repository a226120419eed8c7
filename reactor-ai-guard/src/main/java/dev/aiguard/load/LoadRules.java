package dev.aiguard.load;

import java.util.Arrays;
import java.util.Objects;

import dev.aiguard.core.Priority;

/**
 * What each {@link LoadLevel} means for each {@link Priority}: the {@link LoadAction} a request of
 * that priority gets, and the factor applied to its lane's built concurrency when the governor
 * drives {@link dev.aiguard.admission.PriorityLanes}. Immutable: every {@code with...} returns a new
 * rule set, so one set can be a shared template.
 *
 * <p>The defaults:
 * <table>
 * <caption>LoadRules.defaults()</caption>
 * <tr><th>level</th><th>P0</th><th>P1</th><th>P2</th></tr>
 * <tr><td>HEALTHY</td><td>REALTIME ×1</td><td>REALTIME ×1</td><td>REALTIME ×1</td></tr>
 * <tr><td>WARNING</td><td>REALTIME ×1</td><td>REALTIME ×1</td><td>CHEAPER_FIRST ×0.5</td></tr>
 * <tr><td>DEGRADED</td><td>REALTIME ×1</td><td>FALLBACK_FIRST ×1</td><td>SHED ×0.5</td></tr>
 * <tr><td>CRITICAL</td><td>REALTIME ×1</td><td>STATIC_OR_SHED ×0</td><td>SHED ×0</td></tr>
 * </table>
 *
 * <pre>{@code
 * LoadRules rules = LoadRules.defaults()
 *     .withAction(LoadLevel.WARNING, Priority.P2, LoadAction.SHED)
 *     .withLaneFactor(LoadLevel.WARNING, Priority.P2, 0.25);
 * }</pre>
 */
public final class LoadRules {

	private static final LoadLevel[] LEVELS = LoadLevel.values();
	private static final Priority[] PRIORITIES = Priority.values();

	private static final LoadRules DEFAULTS = buildDefaults();

	/** [level][priority] */
	private final LoadAction[][] actions;
	/** [level][priority] */
	private final double[][] factors;

	private LoadRules(LoadAction[][] actions, double[][] factors) {
		this.actions = actions;
		this.factors = factors;
	}

	private static LoadRules buildDefaults() {
		LoadAction[][] actions = new LoadAction[LEVELS.length][PRIORITIES.length];
		double[][] factors = new double[LEVELS.length][PRIORITIES.length];
		for (LoadAction[] row : actions) {
			Arrays.fill(row, LoadAction.REALTIME);
		}
		for (double[] row : factors) {
			Arrays.fill(row, 1.0);
		}
		int p1 = Priority.P1.ordinal();
		int p2 = Priority.P2.ordinal();
		actions[LoadLevel.WARNING.ordinal()][p2] = LoadAction.CHEAPER_FIRST;
		factors[LoadLevel.WARNING.ordinal()][p2] = 0.5;
		actions[LoadLevel.DEGRADED.ordinal()][p1] = LoadAction.FALLBACK_FIRST;
		actions[LoadLevel.DEGRADED.ordinal()][p2] = LoadAction.SHED;
		factors[LoadLevel.DEGRADED.ordinal()][p2] = 0.5;
		actions[LoadLevel.CRITICAL.ordinal()][p1] = LoadAction.STATIC_OR_SHED;
		actions[LoadLevel.CRITICAL.ordinal()][p2] = LoadAction.SHED;
		factors[LoadLevel.CRITICAL.ordinal()][p1] = 0.0;
		factors[LoadLevel.CRITICAL.ordinal()][p2] = 0.0;
		return new LoadRules(actions, factors);
	}

	/** @return the default rules (table above) */
	public static LoadRules defaults() {
		return DEFAULTS;
	}

	/** @return how a request of {@code priority} is served at {@code level} */
	public LoadAction action(LoadLevel level, Priority priority) {
		return actions[level.ordinal()][priority.ordinal()];
	}

	/** @return the factor of the lane's built concurrency at {@code level}, in [0, 1] */
	public double laneFactor(LoadLevel level, Priority priority) {
		return factors[level.ordinal()][priority.ordinal()];
	}

	/** @return rules equal to these but for {@code action} at {@code level} for {@code priority} */
	public LoadRules withAction(LoadLevel level, Priority priority, LoadAction action) {
		Objects.requireNonNull(level, "level");
		Objects.requireNonNull(priority, "priority");
		Objects.requireNonNull(action, "action");
		LoadAction[][] copy = new LoadAction[LEVELS.length][];
		for (int i = 0; i < copy.length; i++) {
			copy[i] = actions[i].clone();
		}
		copy[level.ordinal()][priority.ordinal()] = action;
		return new LoadRules(copy, factors);
	}

	/**
	 * @param factor share of the lane's built concurrency, in [0, 1]; 0 closes the lane, any factor
	 *        above 0 leaves at least one permit
	 * @return rules equal to these but for the lane factor at {@code level} for {@code priority}
	 * @throws IllegalArgumentException naming the factor when it is outside [0, 1]
	 */
	public LoadRules withLaneFactor(LoadLevel level, Priority priority, double factor) {
		Objects.requireNonNull(level, "level");
		Objects.requireNonNull(priority, "priority");
		if (!(factor >= 0.0 && factor <= 1.0)) {
			throw new IllegalArgumentException("laneFactor for " + level + " " + priority + " must be in [0, 1], was " + factor);
		}
		double[][] copy = new double[LEVELS.length][];
		for (int i = 0; i < copy.length; i++) {
			copy[i] = factors[i].clone();
		}
		copy[level.ordinal()][priority.ordinal()] = factor;
		return new LoadRules(actions, copy);
	}

	/** @return the action table [level][priority], a fresh copy the governor keeps */
	LoadAction[][] actionTable() {
		LoadAction[][] copy = new LoadAction[LEVELS.length][];
		for (int i = 0; i < copy.length; i++) {
			copy[i] = actions[i].clone();
		}
		return copy;
	}

	/**
	 * @return the lane size for a lane built with {@code base} permits at {@code level}: 0 when the
	 *         factor is 0, else {@code max(1, ceil(base * factor))}
	 */
	int laneSize(LoadLevel level, Priority priority, int base) {
		double factor = laneFactor(level, priority);
		if (factor == 0.0) {
			return 0;
		}
		return Math.max(1, (int) Math.ceil(base * factor));
	}

	@Override
	public boolean equals(Object o) {
		if (this == o) {
			return true;
		}
		if (!(o instanceof LoadRules)) {
			return false;
		}
		LoadRules other = (LoadRules) o;
		return Arrays.deepEquals(actions, other.actions) && Arrays.deepEquals(factors, other.factors);
	}

	@Override
	public int hashCode() {
		return 31 * Arrays.deepHashCode(actions) + Arrays.deepHashCode(factors);
	}

	@Override
	public String toString() {
		StringBuilder sb = new StringBuilder("LoadRules{");
		for (LoadLevel level : LEVELS) {
			sb.append(level).append('=');
			for (Priority p : PRIORITIES) {
				sb.append(p).append(':').append(action(level, p)).append('x').append(laneFactor(level, p))
						.append(p.ordinal() < PRIORITIES.length - 1 ? " " : "");
			}
			sb.append(level.ordinal() < LEVELS.length - 1 ? ", " : "}");
		}
		return sb.toString();
	}
}
