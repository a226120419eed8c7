package dev.aiguard.boot.autoconfigure.properties;
/**
 * Recent reports shown by the {@code aiguard} Actuator endpoint, {@code aiguard.reports}.
 *
 * <pre>
 * aiguard:
 *   reports: { recent: 100 }
 * </pre>
 */
public class ReportsProperties {

	/** How many of the most recent reports (all policies together) are kept, 1 to 10000. */
	private int recent = 50;

	public int getRecent() {
		return recent;
	}

	public void setRecent(int recent) {
		this.recent = recent;
	}
}
