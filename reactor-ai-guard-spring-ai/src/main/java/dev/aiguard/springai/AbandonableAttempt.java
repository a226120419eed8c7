package dev.aiguard.springai;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.Consumer;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;

/**
 * One attempt the guard may give up on (a deadline, a preemption, the user's cancel) while the
 * model still works on it. Spring AI's OpenAI model cannot stop a blocked read: the HTTP call ends
 * later, when the client's read timeout ends it, and signals what it ended with to nobody. Reactor
 * would hand that late error to {@code Operators.onErrorDropped}, which logs it at ERROR with its
 * stack trace. An attempt that was {@linkplain #abandon() abandoned} instead ends quietly: its late
 * answer or error is only logged at DEBUG, scrubbed of credentials. One CAS decides whether the
 * attempt ended or was abandoned first.
 *
 * <pre>{@code
 * AbandonableAttempt attempt = new AbandonableAttempt(secrets);
 * Mono.fromCallable(() -> attempt.run(blockingCall)).subscribeOn(scheduler).doOnCancel(attempt::abandon);
 * flux.doOnCancel(attempt::abandon).onErrorResume(attempt::afterAbandoned);
 * }</pre>
 */
final class AbandonableAttempt {

	private static final Log LOG = LogFactory.getLog(AiGuardAdvisor.class);

	private static final int RUNNING = 0;
	private static final int ENDED = 1;
	private static final int ABANDONED = 2;

	private static final AtomicIntegerFieldUpdater<AbandonableAttempt> STATE = AtomicIntegerFieldUpdater
		.newUpdater(AbandonableAttempt.class, "state");

	private final String[] secrets;
	private volatile int state;

	AbandonableAttempt(String[] secrets) {
		this.secrets = secrets;
	}

	/**
	 * Runs a blocking call of the attempt.
	 *
	 * @return the call's answer, or {@code null} (nothing) when the attempt was abandoned first
	 * @throws RuntimeException what the call threw, unless the attempt was abandoned first
	 */
	<T> @Nullable T run(Supplier<T> call) {
		T answer;
		try {
			answer = call.get();
		}
		catch (RuntimeException e) {
			if (STATE.compareAndSet(this, RUNNING, ENDED)) {
				throw e;
			}
			quietly(e);
			return null;
		}
		return STATE.compareAndSet(this, RUNNING, ENDED) ? answer : null;
	}

	/** The guard gave up on the attempt: whatever it ends with from now on is not signalled. */
	void abandon() {
		STATE.compareAndSet(this, RUNNING, ABANDONED);
	}

	/** @return nothing for an error that arrives after {@link #abandon()}, else the error */
	<T> Mono<T> afterAbandoned(Throwable error) {
		if (state == ABANDONED) {
			quietly(error);
			return Mono.empty();
		}
		return Mono.error(error);
	}

	private void quietly(Throwable error) {
		droppedQuietly(error, secrets);
	}

	/**
	 * The Reactor {@code Context} key of a subscriber-scoped {@code onErrorDropped} hook, which
	 * {@code Operators.onErrorDropped(error, context)} consults before the global hook
	 * ({@code Hooks.KEY_ON_ERROR_DROPPED}, package-private in reactor-core).
	 */
	static final String ON_ERROR_DROPPED = "reactor.onErrorDropped.local";

	/**
	 * @return the context with a hook that logs errors dropped inside one guarded request at DEBUG:
	 *         a late error of the model racing the guard's cancel (the guard has already ended the
	 *         attempt when it arrives) is expected there, and no reason for an ERROR with a stack trace
	 */
	static Context quietDrops(Context context, String[] secrets) {
		Consumer<Throwable> hook = e -> droppedQuietly(e, secrets);
		return context.put(ON_ERROR_DROPPED, hook);
	}

	private static void droppedQuietly(Throwable error, String[] secrets) {
		if (LOG.isDebugEnabled()) {
			LOG.debug("an abandoned attempt ended with " + ScrubbedErrors.scrub(error, secrets) + " (nobody waits for it)");
		}
	}
}
