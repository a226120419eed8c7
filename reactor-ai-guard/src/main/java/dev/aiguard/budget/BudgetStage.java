package dev.aiguard.budget;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.CallbackException;
import dev.aiguard.core.Outcome;
import dev.aiguard.provider.RateLimitListener;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.stage.AttemptEnd;
import dev.aiguard.stage.GuardStage;
import dev.aiguard.stage.Refusal;
import dev.aiguard.stage.RequestFacts;
import dev.aiguard.stage.RequestPort;
import dev.aiguard.stage.StageRun;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.truncation.PromptTruncator;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * Budgets as a stage of the guard. At admission: the prompt cap (the prompt is counted, shortened
 * or refused) and the tenant's budgets. Before each realtime attempt: the provider key's buckets,
 * taken now or reserved for a turn the attempt waits for. After it: what the attempt used, settled
 * against the buckets, metered and reported. Built by the guard from a policy's
 * {@link BudgetGate}; not meant for direct use.
 */
public final class BudgetStage implements GuardStage {

	private final BudgetGate gate;
	@Nullable
	private final PromptTruncator truncator;
	@Nullable
	private final PriorityLanes lanes;

	private BudgetStage(BudgetGate gate, @Nullable PromptTruncator truncator, @Nullable PriorityLanes lanes) {
		this.gate = gate;
		this.truncator = truncator;
		this.lanes = lanes;
	}

	/**
	 * @param truncator what shortens a prompt over the cap, {@code null} to refuse it
	 * @param lanes the policy's lanes: a request waits for its provider key at most its lane's queue wait
	 */
	public static BudgetStage of(BudgetGate gate, @Nullable PromptTruncator truncator, @Nullable PriorityLanes lanes) {
		return new BudgetStage(Objects.requireNonNull(gate, "gate"), truncator, lanes);
	}

	@Override
	public StageRun start(RequestFacts request) {
		return new Run(this);
	}

	/** One request's budgets: its tenant, what it took ahead of its answers, its place in the provider's turn. */
	static final class Run implements StageRun, BudgetGate.Admission, BudgetGate.ProviderTurn {

		private final BudgetStage stage;
		private final BudgetGate gate;
		/** Set by {@link #admit}, the first call of every run, before any callback can read it. */
		@SuppressWarnings("NullAway.Init")
		private RequestPort port;
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
		volatile int handshake;
		static final AtomicIntegerFieldUpdater<Run> HANDSHAKE = AtomicIntegerFieldUpdater.newUpdater(Run.class, "handshake");
		@Nullable
		private AdmissionRejectedException refusal;
		private long providerAnswer;
		/** 1 while the provider key's units are reserved for the next attempt, which waits for its turn. */
		volatile int providerReserved;
		static final AtomicIntegerFieldUpdater<Run> PROVIDER_RESERVED =
				AtomicIntegerFieldUpdater.newUpdater(Run.class, "providerReserved");
		/** A provider answer that arrived later is waiting to be read by the next {@link #beforeAttempt}. */
		private boolean providerAnswerReady;

		Run(BudgetStage stage) {
			this.stage = stage;
			this.gate = stage.gate;
		}

		// ---- admission: the prompt cap and the tenant's budgets ----

		@Override
		public void admit(RequestPort port) {
			this.port = port;
			try {
				tenant = gate.tenant(port.context());
			}
			catch (IllegalArgumentException badTenant) {
				port.refuse(Refusal.REJECTED, badTenant);
				return;
			}
			ChatRequest request = port.request();
			model = gate.modelOf(request);
			int counted = 0;
			if (request != null) {
				try {
					counted = promptTokensOf(request);
					ChatRequest fits = gate.capPrompt(request, counted, model, stage.truncator);
					if (fits != request) {
						int before = counted;
						counted = promptTokensOf(fits);
						port.promptShortened(fits, before - counted);
					}
				}
				catch (PromptTooLargeException tooLarge) {
					port.refuse(Refusal.BAD_REQUEST, tooLarge);
					return;
				}
				catch (Throwable counterOrTruncator) {
					port.refuse(Refusal.BAD_REQUEST, CallbackException.threw("budget prompt cap", counterOrTruncator));
					return;
				}
			}
			if (!gate.limits(tenant)) {
				port.proceed();
				return;
			}
			handshake = 0;
			gate.admit(tenant, port.priority(), counted, gate.promptCost(model, counted), this);
			if (HANDSHAKE.compareAndSet(this, 0, 1)) {
				return; // the store answers later: budgetAdmitted / budgetRefused go on from there
			}
			AdmissionRejectedException refused = refusal;
			if (refused != null) {
				port.refuse(Refusal.OVER_BUDGET, refused);
				return;
			}
			port.proceed();
		}

		@Override
		public void budgetAdmitted(long tokensTaken, long costTaken) {
			tenantTokensTaken = tokensTaken;
			tenantCostTaken = costTaken;
			if (HANDSHAKE.compareAndSet(this, 0, 2)) {
				return; // answered while admit still runs: it goes on
			}
			port.proceed();
		}

		@Override
		public void budgetRefused(AdmissionRejectedException refused) {
			refusal = refused;
			if (HANDSHAKE.compareAndSet(this, 0, 2)) {
				return;
			}
			port.refuse(Refusal.OVER_BUDGET, refused);
		}

		/** @return the prompt tokens of {@code sent}, counted once per request sent */
		private int promptTokensOf(@Nullable ChatRequest sent) {
			if (sent == null) {
				return 0;
			}
			if (sent != countedRequest) {
				countedTokens = gate.count(sent, model);
				countedRequest = sent;
			}
			return countedTokens;
		}

