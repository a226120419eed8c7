package dev.aiguard;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.stage.AnswerSource;
import dev.aiguard.stage.Degradation;
import dev.aiguard.stage.Lane;
import dev.aiguard.stage.Refusal;
import dev.aiguard.stage.RequestPort;
import dev.aiguard.stage.StageEvent;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * One request as its stages see it: what they may read of it, and the decisions they hand back,
 * which its {@link GuardedStream} carries out and its {@link RequestLedger} books. Made only for a
 * request whose policy has stages.
 */
final class StagePort<T> implements RequestPort {

	private final GuardedStream<T> s;

	StagePort(GuardedStream<T> stream) {
		this.s = stream;
	}

	@Override
	public void proceed() {
		s.proceed();
	}

	@Override
	public void refuse(Refusal kind, Throwable reason) {
		s.refuse(kind, reason);
	}

	@Override
	public boolean hasLadder(Degradation degradation) {
		AnswerSource source = s.answerSource();
		return source != null && source.answersFirst(degradation);
	}

	@Override
	public void walkFirst(Degradation degradation, Throwable cause, @Nullable Throwable shedOtherwise) {
		s.recovery().walkFirst(degradation, cause, shedOtherwise);
	}

	@Override
	public void admitted(Lane lane) {
		s.lane = lane;
		s.ledger.observeAdmitted();
	}

	@Override
	public void preempted(Throwable reason) {
		s.preempted(reason);
	}

	@Override
	public void attemptAfter(long delayNanos) {
		s.attemptAfter(delayNanos);
	}

	@Override
	public void attemptNow() {
		s.nextAttempt();
	}

	@Override
	public void promptShortened(ChatRequest shorter, int tokensDropped) {
		s.request = shorter;
		RecoverySteps<T> steps = s.recovery;
		if (steps != null) {
			steps.rebase(shorter);
		}
		s.ledger.promptTruncated(tokensDropped);
	}

	@Override
	public void observe(StageEvent event) {
		switch (event) {
			case QUEUED -> s.ledger.observeQueued();
			case BREAKER_PERMITTED -> s.ledger.observeBreaker(true);
			case BREAKER_REFUSED -> s.ledger.observeBreaker(false);
		}
	}

	@Override
	public void spent(long promptTokens, long completionTokens, long costNanos, boolean wasted) {
		s.ledger.spent(promptTokens, completionTokens, costNanos, wasted);
	}

	@Override
	public void outputCapped() {
		s.ledger.outputCapped();
	}

	@Override
	public void sourceChosen(Source source) {
		s.ledger.sourceChosen(source);
	}

	@Override
	public Scheduler blockingScheduler() {
		return s.blockingScheduler();
	}

	@Override
	public Scheduler timer() {
		return s.ledger.clock.scheduler();
	}

	@Override
	public Priority priority() {
		return s.ledger.priority;
	}

	@Override
	public Context context() {
		return s.actual.currentContext();
	}

	@Override
	@Nullable
	public ChatRequest request() {
		return s.request;
	}

	@Override
	@Nullable
	public ChatRequest original() {
		return s.originalRequest;
	}

	@Override
	public int attemptsStarted() {
		return s.realtimeAttempts;
	}

	@Override
	public long nanos() {
		return s.ledger.clock.nanos();
	}

	@Override
	public boolean cancelled() {
		return s.cancelled != 0;
	}
}
