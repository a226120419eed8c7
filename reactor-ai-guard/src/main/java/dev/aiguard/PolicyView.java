package dev.aiguard;

import java.util.EnumSet;

import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.load.LoadAction;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.truncation.TruncationSpec;
import org.jspecify.annotations.Nullable;

/**
 * A policy as a guard reads it, worked out once when the policy goes into force: the recovery
 * rules of each priority and form, the ladder cuts the load governor walks, the components typed
 * as the guard's chunks. A request reads its guard's view once when it is subscribed and keeps it
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
	@Nullable
	private final FallbackChain<T> cheaperFirst;
	@Nullable
	private final FallbackChain<T> fallbackFirst;
	@Nullable
	private final FallbackChain<T> staticOnly;

	/** What a request of one priority reads of the policy, resolved once for all its requests. */
	static final class ForPriority {

		final StallSpec stall;
		/** The watch of fallback answers and notices: the priority's spec without deadlines. */
		final StallSpec tailStall;
		final RetryRules retry;
		final boolean countedByBreaker;
		private final Recovery.Rules transformRules;
		private final Recovery.Rules callRules;

		ForPriority(GuardPolicy.Resolved r, Recovery.Rules transformRules, Recovery.Rules callRules) {
			this.stall = r.stall();
			this.tailStall = r.tailStall();
			this.retry = r.retry();
			this.countedByBreaker = r.countedByBreaker();
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
		FallbackChain<T> chain = fallback();
		if (chain != null && policy.load() != null && chain.isEnteredBy(FallbackTrigger.LOAD)) {
			this.cheaperFirst = chain.only(EnumSet.of(Source.CACHE, Source.LIGHTWEIGHT)).orElse(null);
			this.fallbackFirst = chain.only(EnumSet.of(Source.FALLBACK_MODEL, Source.CACHE)).orElse(null);
			this.staticOnly = chain.only(EnumSet.of(Source.STATIC)).orElse(null);
		}
		else {
			this.cheaperFirst = null;
			this.fallbackFirst = null;
			this.staticOnly = null;
		}
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

	@SuppressWarnings("unchecked")
	@Nullable
	ResponseCache<T> responseCache() {
		return (ResponseCache<T>) policy.responseCache();
	}

	@SuppressWarnings("unchecked")
	@Nullable
	FallbackChain<T> fallback() {
		return (FallbackChain<T>) policy.fallback();
	}

	/**
	 * @return the ladder steps walked first (or only) for a load action, {@code null} when there
	 *         are none
	 */
	@Nullable
	FallbackChain<T> ladderFor(LoadAction action) {
		switch (action) {
			case CHEAPER_FIRST:
				return cheaperFirst;
			case FALLBACK_FIRST:
				return fallbackFirst;
			case STATIC_OR_SHED:
				return staticOnly;
			default:
				return null;
		}
	}
}