		// ---- before an attempt: the provider key's turn ----

		/**
		 * Takes the attempt's request and prompt tokens from the provider key's buckets, or reserves them
		 * and waits for its turn.
		 *
		 * @return true to send the attempt now; false when it waits (on the policy's timer, then the
		 *         stages are asked again), was refused, or the store answers later
		 */
		@Override
		public boolean beforeAttempt(RequestPort port) {
			if (!gate.limitsProvider()) {
				return true;
			}
			if (PROVIDER_RESERVED.compareAndSet(this, 1, 0)) {
				// its turn came: the units were reserved before the wait
				throttledSince = -1L;
				return true;
			}
			long packed;
			int prompt;
			try {
				prompt = promptTokensOf(port.request());
			}
			catch (Throwable counterFailure) {
				port.refuse(Refusal.BAD_REQUEST, CallbackException.threw("TokenCounter", counterFailure));
				return false;
			}
			long now = port.nanos();
			if (throttledSince < 0L) {
				throttledSince = now;
			}
			long allowed = maxThrottleNanos(port);
			long waited = now - throttledSince;
			if (providerAnswerReady) {
				providerAnswerReady = false;
				packed = providerAnswer;
			}
			else {
				handshake = 0;
				gate.takeProvider(prompt, allowed - waited, this);
				if (HANDSHAKE.compareAndSet(this, 0, 1)) {
					return false; // providerAnswered asks for the attempt again
				}
				packed = providerAnswer;
			}
			if (packed >= 0L) {
				providerTokensTaken = gate.spec().provider().tokensPerMinute() > 0 ? BudgetGate.providerUnits(prompt) : 0L;
				if (packed == 0L) {
					throttledSince = -1L;
					return true;
				}
				// reserved: the units are this request's once its turn comes; given back if it ends first
				gate.throttled(port.priority(), packed);
				providerReserved = 1;
				port.attemptAfter(packed);
				return false;
			}
			long wait = Take.nanosToWait(packed);
			if (wait != Long.MAX_VALUE && waited + wait <= allowed) {
				// a store that does not queue: ask again once the buckets have room
				gate.throttled(port.priority(), wait);
				port.attemptAfter(wait);
				return false;
			}
			throttledSince = -1L;
			AdmissionRejectedException refused = gate.providerRefusal(port.priority(), wait, allowed);
			// a retry or a continuation the key has no room for: the last real error stands
			port.refuse(port.attemptsStarted() == 0 ? Refusal.OVER_BUDGET : Refusal.ATTEMPT, refused);
			return false;
		}

		/** The longest a request waits for its provider key: its lane's queue wait, else the budget's. */
		private long maxThrottleNanos(RequestPort port) {
			PriorityLanes lanes = stage.lanes;
			return (lanes != null ? lanes.spec(port.priority()).maxQueueWait() : gate.spec().maxWait()).toNanos();
		}

		@Override
		public void providerAnswered(long packed) {
			providerAnswer = packed;
			if (HANDSHAKE.compareAndSet(this, 0, 2)) {
				return;
			}
			providerAnswerReady = true;
			port.attemptNow();
		}

		/** The client tells the budget what its rate-limit headers say ({@link RateLimitListener}). */
		@Override
		public <T> Publisher<? extends T> decorate(Publisher<? extends T> attempt) {
			if (!gate.limitsProvider()) {
				return attempt;
			}
			RateLimitListener listener = gate.headerListener();
			return Flux.from(attempt).contextWrite(c -> c.put(RateLimitListener.CONTEXT_KEY, listener));
		}

		// ---- after an attempt ----

		/**
		 * What a realtime attempt used: the provider's usage when it reported one, else the counted
		 * prompt and the content chunks received; settled against the buckets, metered, and kept for
		 * the report. An attempt not sent gives back what it took from the provider key.
		 */
		@Override
		public void afterAttempt(AttemptEnd end) {
			if (!end.sent()) {
				if (gate.limitsProvider()) {
					gate.releaseProvider(providerTokensTaken);
					providerTokensTaken = 0L;
				}
				return;
			}
			BudgetGate.@Nullable TenantBudget t = tenant;
			if (t == null) {
				return;
			}
			if (end.capped()) {
				port.outputCapped();
			}
			Throwable error = end.error();
			if (error instanceof RateLimitedException) {
				gate.rateLimited((RateLimitedException) error);
			}
			int reportedPrompt = end.reportedPromptTokens();
			int reportedCompletion = end.reportedCompletionTokens();
			long prompt;
			try {
				prompt = reportedPrompt >= 0 ? reportedPrompt : promptTokensOf(port.request());
			}
			catch (Throwable counterFailure) {
				prompt = 0L;
			}
			long completion = reportedCompletion >= 0 ? reportedCompletion : end.contentChunks();
			long cost = gate.costNanos(model, prompt, completion);
			boolean wasted = end.outcome() != Outcome.SUCCESS && end.outcome() != Outcome.CANCELLED;
			gate.settle(t, prompt + completion, tenantTokensTaken, cost, tenantCostTaken, providerTokensTaken);
			tenantTokensTaken = 0L;
			tenantCostTaken = 0L;
			providerTokensTaken = 0L;
			gate.record(t, model, reportedPrompt >= 0 || reportedCompletion >= 0, prompt, completion, cost, wasted);
			port.spent(prompt, completion, cost, wasted);
		}

		@Override
		public void finish(Outcome outcome) {
			if (PROVIDER_RESERVED.compareAndSet(this, 1, 0)) {
				// the request ended while it waited for its turn: its reservation goes back to the key
				gate.releaseProvider(providerTokensTaken);
				providerTokensTaken = 0L;
			}
		}
	}
}
