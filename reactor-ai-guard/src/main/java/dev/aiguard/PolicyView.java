package dev.aiguard;

import java.util.EnumSet;

import dev.aiguard.admission.AdmissionStage;
import dev.aiguard.breaker.BreakerStage;
import dev.aiguard.budget.BudgetStage;
import dev.aiguard.core.Priority;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackStage;
import dev.aiguard.load.LoadStage;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stage.StageList;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.truncation.TruncationSpec;
import dev.aiguard.validation.ValidationStage;
import org.jspecify.annotations.Nullable;

/**
 * A policy as a guard reads it, worked out once when the policy goes into force: the recovery
 * rules of each priority and form, the policy's stages,
 * the components typed as the guard's chunks. A request reads its guard's view once when it is subscribed and keeps it
 * to its end, so a live change never reaches a running stream.
 *
 * <p>The views of a {@link GuardControl} form a chain in the order they went into force:
 * {@link #version} counts them, {@link #change} says how each one came, and {@link #next} links
 * to its successor once that is in force.
 */
final class PolicyView<T> {

	final GuardPolicy policy;
	/** 0 for the first policy; each change in force adds one. */
	final long version;
	/** How this view came into force; {@code null} for the first. */
	@Nullable
	final PolicyChange change;
	/** The view that replaced this one, set once by the change that did. */
	@Nullable
	volatile PolicyView<T> next;

	private final ForPriority[] priorities;
	/** The per-request capabilities the policy has, in the order a request meets them. */
	final StageList stages;
	/** The budget's output cap in content chunks, 0 when none. */
	final long outputCap;
	/** The budget's currency for the report's spend, {@code null} without a budget. */
	@Nullable
	final String currency;
	/** The policy has a response cache: the call form's realtime answers are recorded for it. */
	final boolean recordsAnswers;

	/** What a request of one priority reads of the policy, resolved once for all its requests. */
	static final class ForPriority {

		final StallSpec stall;
		/** The watch of fallback answers and notices: the priority's spec without deadlines. */
		final StallSpec tailStall;
		final RetryRules retry;
		private final Recovery.Rules transformRules;
		private final Recovery.Rules callRules;

		ForPriority(GuardPolicy.Resolved r, Recovery.Rules transformRules, Recovery.Rules callRules) {
			this.stall = r.stall();
			this.tailStall = r.tailStall();
			this.retry = r.retry();
			this.transformRules = transformRules;
			this.callRules = callRules;
		}

		Recovery.Rules rules(boolean callForm) {
			return callForm ? callRules : transformRules;
		}
	}

	PolicyView(GuardPolicy policy, long version, @Nullable PolicyChange change) {
		this.policy = policy;
		this.version = version;
		this.change = change;
		Priority[] all = Priority.values();
		this.priorities = new ForPriority[all.length];
		for (Priority p : all) {
			GuardPolicy.Resolved r = policy.resolved(p);
			priorities[p.ordinal()] = new ForPriority(r, rulesOf(policy, r, false), rulesOf(policy, r, true));
		}
		this.stages = stagesOf(policy);
		this.outputCap = policy.budget() == null ? 0L : policy.budget().outputCap();
		this.currency = policy.budget() == null ? null : policy.budget().prices().currency();
		this.recordsAnswers = policy.responseCache() != null;
	}

	/**
	 * The policy's stages: load routing, budgets, lane admission, then the breaker before each
	 * attempt, the output validation that judges each answer, and the fallback ladder and response
	 * cache that answer instead of the live model and keep its answers.
	 */
	private static StageList stagesOf(GuardPolicy policy) {
		EnumSet<Priority> counted = EnumSet.noneOf(Priority.class);
		for (Priority p : Priority.values()) {
			if (policy.resolved(p).countedByBreaker()) {
				counted.add(p);
			}
		}
		TruncationSpec truncation = policy.truncation();
		return StageList.of(policy.load() != null ? LoadStage.of(policy.load()) : null,
				policy.budgetGate() != null ? BudgetStage.of(policy.budgetGate(),
						truncation != null ? truncation.truncator() : null, policy.lanes()) : null,
				policy.lanes() != null ? AdmissionStage.of(policy.lanes()) : null,
				policy.breakerGate() != null ? BreakerStage.of(policy.breakerGate(), counted) : null,
				ValidationStage.of(policy.validation()),
				FallbackStage.of(policy.fallback(), policy.responseCache(), policy.cacheKey(), policy.load() != null,
						policy.breakerPath(), policy.metrics(), policy.name()));
	}

	private static Recovery.Rules rulesOf(GuardPolicy policy, GuardPolicy.Resolved r, boolean callForm) {
		TruncationSpec truncation = policy.truncation();
		MidStreamPolicy<?> mid = policy.midStream();
		FallbackChain<?> chain = policy.fallback();
		return new Recovery.Rules(callForm, r.retry().maxAttempts(), r.maxAnswerAttempts(),
				truncation == null ? 0 : truncation.maxTruncations(), mid.mode(), mid.maxContinuations(),
				mid.support() != null, trigger -> chain != null && chain.isEnteredBy(trigger));
	}

	/** @return what requests of {@code priority} read: an array read, no allocation */
	ForPriority of(Priority priority) {
		return priorities[priority.ordinal()];
	}

	// The policy holds these for any chunk type; the guard reads them as its own (AiGuard.of checked the types).

	@SuppressWarnings("unchecked")
	@Nullable
	ContinuationSupport<T> continuationSupport() {
		return (ContinuationSupport<T>) policy.midStream().support();
	}
}
