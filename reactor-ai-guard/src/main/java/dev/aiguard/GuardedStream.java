package dev.aiguard;

import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.Function;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerGate;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.budget.BudgetGate;
import dev.aiguard.budget.Take;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.CallbackException;
import dev.aiguard.core.OutputLimits;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.StallPhase;
import dev.aiguard.fallback.CacheKeys;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackRequest;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.load.DegradedByLoadException;
import dev.aiguard.load.LoadAction;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.RateLimitListener;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.ContinuationRefusedException;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.truncation.TokenCounter;
import dev.aiguard.truncation.TruncationSpec;
import dev.aiguard.validation.InvalidOutputException;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.Exceptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Operators;

/**
 * One guarded request, read in one direction: each attempt is sent ({@link #nextAttempt}), ends
 * once ({@link #onEnd}), and what follows a failure is what {@link Recovery} decides — retry,
 * truncate, continue, notice, fallback or fail — carried out here. The mechanics (lane permit,
 * subscribing attempts, demand, cancel, preemption, backoff) are {@link AttemptLoop}'s; the books
 * are the {@link RequestLedger}'s. Chunks go from each attempt straight to the subscriber
 * (through an {@link AnswerTap} only when something must see them), so this costs nothing per token.
 */
final class GuardedStream<T> extends AttemptLoop<T> implements BudgetGate.Admission, BudgetGate.ProviderTurn {

	private final Function<ChatRequest, ? extends Publisher<? extends T>> upstream;
	private final boolean callForm;
	@Nullable
	private final RetryBudget retryBudget;
	/** A breaker, or a path through a breaker tree. */
	@Nullable
	private final BreakerGate breaker;

	@Nullable
	private final ChatRequest originalRequest;
	/** What continuations build on: the caller's request, or the truncated one that fit. */
	@Nullable
	private ChatRequest continuationBase;
	@Nullable
	private ChatRequest request;
	/** The request {@link #sizedTokens} was estimated for. */
	@Nullable
	private ChatRequest sizedRequest;
	private int sizedTokens;

	private int realtimeAttempts;
	private int truncations;
	private int continuations;
	@Nullable
	private Throwable lastError;
	@Nullable
	private Outcome lastOutcome;
	/** Why the scheduled retry is made; counted when it starts, not when it is scheduled. */
	@Nullable
	private String retryReason;
	/** A continuation request is about to be sent; counted once it has the breaker's permission. */
	private boolean continuing;
	@Nullable
	private AnswerTap<T> tap;
	/** The request's output validation, created with its first validated attempt. */
	@Nullable
	private AnswerCheck check;
	/** The finish reason of the attempt whose held answer is released: the answer's, whatever the release sees. */
	@Nullable
	private String releasedReason;
	/** The current attempt is validated (a realtime attempt of a policy with validators). */
	private boolean validating;
	/** The answer's source was announced to GuardSignals (at the first content chunk). */
	private boolean announced;
	/** Set while only the static steps are walked because the load sheds the request otherwise. */
	@Nullable
	private AdmissionRejectedException shedOtherwise;

