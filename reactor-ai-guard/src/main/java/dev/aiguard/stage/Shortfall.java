package dev.aiguard.stage;

/** Why the live model gives the request no answer, as a stage that offers another source reads it. */
public enum Shortfall {

	/** The breaker refused the attempt (or a retry, or a continuation). */
	BREAKER_OPEN,
	/** No capacity: the lanes refused the request, or no lane thread was free in time. */
	REJECTED,
	/** A budget refused the request before anything was sent. */
	BUDGET,
	/** Every retry failed before the first token (or the retry budget was spent). */
	RETRIES_EXHAUSTED,
	/** The first-token deadline passed before any content arrived. */
	STALLED_BEFORE_FIRST_TOKEN,
	/** The request itself was refused. */
	CLIENT_ERROR,
	/** An output validator rejected the answer before any of it was delivered. */
	INVALID_OUTPUT
}
