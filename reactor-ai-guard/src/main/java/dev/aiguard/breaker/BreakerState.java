package dev.aiguard.breaker;

/** States of a {@link CircuitBreaker}. */
public enum BreakerState {
	/** Calls flow; outcomes are recorded in the window. */
	CLOSED,
	/** Calls are refused until the open wait has passed. */
	OPEN,
	/** A limited number (or share) of probe calls decides whether to close or re-open. */
	HALF_OPEN,
	/** Refuses every call until an operator changes the state. */
	FORCED_OPEN,
	/** Permits every call and records nothing. */
	DISABLED
}