	// ---- budgets (only with policy.budgetGate()) ----
	@Nullable
	private final BudgetGate budget;
	private BudgetGate.@Nullable TenantBudget tenant;
	private String model = "unknown";
	/** The request {@link #countedTokens} were counted for. */
	@Nullable
	private ChatRequest countedRequest;
	private int countedTokens;
	/** Taken from the tenant's budgets at admission, ahead of the first attempt's usage. */
	private long tenantTokensTaken;
	private long tenantCostTaken;
	/** Taken from the provider key's tokens bucket ahead of the current attempt. */
	private long providerTokensTaken;
	/** When the current attempt began waiting for the provider key's buckets, or -1. */
	private long throttledSince = -1L;
	/** An answer of the budget arrived while the call that asked was still running (0: not yet; 1: it returned first; 2: the answer came first). */
	volatile int budgetHandshake;
	static final AtomicIntegerFieldUpdater<GuardedStream> BUDGET_HANDSHAKE =
			AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "budgetHandshake");
	@Nullable
	private AdmissionRejectedException budgetRefusal;
	private long providerAnswer;
	/** 1 while the provider key's units are reserved for the next attempt, which waits for its turn. */
	volatile int providerReserved;
	static final AtomicIntegerFieldUpdater<GuardedStream> PROVIDER_RESERVED =
			AtomicIntegerFieldUpdater.newUpdater(GuardedStream.class, "providerReserved");
	/** A provider answer that arrived later is waiting to be read by {@link #nextAttempt()}. */
	private boolean providerAnswerReady;

	GuardedStream(Function<ChatRequest, ? extends Publisher<? extends T>> upstream, @Nullable ChatRequest request,
			boolean callForm, AiGuard<T> guard, CoreSubscriber<? super T> actual) {
		super(guard, actual);
		this.upstream = upstream;
		this.callForm = callForm;
		this.originalRequest = request;
		this.continuationBase = request;
		this.request = request;
		this.retryBudget = policy.retryBudget();
		this.breaker = policy.breakerGate();
		this.budget = policy.budgetGate();
	}

	// ---- sending an attempt ----

	@Override
	void nextAttempt() {
		if (!mayStartAttempt()) {
			return;
		}
		if (budget != null && budget.limitsProvider() && !providerCleared()) {
			return;
		}
		if (breaker != null) {
			BreakerPermit permit;
			try {
				permit = breaker.acquire(priority);
			}
			catch (BreakerOpenException refused) {
				observeBreaker(false);
				if (budget != null && budget.limitsProvider()) {
					// nothing goes to the provider: what this attempt took from the key goes back
					budget.releaseProvider(providerTokensTaken);
					providerTokensTaken = 0L;
				}
				breakerRefused(refused);
				return;
			}
			observeBreaker(true);
			attemptPermit = permit;
		}
		String reason = retryReason;
		if (reason != null) {
			retryReason = null;
			retried(reason);
		}
		if (continuing) {
			continuing = false;
			continued();
		}
		realtimeAttempts++;
		observeAttemptStarted(realtimeAttempts);
		ChatRequest sent = request;
		// a blocking upstream is called, not only subscribed, on the request's lane threads: after a
		// backoff this code runs on the timer
		Publisher<? extends T> source = policy.blockingUpstream() ? onLaneThread(() -> open(sent)) : open(sent);
		if (budget != null && budget.limitsProvider()) {
			// the client tells the budget what its rate-limit headers say (RateLimitListener)
			RateLimitListener listener = budget.headerListener();
			source = Flux.from(source).contextWrite(c -> c.put(RateLimitListener.CONTEXT_KEY, listener));
		}
		if (continuations > 0) {
			source = view.continuationSupport().splice(source, tap.transcript());
		}
		CoreSubscriber<? super T> target = tapFor(Stage.REALTIME);
		subscribe(source, settings.stall, Stage.REALTIME, target, tap, checkFor(target));
	}

	private Publisher<? extends T> open(@Nullable ChatRequest sent) {
		try {
			Publisher<? extends T> source = upstream.apply(sent);
			return source != null ? source : Flux.error(CallbackException.returnedNull("the upstream function"));
		}
		catch (Throwable t) {
			// a client may throw what it would otherwise signal (a refused connection): it stays the
			// upstream's failure, classified and retried like one
			return Flux.error(Exceptions.unwrap(t));
		}
	}

	/**
	 * The sent request's prompt tokens for the breaker's slowness allowance: estimated (characters / 4)
	 * once per request, and only when the breaker asks for it; 0 (unknown) without a request.
	 */
	private int promptTokens() {
		ChatRequest sent = request;
		if (sent == null || !breaker.weighsPromptTokens()) {
			return 0;
		}
		if (sent != sizedRequest) {
			sizedRequest = sent;
			sizedTokens = TokenCounter.estimate().count(sent.messages());
		}
		return sizedTokens;
	}

	// ---- budgets ----

	/**
	 * The prompt cap and the tenant's budgets, before the lanes. Counts the prompt (call form),
	 * shortens or refuses it over the cap, then takes from the tenant's buckets.
	 */
	@Override
	boolean admittedByBudget() {
		BudgetGate gate = budget;
		try {
			tenant = gate.tenant(actual.currentContext());
		}
		catch (IllegalArgumentException badTenant) {
			observeRefused(badTenant);
			endWith(badTenant, Outcome.REJECTED);
			return false;
		}
		model = gate.modelOf(request);
		int counted = 0;
		if (request != null) {
			try {
				counted = promptTokensOf(request);
				ChatRequest fits = gate.capPrompt(request, counted, model,
						policy.truncation() != null ? policy.truncation().truncator() : null);
				if (fits != request) {
					int before = counted;
					request = fits;
					continuationBase = fits;
					counted = promptTokensOf(fits);
					promptTruncated(before - counted);
				}
			}
			catch (PromptTooLargeException tooLarge) {
				endWith(tooLarge, Outcome.CLIENT_ERROR);
				return false;
			}
			catch (Throwable counterOrTruncator) {
				endWith(CallbackException.threw("budget prompt cap", counterOrTruncator), Outcome.CLIENT_ERROR);
				return false;
			}
		}
		if (!gate.limits(tenant)) {
			return true;
		}
		budgetHandshake = 0;
		gate.admit(tenant, priority, counted, gate.promptCost(model, counted), this);
		if (BUDGET_HANDSHAKE.compareAndSet(this, 0, 1)) {
			return false; // the store answers later: budgetAdmitted / budgetRefused go on from there
		}
		AdmissionRejectedException refused = budgetRefusal;
		if (refused != null) {
			refusedByBudget(refused);
			return false;
		}
		return true;
	}

	@Override
	public void budgetAdmitted(long tokensTaken, long costTaken) {
		tenantTokensTaken = tokensTaken;
		tenantCostTaken = costTaken;
		if (BUDGET_HANDSHAKE.compareAndSet(this, 0, 2)) {
			return; // answered while admittedByBudget still runs: it goes on
		}
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		admit();
	}

	@Override
	public void budgetRefused(AdmissionRejectedException refusal) {
		budgetRefusal = refusal;
		if (BUDGET_HANDSHAKE.compareAndSet(this, 0, 2)) {
			return;
		}
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		refusedByBudget(refusal);
	}

	private void refusedByBudget(AdmissionRejectedException refusal) {
		observeRefused(refusal);
		notAdmitted(refusal);
	}

	/** @return the prompt tokens of {@code sent}, counted once per request sent */
	private int promptTokensOf(@Nullable ChatRequest sent) {
		if (sent == null) {
			return 0;
		}
		if (sent != countedRequest) {
			countedTokens = budget.count(sent, model);
			countedRequest = sent;
		}
		return countedTokens;
	}

	/**
	 * Takes the attempt's request and prompt tokens from the provider key's buckets, or reserves them
	 * and waits for its turn.
	 *
	 * @return true to send the attempt now; false when it waits (on the policy's timer, then
	 *         {@link #nextAttempt()} again), was refused, or the store answers later
	 */
	private boolean providerCleared() {
		if (PROVIDER_RESERVED.compareAndSet(this, 1, 0)) {
			// its turn came: the units were reserved before the wait
			throttledSince = -1L;
			return true;
		}
		long packed;
		int prompt;
		try {
			prompt = promptTokensOf(request);
		}
		catch (Throwable counterFailure) {
			endWith(CallbackException.threw("TokenCounter", counterFailure), Outcome.CLIENT_ERROR);
			return false;
		}
		long now = clock.nanos();
		if (throttledSince < 0L) {
			throttledSince = now;
		}
		long allowed = maxThrottleNanos();
		long waited = now - throttledSince;
		if (providerAnswerReady) {
			providerAnswerReady = false;
			packed = providerAnswer;
		}
		else {
			budgetHandshake = 0;
			budget.takeProvider(prompt, allowed - waited, this);
			if (BUDGET_HANDSHAKE.compareAndSet(this, 0, 1)) {
				return false; // providerAnswered calls nextAttempt() again
			}
			packed = providerAnswer;
		}
		if (packed >= 0L) {
			providerTokensTaken = budget.spec().provider().tokensPerMinute() > 0 ? BudgetGate.providerUnits(prompt) : 0L;
			if (packed == 0L) {
				throttledSince = -1L;
				return true;
			}
			// reserved: the units are this request's once its turn comes; given back if it ends first
			budget.throttled(priority, packed);
			providerReserved = 1;
			waitThenAttempt(packed);
			return false;
		}
		long wait = Take.nanosToWait(packed);
		if (wait != Long.MAX_VALUE && waited + wait <= allowed) {
			// a store that does not queue: ask again once the buckets have room
			budget.throttled(priority, wait);
			waitThenAttempt(wait);
			return false;
		}
		throttledSince = -1L;
		AdmissionRejectedException refused = budget.providerRefusal(priority, wait, allowed);
		if (realtimeAttempts == 0) {
			refusedByBudget(refused);
		}
		else {
			// a retry or a continuation the key has no room for: the last real error stands
			breakerRefused(refused);
		}
		return false;
	}

	@Override
	void close(Outcome outcome, @Nullable Throwable error, @Nullable String finishReason) {
		BudgetGate gate = budget;
		if (gate != null && PROVIDER_RESERVED.compareAndSet(this, 1, 0)) {
			// the request ended while it waited for its turn: its reservation goes back to the key
			gate.releaseProvider(providerTokensTaken);
			providerTokensTaken = 0L;
		}
		super.close(outcome, error, finishReason);
	}

	/** The longest a request waits for its provider key: its lane's queue wait, else the budget's. */
	private long maxThrottleNanos() {
		PriorityLanes lanes = policy.lanes();
		return (lanes != null ? lanes.spec(priority).maxQueueWait() : budget.spec().maxWait()).toNanos();
	}

	@Override
	public void providerAnswered(long packed) {
		providerAnswer = packed;
		if (BUDGET_HANDSHAKE.compareAndSet(this, 0, 2)) {
			return;
		}
		providerAnswerReady = true;
		nextAttempt();
	}

	/**
	 * What a realtime attempt used: the provider's usage when it reported one, else the counted
	 * prompt and the content chunks received; settled against the buckets, metered, and kept for
	 * the report.
	 */
	private void settle(StallWatch<T> watch, Outcome outcome, @Nullable Throwable error) {
		BudgetGate gate = budget;
		BudgetGate.@Nullable TenantBudget t = tenant;
		if (gate == null || t == null) {
			return;
		}
		if (watch.capped()) {
			outputCapped();
		}
		if (error instanceof RateLimitedException) {
			gate.rateLimited((RateLimitedException) error);
		}
		T usage = watch.usageChunk();
		int reportedPrompt = -1;
		int reportedCompletion = -1;
		if (usage != null) {
			try {
				reportedPrompt = guard.inspector().promptTokens(usage);
				reportedCompletion = guard.inspector().completionTokens(usage);
			}
			catch (Throwable inspectorFailure) {
				Operators.onErrorDropped(CallbackException.threw("ChunkInspector", inspectorFailure), actual.currentContext());
			}
		}
		long prompt;
		try {
			prompt = reportedPrompt >= 0 ? reportedPrompt : promptTokensOf(request);
		}
		catch (Throwable counterFailure) {
			prompt = 0L;
		}
		long completion = reportedCompletion >= 0 ? reportedCompletion : watch.tokens();
		long cost = gate.costNanos(model, prompt, completion);
		boolean wasted = outcome != Outcome.SUCCESS && outcome != Outcome.CANCELLED;
		gate.settle(t, prompt + completion, tenantTokensTaken, cost, tenantCostTaken, providerTokensTaken);
		tenantTokensTaken = 0L;
		tenantCostTaken = 0L;
		providerTokensTaken = 0L;
		gate.record(t, model, reportedPrompt >= 0 || reportedCompletion >= 0, prompt, completion, cost, wasted);
		spent(prompt, completion, cost, wasted);
	}

	/** The breaker (or the provider key's budget) refused a retry or a continuation: the last real error stands. */
	private void breakerRefused(Throwable refused) {
		Throwable cause = lastError != null ? lastError : refused;
		long delivered = deliveredTokens();
		if (delivered > 0L) {
			// a continuation was refused: the partial answer stands, failed as fail() says (no further try)
			endWith(policy.midStream().failure(cause, delivered), lastOutcome != null ? lastOutcome : Outcome.FAILURE);
			return;
		}
		fallbackOrFail(FallbackTrigger.BREAKER_OPEN, cause, lastOutcome != null ? lastOutcome : Outcome.REJECTED);
	}

	/**
	 * The subscriber chunks go to: the actual one, or a tap when something must see them, or the
	 * tap's hold when the answer is validated before anything of it is delivered. Starts the
	 * attempt's validation; {@link #checkFor} says who feeds it.
	 */
	private CoreSubscriber<? super T> tapFor(Stage next) {
		ResponseCache<T> cache = callForm ? view.responseCache() : null;
		ContinuationSupport<T> continuation = callForm ? view.continuationSupport() : null;
		boolean record = next == Stage.REALTIME && cache != null;
		boolean transcribe = next == Stage.REALTIME && continuation != null;
		boolean validate = next == Stage.REALTIME && policy.validates();
		validating = validate;
		if (validate) {
			if (check == null) {
				check = new AnswerCheck(policy.validators(), policy.streamingValidators());
			}
			check.startAttempt();
		}
		boolean hold = validate && check.holds(request);
		// leading whitespace is held only while a retry is still possible: nothing delivered yet
		boolean holdBlanks = validate && !hold && check.holdsLeadingWhitespace && deliveredTokens() == 0L
				&& guard.inspector().chunkType() == ChatChunk.class;
		boolean onlyBlanks = !record && !transcribe && !hold;
		if (onlyBlanks && !holdBlanks) {
			if (tap != null) {
				tap.holding = false;
				tap.holdLeadingWhitespace(false, false);
			}
			return actual;
		}
		if (tap == null) {
			tap = new AnswerTap<>(actual, cache, continuation, check, this::addDemand);
		}
		else if (record && continuations == 0) {
			tap.restartRecording();
		}
		tap.recording = record;
		tap.transcribing = transcribe;
		// a tap that only holds leading whitespace leaves feeding the validation to the watch: it steps
		// out of the path with the first visible chunk
		tap.validating = validate && !onlyBlanks;
		tap.holding = false;
		tap.holdLeadingWhitespace(holdBlanks, onlyBlanks);
		return hold ? tap.hold() : tap;
	}

	/**
	 * @return the check the watch calls for each content chunk of an attempt that delivers to
	 *         {@code target}: the validation when nothing sits between the watch and the subscriber
	 *         (a tap feeds it otherwise), else {@code null}
	 */
	private StallWatch.@Nullable ContentCheck<Object> checkFor(CoreSubscriber<? super T> target) {
		return validating && (target == actual || !tap.validating) ? check : null;
	}

	// ---- the end of an attempt ----

	@Override
	public boolean wantsFirstContent() {
		return signals != null && !announced;
	}

	/** The answer's first content chunk: GuardSignals hear its source, outside the chunk's delivery. */
	@Override
	public void firstContent(StallWatch<T> watch) {
		if (!announced) {
			announced = true;
			announce(source());
		}
	}

	@Override
	public void onEnd(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		if (stage != Stage.REALTIME) {
			tailEnded(watch, end, error);
			return;
		}
		boolean threadWaitOver = end == StallWatch.End.STALLED && !watch.upstreamStarted();
		if (threadWaitOver) {
			// no lane thread was free in time and the upstream was never called: the model had no
			// chance to stall, so this is the lane's refusal, not a failure for the breaker
			end = StallWatch.End.ERROR;
			error = laneThreadTimeout();
		}
		AnswerTap<T> t = tap;
		boolean held = t != null && t.holding;
		// leading whitespace still held: nothing of this attempt's content reached the subscriber
		boolean blanks = t != null && t.holdsBlanks();
		if (end == StallWatch.End.COMPLETED && validating && !watch.capped()) {
			// the verdict at the end of the attempt: a rejected answer makes it a failed one
			InvalidOutputException rejected = check.verdict(watch.finishReason(), request, actual.currentContext());
			if (rejected != null) {
				end = StallWatch.End.ERROR;
				error = rejected;
			}
		}
		if (error instanceof InvalidOutputException) {
			invalidAnswer(((InvalidOutputException) error).validator());
		}
		Outcome outcome = ErrorClassifier.ofAttempt(end, error, policy.errorClassifier(), actual.currentContext());
		BreakerPermit permit = attemptPermit;
		attemptPermit = null;
		if (permit != null) {
			// a priority the breaker does not count hands its permission back, whatever the outcome
			permit.promptTokens(promptTokens())
					.record(settings.countedByBreaker ? outcome : Outcome.CANCELLED, watch.timeToFirstTokenNanos());
		}
		attemptEnded(watch, outcome, error, held || blanks);
		settle(watch, outcome, error);
		switch (end) {
			case COMPLETED:
				answerCompleted();
				if (held || blanks) {
					release(watch, blanks);
					break;
				}
				storeAnswer(watch.finishReason());
				complete(Outcome.SUCCESS, true, watch.finishReason());
				break;
			case CANCELLED:
				finish(outcome, null, watch.finishReason());
				break;
			default:
				if (blanks) {
					// before any next attempt: the demand the held chunks took goes back to the subscriber
					t.dropBlanks();
				}
				lastError = error;
				lastOutcome = outcome;
				if (threadWaitOver && deliveredTokens() == 0L) {
					// like a queue wait that ran out: the ladder's REJECTED step, not a retry on the same busy lane
					notAdmitted(error);
					break;
				}
				attemptFailed(outcome, error);
		}
	}

	/** Gathers the facts of a failed attempt, asks {@link Recovery}, and carries its step out. */
	private void attemptFailed(Outcome outcome, Throwable error) {
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		boolean retryable = settings.retry.isRetryable(error);
		Recovery.Facts facts = new Recovery.Facts(outcome, error instanceof PreemptedException,
				error instanceof ContextLengthExceededException && request != null, retryable,
				retryable || error instanceof StreamStalledException || error instanceof IncompleteStreamException,
				error instanceof StreamStalledException && ((StreamStalledException) error).phase() != StallPhase.MAX_DURATION,
				deliveredTokens(), realtimeAttempts, truncations, continuations, tap != null && tap.continuable());
		Recovery.Step step = Recovery.decide(facts, settings.rules(callForm), this::takeRetryGrant);
		if (step.budgetRefused()) {
			retryBudgetExhausted();
		}
		switch (step.action()) {
			case RETRY:
				retryReason = error.getClass().getSimpleName();
				if (error instanceof InvalidOutputException && request != null && check != null) {
					// a rejected answer may be corrected by what its validator adds to the prompt
					request = check.retryRequest(request, actual.currentContext());
				}
				retryAfter(settings.retry.delayBefore(realtimeAttempts, error).toNanos());
				return;
			case TRUNCATE:
				truncate(policy.truncation(), (ContextLengthExceededException) error);
				return;
			case PROMPT_TOO_LARGE:
				promptTooLarge(policy.truncation(), (ContextLengthExceededException) error);
				return;
			case CONTINUE:
				if (!continueAnswer(error, outcome)) {
					endWith(policy.midStream().failure(error, deliveredTokens()), outcome);
				}
				return;
			case NOTICE:
				@SuppressWarnings("unchecked")
				T notice = (T) policy.midStream().noticeFor(error);
				if (notice != null) {
					subscribe(Flux.just(notice), settings.tailStall, Stage.NOTICE, tapFor(Stage.NOTICE), tap);
					return;
				}
				endWith(policy.midStream().failure(error, deliveredTokens()), outcome);
				return;
			case FALLBACK:
				fallback(step.trigger(), error, outcome);
				return;
			case FAIL_PARTIAL:
				// a preemption lands here too: its outcome is already REJECTED
				endWith(policy.midStream().failure(error, deliveredTokens()), outcome);
				return;
			default:
				endWith(error, outcome);
		}
	}

	private boolean takeRetryGrant() {
		return retryBudget == null || retryBudget.tryAcquireRetry();
	}

	private void truncate(TruncationSpec spec, ContextLengthExceededException e) {
		TruncationSpec.Result shrunk;
		try {
			shrunk = spec.shrink(request, e.limit(), e.actual());
		}
		catch (PromptTooLargeException tooLarge) {
			endWith(tooLarge.getCause() != null ? tooLarge
					: new PromptTooLargeException(tooLarge.limit().orElse(-1), tooLarge.smallestSize(), e),
					Outcome.CLIENT_ERROR);
			return;
		}
		catch (Throwable truncatorFailure) {
			endWith(CallbackException.threw("PromptTruncator", truncatorFailure), Outcome.CLIENT_ERROR);
			return;
		}
		truncations++;
		request = shrunk.request();
		// truncation only happens before the first token, so no continuation was built on the old prompt
		continuationBase = request;
		promptTruncated(shrunk.tokensDropped());
		nextAttempt();
	}

	private void promptTooLarge(TruncationSpec spec, ContextLengthExceededException e) {
		int size;
		try {
			size = spec.count(request);
		}
		catch (Throwable counterFailure) {
			endWith(CallbackException.threw("TokenCounter", counterFailure), Outcome.CLIENT_ERROR);
			return;
		}
		endWith(new PromptTooLargeException(e.limit().orElse(-1), size, e), Outcome.CLIENT_ERROR);
	}

	/** @return whether a continuation request is on its way; false when the strategy refused */
	private boolean continueAnswer(Throwable error, Outcome outcome) {
		ChatRequest next;
		try {
			next = policy.midStream().continuation().continuation(continuationBase, tap.transcript().text(), false);
			if (next == null) {
				throw CallbackException.returnedNull("ContinuationStrategy");
			}
		}
		catch (ContinuationRefusedException refused) {
			return false;
		}
		catch (Throwable strategyFailure) {
			endWith(policy.midStream().failure(CallbackException.threw("ContinuationStrategy", strategyFailure),
					deliveredTokens()), outcome);
			return true;
		}
		// a continuation is one more upstream request: it draws on the shared budget like a retry, so a
		// provider that cuts every stream short cannot multiply the load by maxContinuations
		if (!takeRetryGrant()) {
			retryBudgetExhausted();
			return false;
		}
		continuations++;
		request = next;
		tap.discardRecording();
		continuing = true;
		nextAttempt();
		return true;
	}

	@Override
	void notAdmitted(Throwable rejection) {
		lastError = rejection;
		lastOutcome = Outcome.REJECTED;
		boolean budget = rejection instanceof AdmissionRejectedException a
				&& a.reason() == AdmissionRejectedException.Reason.BUDGET;
		fallbackOrFail(budget ? FallbackTrigger.BUDGET : FallbackTrigger.REJECTED, rejection, Outcome.REJECTED);
	}

	private void fallbackOrFail(FallbackTrigger trigger, Throwable cause, Outcome outcome) {
		FallbackChain<T> chain = view.fallback();
		if (chain == null || !chain.isEnteredBy(trigger)) {
			endWith(cause, outcome);
			return;
		}
		fallback(trigger, cause, outcome);
	}

	private void fallback(FallbackTrigger trigger, Throwable cause, Outcome outcome) {
		// the request's outcome if the ladder fails too (REJECTED when no attempt was made)
		lastOutcome = outcome;
		// keyed by what the caller asked, so a truncated retry and a later identical request share a key
		Object key = CacheKeys.keyOf(policy.cacheKey(), originalRequest);
		FallbackRequest fallbackRequest = new FallbackRequest(request, cause, trigger, priority, key, policy.breakerPath());
		Flux<T> answer = view.fallback().answer(fallbackRequest, blockingScheduler(), clock.scheduler(),
				this::sourceChosen, policy.metrics(), policy.name());
		subscribe(answer, settings.tailStall, Stage.FALLBACK, tapFor(Stage.FALLBACK), tap);
	}

	// ---- the load governor's routing ----

	@Override
	boolean routedByLoad(LoadGovernor load, LoadAction action) {
		if (action == LoadAction.SHED) {
			shedByLoad(load.shed(priority));
			return true;
		}
		FallbackChain<T> ladder = view.ladderFor(action);
		if (action == LoadAction.STATIC_OR_SHED) {
			AdmissionRejectedException shed = load.shed(priority);
			if (ladder == null) {
				shedByLoad(shed);
			}
			else {
				walkFirst(ladder, shed, shed);
			}
			return true;
		}
		if (ladder == null) {
			return false; // nothing cheaper to try: served live
		}
		walkFirst(ladder, new DegradedByLoadException(priority, load.level(), action), null);
		return true;
	}

	private void shedByLoad(AdmissionRejectedException shed) {
		observeRefused(shed);
		lastError = shed;
		lastOutcome = Outcome.REJECTED;
		endWith(shed, Outcome.REJECTED);
	}

	/**
	 * Walks {@code ladder} before the live model (or, with {@code shedOtherwise}, instead of it):
	 * no lane permit is taken for it.
	 */
	private void walkFirst(FallbackChain<T> ladder, Throwable cause, @Nullable AdmissionRejectedException shedOtherwise) {
		this.shedOtherwise = shedOtherwise;
		Object key = CacheKeys.keyOf(policy.cacheKey(), originalRequest);
		FallbackRequest fallbackRequest = new FallbackRequest(request, cause, FallbackTrigger.LOAD, priority, key,
				policy.breakerPath());
		Flux<T> answer = ladder.answer(fallbackRequest, blockingScheduler(), clock.scheduler(), this::sourceChosen,
				policy.metrics(), policy.name());
		subscribe(answer, settings.tailStall, Stage.PREFERRED, tapFor(Stage.PREFERRED), tap);
	}

	/** The cheaper steps had no answer and delivered nothing: the live model is asked after all. */
	private void preferredFailed(Throwable error) {
		AdmissionRejectedException shed = shedOtherwise;
		if (shed != null) {
			endWith(shed, Outcome.REJECTED);
			return;
		}
		backToRealtime();
		// cancel() finishes the request itself only while no attempt is active: clear the ended walk
		// first, then re-check, so that one of the two sides always sees the other
		active = null;
		if (cancelled != 0) {
			finishCancelled();
			return;
		}
		admit();
	}

	/** A fallback answer or a notice ended. */
	private void tailEnded(StallWatch<T> watch, StallWatch.End end, @Nullable Throwable error) {
		tailEnded(watch);
		if (stage == Stage.PREFERRED && end != StallWatch.End.COMPLETED && end != StallWatch.End.CANCELLED
				&& watch.tokens() == 0L
				&& !(error instanceof PreemptedException)) {
			preferredFailed(error);
			return;
		}
		switch (end) {
			case COMPLETED:
				if (stage == Stage.RELEASE) {
					storeAnswer(releasedReason);
					complete(Outcome.SUCCESS, true, releasedReason);
					break;
				}
				// a notice ends the answer, but the attempt still failed (its error is in the attempts)
				complete(stage == Stage.FALLBACK || stage == Stage.PREFERRED ? Outcome.SUCCESS
						: lastOutcome != null ? lastOutcome : Outcome.FAILURE, false, watch.finishReason());
				break;
			case CANCELLED:
				finish(Outcome.CANCELLED, null, watch.finishReason());
				break;
			default:
				if (error instanceof PreemptedException) {
					// a fallback answer or notice was running on the permit the lanes took back
					failPreempted((PreemptedException) error);
					return;
				}
				endWith(error, lastOutcome != null ? lastOutcome : Outcome.FAILURE);
		}
	}

	/**
	 * The held answer stands (it passed its validators, or the output cap ended it): it goes to the
	 * subscriber now, with the subscriber's demand. Held leading whitespace goes through the tap, so
	 * that the answer is recorded and transcribed as delivered; the attempt's finish reason stays the
	 * answer's.
	 */
	private void release(StallWatch<T> attempt, boolean blanks) {
		AnswerTap<T> t = tap;
		releasedReason = attempt.finishReason();
		if (!blanks) {
			t.holding = false;
			subscribe(Flux.fromIterable(t.takeHeld()), settings.tailStall, Stage.RELEASE, actual, null);
			return;
		}
		t.validating = false;
		subscribe(Flux.fromIterable(t.takeBlanks()), settings.tailStall, Stage.RELEASE, t, t);
	}

	private void storeAnswer(@Nullable String finishReason) {
		AnswerTap<T> t = tap;
		ResponseCache<T> cache = view.responseCache();
		if (t == null || t.recorder() == null || cache == null || continuations > 0) {
			return;
		}
		t.recorder().storeIfComplete(cache, CacheKeys.keyOf(policy.cacheKey(), originalRequest), Outcome.SUCCESS,
				OutputLimits.isTruncation(finishReason), blockingScheduler());
	}
}
