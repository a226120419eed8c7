package dev.aiguard.breaker;

/**
 * A breaker refused a call. Created without a stack trace: refusing is the cheap, expected path
 * while a breaker is open.
 */
public class BreakerOpenException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final String breakerName;
	private final BreakerState state;

	public BreakerOpenException(String breakerName, BreakerState state) {
		super("circuit breaker '" + breakerName + "' is " + state + " and refused the call", null, false, false);
		this.breakerName = breakerName;
		this.state = state;
	}

	/** @return the name of the breaker that refused */
	public String breakerName() {
		return breakerName;
	}

	/** @return the breaker's state when it refused */
	public BreakerState state() {
		return state;
	}
}
