package dev.aiguard;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.OutputLimits;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.internal.Callbacks;
import dev.aiguard.internal.TimeSource;
import dev.aiguard.metrics.GuardObserver;
import dev.aiguard.metrics.RequestObserver;
import dev.aiguard.stage.AttemptEnd;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.stall.StreamStalledException;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * The books of one guarded request: what each attempt delivered and how it ended, the tokens the
 * user saw, the answer's source, and at the end the one {@link GuardReport} and the request-level
 * meters. Written by the coordinator's control steps, which run one after another; the fields a
 * cancel may read concurrently are volatile.
 *
 * <p>It also shows the stages how the last realtime attempt ended ({@link AttemptRecord}).
 */
final class RequestLedger<T> {

	final GuardPolicy policy;
	private final Context context;
	private final ChunkInspector<T> inspector;
	/** The policy's timer and its clock: deadlines, backoff waits and every duration in the report. */
	final TimeSource clock;
	@Nullable
	final GuardSignals signals;
	Priority priority;
	private final long requestStart;

	/** Created at the first attempt a report will read; copy-on-write because cancel may race a read. */
	@Nullable
	private volatile List<GuardReport.Attempt> attempts;
	private volatile long deliveredTokens;
	private volatile long firstTokenAt = -1L;
	private long wastedTokens;
	private volatile Source source = Source.REALTIME;
	/** Set once when the request starts, before the subscriber can cancel; NOOP when nobody observes. */
	private RequestObserver observer = RequestObserver.NOOP;
	private int attemptsEnded;

	/** The budget's output cap in content chunks, 0 when none; read when each realtime attempt is subscribed. */
	final long outputCap;
	/** The budget's currency, {@code null} without a budget. */
	@Nullable
	private final String currency;
	// what the attempts used and cost, for the report (policies with a budget only)
	private long spentPrompt;
	private long spentCompletion;
	private long spentCost;
	private long retryPrompt;
	private long retryCompletion;
	private long retryCost;
	private boolean outputCapped;

	/** How the last realtime attempt ended, for the stages; made at the first attempt of a policy with stages. */
	@Nullable
	private AttemptRecord<T> lastAttempt;

	RequestLedger(PolicyView<T> view, Context context, ChunkInspector<T> inspector) {
		this.policy = view.policy;
		this.context = context;
		this.inspector = inspector;
		this.clock = policy.clock();
		this.signals = GuardSignals.from(context);
		this.priority = policy.defaultPriority();
		this.requestStart = clock.nanos();
		this.outputCap = view.outputCap;
		this.currency = view.currency;
	}

	/** @return the subscriber's context: its dropped-error hook hears what observers throw */
	Context currentContext() {
		return context;
	}

	long deliveredTokens() {
		return deliveredTokens;
	}

	Source source() {
		return source;
	}

	/** The priority is known: the policy's observer (if any) starts following the request. */
	final void observeStart() {
		GuardObserver o = policy.observer();
		if (o == GuardObserver.noop()) {
			return;
		}
		try {
			RequestObserver r = o.requestStarted(policy.name(), priority, currentContext());
			observer = r != null ? r : RequestObserver.NOOP;
		}
		catch (Throwable observerFailure) {
			dropped(observerFailure);
		}
	}

	// what the observer hears, dispatched by one method so a throwing observer is handled in one place
	private static final int QUEUED = 0;
	private static final int ADMITTED = 1;
	private static final int REFUSED = 2;
	private static final int BREAKER = 3;
	private static final int ATTEMPT_STARTED = 4;
	private static final int BACKOFF = 5;
	private static final int RETRIED = 6;
	private static final int TRUNCATED = 7;
	private static final int CONTINUED = 8;
	private static final int SOURCE = 9;

