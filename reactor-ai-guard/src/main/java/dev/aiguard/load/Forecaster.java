package dev.aiguard.load;

/**
 * A one-step-at-a-time forecaster of a series observed once per interval (request rate, queue
 * depth, ...). Mutable and not thread-safe: the governor feeds and reads it from its decision
 * loop only, one interval after the other.
 */
public interface Forecaster {

	/** Adds the value of the interval that just ended. */
	void observe(double value);

	/**
	 * @param stepsAhead intervals after the last observed one, at least 1
	 * @return the forecast value; before {@link #ready()} the last observation (0 when none)
	 * @throws IllegalArgumentException when {@code stepsAhead < 1}
	 */
	double forecast(int stepsAhead);

	/** @return whether enough values were observed for the model to forecast */
	boolean ready();

	/** @return values observed so far */
	long observations();
}
