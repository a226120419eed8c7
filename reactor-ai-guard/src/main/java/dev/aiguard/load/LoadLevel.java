package dev.aiguard.load;

/**
 * How loaded the service is, least severe first: the ordinal is the severity, so levels compare
 * with {@code compareTo}.
 */
public enum LoadLevel {
	/** Health score at least 80 and load under the degrade line: every priority is served live. */
	HEALTHY,
	/** Health score at least 60, or an overload forecast: the least urgent work gets cheaper. */
	WARNING,
	/** Health score at least 40, or load past capacity: the least urgent work is shed. */
	DEGRADED,
	/** Health score under 40: only the most urgent work is served live. */
	CRITICAL;

	/** @return whether this level is more severe than {@code other} */
	public boolean isWorseThan(LoadLevel other) {
		return compareTo(other) > 0;
	}
}
