package dev.aiguard.internal;

import reactor.core.Exceptions;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * The library's one rule for callbacks that only observe (meters, listeners, trip-policy hooks)
 * and throw: the throw goes to {@code Hooks.onErrorDropped} and never changes an outcome, a permit
 * or a stream. A JVM-fatal error still propagates.
 */
public final class Callbacks {

	private Callbacks() {
	}

	/** Reports what an observer threw, the same way everywhere. */
	public static void dropped(Throwable observerFailure) {
		dropped(observerFailure, Context.empty());
	}

	/** As {@link #dropped(Throwable)}, with the subscriber's context (its local dropped-error hook applies). */
	public static void dropped(Throwable observerFailure, Context context) {
		Exceptions.throwIfJvmFatal(observerFailure);
		Operators.onErrorDropped(observerFailure, context);
	}
}
