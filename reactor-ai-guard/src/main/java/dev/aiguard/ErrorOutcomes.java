package dev.aiguard;

import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StreamStalledException;

/** The default mapping from an upstream error to an {@link Outcome}. */
final class ErrorOutcomes {

	private ErrorOutcomes() {
	}

	static Outcome classify(Throwable error) {
		if (error instanceof StreamStalledException) {
			return Outcome.STALLED;
		}
		if (error instanceof IncompleteStreamException) {
			return Outcome.INCOMPLETE;
		}
		return Outcome.FAILURE;
	}
}
