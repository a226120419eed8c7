package dev.aiguard.breaker;

/**
 * The levels of a {@link BreakerTree}, from the widest to the narrowest. A call passes one breaker
 * of each level: the system's, its provider's and its model endpoint's.
 */
public enum BreakerLevel {
	/** Everything the application calls: trips when several providers fail together. */
	SYSTEM,
	/** One provider (an API, an account, a deployment region): trips when several of its endpoints fail together. */
	PROVIDER,
	/** One model endpoint on one provider: trips on its own calls, as a plain breaker does. */
	ENDPOINT
}
