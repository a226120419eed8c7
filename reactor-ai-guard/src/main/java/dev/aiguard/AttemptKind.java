package dev.aiguard;

/**
 * What the attempt a request runs now is: a realtime call, a fallback answer, a notice, the
 * ladder's cheaper steps walked first because of the load, or a held answer released.
 */
enum AttemptKind {
	REALTIME, FALLBACK, NOTICE, PREFERRED,
	/** A realtime answer held back for validation is delivered, once it passed. */
	RELEASE
}