	/** Tells the observer of an event; does nothing (one comparison) when nobody observes. */
	private void observe(int event, long number, @Nullable Object detail) {
		RequestObserver o = observer;
		if (o == RequestObserver.NOOP) {
			return;
		}
		try {
			switch (event) {
				case QUEUED -> o.admissionQueued();
				case ADMITTED -> o.admitted();
				case REFUSED -> o.admissionRefused((Throwable) Objects.requireNonNull(detail));
				case BREAKER -> o.breakerDecided(number != 0);
				case ATTEMPT_STARTED -> o.attemptStarted((int) number);
				case BACKOFF -> o.backoff(Duration.ofNanos(number));
				case RETRIED -> o.retried((String) Objects.requireNonNull(detail));
				case TRUNCATED -> o.truncated((int) number);
				case CONTINUED -> o.continued();
				case SOURCE -> o.sourceChosen((Source) Objects.requireNonNull(detail));
				default -> throw new IllegalStateException("event " + event);
			}
		}
		catch (Throwable observerFailure) {
			dropped(observerFailure);
		}
	}

	final void observeQueued() {
		observe(QUEUED, 0L, null);
	}

	final void observeAdmitted() {
		observe(ADMITTED, 0L, null);
	}

	final void observeRefused(Throwable reason) {
		observe(REFUSED, 0L, reason);
	}

	final void observeBreaker(boolean permitted) {
		observe(BREAKER, permitted ? 1L : 0L, null);
	}

	final void observeAttemptStarted(int number) {
		observe(ATTEMPT_STARTED, number, null);
	}

	final void observeBackoff(long delayNanos) {
		observe(BACKOFF, delayNanos, null);
	}

	/**
	 * A realtime attempt ended: its numbers go into the report, its meters are recorded.
	 *
	 * @param held whether its answer was held back for validation: its tokens reached nobody yet
	 */
	void attemptEnded(StallWatch<?> watch, Outcome outcome, @Nullable Throwable error, boolean held) {
		int number = ++attemptsEnded;
		RequestObserver o = observer;
		if (o != RequestObserver.NOOP) {
			try {
				o.attemptEnded(number, outcome, error);
			}
			catch (Throwable observerFailure) {
				dropped(observerFailure);
			}
		}
		long tokens = watch.tokens();
		long ttft = watch.timeToFirstTokenNanos();
		if (!held) {
			noteFirstToken(watch);
			deliveredTokens += tokens;
		}
		if (outcome != Outcome.SUCCESS) {
			wastedTokens += tokens;
		}
		if (signals != null || !policy.reportListeners().isEmpty()) {
			// only a report reads these
			List<GuardReport.Attempt> list = attempts;
			if (list == null) {
				list = new CopyOnWriteArrayList<>();
				attempts = list;
			}
			list.add(new GuardReport.Attempt(list.size() + 1, outcome, tokens,
					ttft < 0L ? null : Duration.ofNanos(ttft), Duration.ofNanos(watch.durationNanos()),
					watch.finishReason(), error));
		}
		// the policy's meters are isolated (GuardMetrics.isolated): a throwing one never gets here
		policy.metrics().streamEnded(policy.name(), priority, outcome, watch.durationNanos(), ttft, tokens);
		if (error instanceof StreamStalledException) {
			policy.metrics().stalled(policy.name(), priority, ((StreamStalledException) error).phase());
		}
	}

	/**
	 * What a realtime attempt used, for the report.
	 *
	 * @param wasted whether its text did not become the answer
	 */
	public void spent(long promptTokens, long completionTokens, long costNanos, boolean wasted) {
		spentPrompt += promptTokens;
		spentCompletion += completionTokens;
		spentCost += costNanos;
		if (wasted) {
			retryPrompt += promptTokens;
			retryCompletion += completionTokens;
			retryCost += costNanos;
		}
	}

	/** The output cap ended the answer. */
	public void outputCapped() {
		outputCapped = true;
		policy.metrics().outputCapped(policy.name(), priority);
	}

	/** A fallback answer or notice ended: only its tokens count. */
	void tailEnded(StallWatch<?> watch) {
		noteFirstToken(watch);
		deliveredTokens += watch.tokens();
	}

	/** A continued answer keeps every token its failed attempts delivered: none was wasted. */
	void answerCompleted() {
		wastedTokens = 0L;
	}

	private void noteFirstToken(StallWatch<?> watch) {
		if (watch.tokens() > 0L && firstTokenAt < 0L) {
			firstTokenAt = watch.startNanos() + watch.timeToFirstTokenNanos() - requestStart;
		}
	}

	/** The ladder picked a step, or the first content chunk of an attempt arrived. */
	void sourceChosen(Source chosen) {
		source = chosen;
		announce(chosen);
		observe(SOURCE, 0L, chosen);
	}

