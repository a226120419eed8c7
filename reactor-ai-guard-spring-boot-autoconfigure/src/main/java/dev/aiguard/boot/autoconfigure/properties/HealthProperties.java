package dev.aiguard.boot.autoconfigure.properties;
/**
 * The {@code aiguardBreakers} health contributor, {@code aiguard.health}: one indicator per breaker.
 *
 * <pre>
 * aiguard:
 *   health: { open-status: OUT_OF_SERVICE }
 * </pre>
 */
public class HealthProperties {

	/**
	 * The health status of an OPEN or FORCED_OPEN breaker. UP keeps the instance in the load
	 * balancer through a model outage (the fallbacks still answer, and a restart would not heal
	 * the provider); set DOWN or OUT_OF_SERVICE to take it out.
	 */
	private String openStatus = "UP";

	/** The health status of a HALF_OPEN breaker. */
	private String halfOpenStatus = "UP";

	public String getOpenStatus() {
		return openStatus;
	}

	public void setOpenStatus(String openStatus) {
		this.openStatus = openStatus;
	}

	public String getHalfOpenStatus() {
		return halfOpenStatus;
	}

	public void setHalfOpenStatus(String halfOpenStatus) {
		this.halfOpenStatus = halfOpenStatus;
	}
}
