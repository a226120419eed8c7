package dev.aiguard.stage;

/** How a stage refuses, which says what the request does next. */
public enum Refusal {

	/** The request is refused outright (shed by the load, an unknown tenant): it ends {@code REJECTED}, no fallback. */
	REJECTED,
	/** The request cannot be sent as it is (its prompt is too large): it ends {@code CLIENT_ERROR}. */
	BAD_REQUEST,
	/** No capacity for the request (the lanes refused): the fallback ladder for a rejection, or the error. */
	NO_CAPACITY,
	/** Over budget: the fallback ladder for a budget refusal, or the error. */
	OVER_BUDGET,
	/**
	 * This attempt may not be sent (breaker open, no room in the provider's budget for a retry): the
	 * last real error stands; the ladder for an open breaker, or a partial answer's failure.
	 */
	ATTEMPT
}