	/** The cheaper sources tried first had no answer: the live model answers after all. */
	void backToRealtime() {
		source = Source.REALTIME;
	}

	void announce(Source chosen) {
		GuardSignals sig = signals;
		if (sig != null) {
			try {
				sig.sourceChosen(chosen);
			}
			catch (Throwable listenerFailure) {
				dropped(listenerFailure);
			}
		}
	}

	void answered(Source from) {
		policy.metrics().answered(policy.name(), priority, from);
	}

	void retried(String reason) {
		policy.metrics().retried(policy.name(), priority, reason);
		observe(RETRIED, 0L, reason);
	}

	void invalidAnswer(String validator) {
		policy.metrics().invalidAnswer(policy.name(), priority, validator);
	}

	void continued() {
		policy.metrics().continued(policy.name(), priority);
		observe(CONTINUED, 0L, null);
	}

	void retryBudgetExhausted() {
		policy.metrics().retryBudgetExhausted(policy.name(), priority);
	}

	void promptTruncated(int tokensDropped) {
		policy.metrics().promptTruncated(policy.name(), priority, tokensDropped);
		observe(TRUNCATED, tokensDropped, null);
	}

	/** The request ended (called once): request-level meters, then the report to its listeners. */
	void close(Outcome outcome, @Nullable Throwable error, @Nullable String finishReason) {
		RequestObserver o = observer;
		if (o != RequestObserver.NOOP) {
			try {
				o.ended(outcome, source, error);
			}
			catch (Throwable observerFailure) {
				dropped(observerFailure);
			}
		}
		boolean truncated = finishReason != null && OutputLimits.isTruncation(finishReason);
		if (truncated) {
			policy.metrics().outputTruncated(policy.name(), priority);
		}
		if (wastedTokens > 0L && outcome != Outcome.CANCELLED) {
			policy.metrics().tokensWasted(policy.name(), priority, wastedTokens);
		}
		List<Consumer<? super GuardReport>> listeners = policy.reportListeners();
		if (listeners.isEmpty() && signals == null) {
			return;
		}
		long first = firstTokenAt;
		List<GuardReport.Attempt> made = attempts;
		GuardReport report = new GuardReport(policy.name(), priority, outcome, source, made == null ? List.of() : made,
				deliveredTokens, first < 0L ? null : Duration.ofNanos(first),
				Duration.ofNanos(clock.nanos() - requestStart), finishReason, truncated, error, spend(), outputCapped);
		if (signals != null) {
			try {
				signals.ended(report);
			}
			catch (Throwable listenerFailure) {
				dropped(listenerFailure);
			}
		}
		if (listeners.isEmpty()) {
			return;
		}
		Scheduler reportScheduler = policy.reportScheduler();
		if (reportScheduler == null) {
			deliver(listeners, report);
			return;
		}
		try {
			reportScheduler.schedule(() -> deliver(listeners, report));
		}
		catch (Throwable rejected) {
			dropped(rejected);
		}
	}

	private GuardReport.Spend spend() {
		if (currency == null) {
			return GuardReport.Spend.NONE;
		}
		return new GuardReport.Spend(spentPrompt, spentCompletion, BigDecimal.valueOf(spentCost, 9), retryPrompt,
				retryCompletion, BigDecimal.valueOf(retryCost, 9), currency);
	}

	private void deliver(List<Consumer<? super GuardReport>> listeners, GuardReport report) {
		for (Consumer<? super GuardReport> listener : listeners) {
			try {
				listener.accept(report);
			}
			catch (Throwable listenerFailure) {
				dropped(listenerFailure);
			}
		}
	}

	/** The one rule for observers that throw: the stream goes on, the throw goes to the dropped-error hook. */
	private void dropped(Throwable observerFailure) {
		Callbacks.dropped(observerFailure, currentContext());
	}

	/** @return how {@code watch}'s attempt ended, for the stages that let it through */
	AttemptEnd ended(StallWatch<T> watch, Outcome outcome, @Nullable Throwable error, @Nullable ChatRequest sent) {
		AttemptRecord<T> r = lastAttempt;
		if (r == null) {
			r = new AttemptRecord<>(inspector, context, watch);
			lastAttempt = r;
		}
		return r.of(watch, outcome, error, sent);
	}
}
