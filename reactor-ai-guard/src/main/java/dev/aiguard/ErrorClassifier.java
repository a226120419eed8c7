package dev.aiguard;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.validation.InvalidOutputException;
import org.jspecify.annotations.Nullable;
import reactor.core.Exceptions;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * The policy's default error classifier: the {@link Outcome} the breaker and metrics record for
 * an attempt that ended with an error. It lives beside the policy because it knows the errors of
 * every feature package (provider, stall, breaker, admission), which know nothing of each other.
 *
 * <pre>{@code
 * GuardPolicy.builder("chat")
 *     .errorClassifier(e -> e instanceof MyQuotaException ? Outcome.CLIENT_ERROR : ErrorClassifier.outcomeOf(e))
 *     .build();
 * }</pre>
 */
public final class ErrorClassifier {

	private ErrorClassifier() {
	}

	/**
	 * Per the outcome table: context length and other client errors are
	 * {@link Outcome#CLIENT_ERROR}; stalls {@link Outcome#STALLED}; a missing terminal marker
	 * {@link Outcome#INCOMPLETE}; an answer an output validator rejected {@link Outcome#INVALID}; an open breaker or refused admission {@link Outcome#REJECTED};
	 * server errors, rate limits, overload, transport and in-band errors, and anything else,
	 * {@link Outcome#FAILURE}.
	 */
	public static Outcome outcomeOf(Throwable error) {
		Throwable e = Exceptions.unwrap(Objects.requireNonNull(error, "error"));
		if (e instanceof ContextLengthExceededException || e instanceof ProviderClientException) {
			return Outcome.CLIENT_ERROR;
		}
		if (e instanceof StreamStalledException) {
			return Outcome.STALLED;
		}
		if (e instanceof IncompleteStreamException) {
			return Outcome.INCOMPLETE;
		}
		if (e instanceof InvalidOutputException) {
			return Outcome.INVALID;
		}
		if (e instanceof BreakerOpenException || e instanceof AdmissionRejectedException) {
			return Outcome.REJECTED;
		}
		return Outcome.FAILURE;
	}

	/**
	 * The outcome of an attempt: its end says it, except for an error, which the policy's
	 * classifier judges. A classifier that throws or answers {@code null} yields
	 * {@link Outcome#FAILURE} (what it threw goes to {@code Hooks.onErrorDropped}); a preemption or a
	 * refused admission (a lane thread not free in time) is {@link Outcome#REJECTED} whatever the
	 * classifier says — the provider did nothing wrong — and
	 * an output validator's verdict is {@link Outcome#INVALID}, which the guard decided itself.
	 */
	static Outcome ofAttempt(StallWatch.End end, @Nullable Throwable error, Function<Throwable, Outcome> classifier,
			Context context) {
		switch (end) {
			case COMPLETED:
				return Outcome.SUCCESS;
			case CANCELLED:
				return Outcome.CANCELLED;
			case STALLED:
				return Outcome.STALLED;
			case INCOMPLETE:
				return Outcome.INCOMPLETE;
			default:
				if (error instanceof PreemptedException || error instanceof AdmissionRejectedException) {
					return Outcome.REJECTED;
				}
				if (error instanceof InvalidOutputException) {
					return Outcome.INVALID;
				}
				try {
					Outcome o = classifier.apply(error);
					return o != null ? o : Outcome.FAILURE;
				}
				catch (Throwable classifierFailure) {
					Operators.onErrorDropped(classifierFailure, context);
					return Outcome.FAILURE;
				}
		}
	}

	/** @return whether {@code error} is a lane's preemption: the request stops, whatever it was doing */
	/** @return the validator that rejected the answer when {@code error} is an output validator's rejection, else {@code null} */
	@Nullable
	static String rejectingValidator(@Nullable Throwable error) {
		return error instanceof InvalidOutputException ? ((InvalidOutputException) error).validator() : null;
	}

	static boolean isPreemption(@org.jspecify.annotations.Nullable Throwable error) {
		return error instanceof PreemptedException;
	}

	/**
	 * @return why an attempt whose wait for a lane thread ran out never called its upstream: the
	 *         lane's {@code WAIT_TIMEOUT}, like a queue wait that ran out
	 */
	static RuntimeException laneThreadTimeout(Priority priority, long waitedNanos) {
		return new AdmissionRejectedException(priority, AdmissionRejectedException.Reason.WAIT_TIMEOUT,
				"no thread was free for the blocking upstream of a " + priority + " request within "
						+ Duration.ofNanos(waitedNanos));
	}
}
