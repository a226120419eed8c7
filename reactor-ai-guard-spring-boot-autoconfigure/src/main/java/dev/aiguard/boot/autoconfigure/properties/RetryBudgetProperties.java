package dev.aiguard.boot.autoconfigure.properties;

import java.time.Duration;

/**
 * The retry budget shared by the policies that ask for it ({@code retry.budget: true}),
 * {@code aiguard.retry-budget}.
 *
 * <pre>
 * aiguard:
 *   retry-budget: { ratio: 0.2, min-retries-per-second: 5, window: 10s }
 * </pre>
 */
public class RetryBudgetProperties {

	/** Retries allowed per request in the window, 0..1. Default: 0.1. */
	private double ratio = 0.1;

	/** Retries always allowed per second, whatever the ratio. Default: 10. */
	private int minRetriesPerSecond = 10;

	/** How far back requests and retries are counted. Default: 10s. */
	private Duration window = Duration.ofSeconds(10);

	public double getRatio() {
		return ratio;
	}

	public void setRatio(double ratio) {
		this.ratio = ratio;
	}

	public int getMinRetriesPerSecond() {
		return minRetriesPerSecond;
	}

	public void setMinRetriesPerSecond(int minRetriesPerSecond) {
		this.minRetriesPerSecond = minRetriesPerSecond;
	}

	public Duration getWindow() {
		return window;
	}

	public void setWindow(Duration window) {
		this.window = window;
	}
}
