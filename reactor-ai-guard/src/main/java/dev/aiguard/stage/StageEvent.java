package dev.aiguard.stage;

/** What a stage tells the request's observer of. */
public enum StageEvent {
	/** The request waits in its lane's queue. */
	QUEUED,
	/** The breaker let the attempt through. */
	BREAKER_PERMITTED,
	/** The breaker refused the attempt. */
	BREAKER_REFUSED
}
