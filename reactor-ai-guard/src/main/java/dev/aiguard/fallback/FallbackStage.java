package dev.aiguard.fallback;

import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.stage.AnswerSource;
import dev.aiguard.stage.Degradation;
import dev.aiguard.stage.GuardStage;
import dev.aiguard.stage.RequestFacts;
import dev.aiguard.stage.RequestPort;
import dev.aiguard.stage.Shortfall;
import dev.aiguard.stage.StageRun;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;

/**
 * The fallback ladder and the response cache as a stage of the guard: which steps answer a
 * request the live model fails (and which the load's degradations walk first), the
 * {@link FallbackRequest} each walk gets with its cache key, and the recording of realtime answers
 * for the cache. The ladder keeps nothing per request, so every request shares one run; a request
 * of the call form whose policy has a cache gets a {@link CacheRun} of its own. Built by the guard
 * from a policy's {@link FallbackSpec}; not meant for direct use.
 */
public final class FallbackStage implements GuardStage {

	@Nullable
	private final LadderRun ladder;
	@Nullable
	private final ResponseCache<Object> cache;
	private final Function<ChatRequest, Object> cacheKey;

	private FallbackStage(@Nullable LadderRun ladder, @Nullable ResponseCache<Object> cache,
			Function<ChatRequest, Object> cacheKey) {
		this.ladder = ladder;
		this.cache = cache;
		this.cacheKey = cacheKey;
	}

	/**
	 * @param loadWalksFirst the policy has a load governor, whose degradations walk the ladder's
	 *        cheaper steps first when the ladder is entered by {@link FallbackTrigger#LOAD}
	 * @param breakerPath the path through a breaker tree the attempts take, or {@code null}
	 * @return the stage, or {@code null} when the policy has neither a ladder nor a cache
	 */
	@Nullable
	@SuppressWarnings("unchecked")
	public static FallbackStage of(@Nullable FallbackChain<?> chain, @Nullable ResponseCache<?> cache,
			Function<ChatRequest, Object> cacheKey, boolean loadWalksFirst, @Nullable BreakerPath breakerPath,
			GuardMetrics metrics, String policyName) {
		Objects.requireNonNull(cacheKey, "cacheKey");
		if (chain == null && cache == null) {
			return null;
		}
		LadderRun ladder = chain == null ? null
				: new LadderRun((FallbackChain<Object>) chain, loadWalksFirst && chain.isEnteredBy(FallbackTrigger.LOAD),
						cacheKey, breakerPath, Objects.requireNonNull(metrics, "metrics"),
						Objects.requireNonNull(policyName, "policyName"));
		return new FallbackStage(ladder, (ResponseCache<Object>) cache, cacheKey);
	}

	/** A call-form request of a policy with a cache records its answers; every other request shares the ladder's run. */
	@Override
	@Nullable
	public StageRun start(RequestFacts request) {
		ResponseCache<Object> c = cache;
		ChatRequest original = request.original();
		if (c != null && original != null) {
			return new CacheRun(ladder, c, cacheKey, original);
		}
		return ladder;
	}

	/** @return the ladder's trigger for {@code why} */
	static FallbackTrigger triggerOf(Shortfall why) {
		return switch (why) {
			case BREAKER_OPEN -> FallbackTrigger.BREAKER_OPEN;
			case REJECTED -> FallbackTrigger.REJECTED;
			case BUDGET -> FallbackTrigger.BUDGET;
			case RETRIES_EXHAUSTED -> FallbackTrigger.RETRIES_EXHAUSTED;
			case STALLED_BEFORE_FIRST_TOKEN -> FallbackTrigger.STALLED_BEFORE_FIRST_TOKEN;
			case CLIENT_ERROR -> FallbackTrigger.CLIENT_ERROR;
			case INVALID_OUTPUT -> FallbackTrigger.INVALID_OUTPUT;
		};
	}

	/**
	 * The ladder, shared by the requests of a policy: which steps answer which shortfall, the cuts
	 * of it a degradation walks first (worked out once), and the {@link FallbackRequest} of a walk.
	 */
	static final class LadderRun implements StageRun, AnswerSource {

		private final FallbackChain<Object> chain;
		/** By {@link Degradation} ordinal: the ladder's steps walked first for it, {@code null} when none. */
		private final @Nullable FallbackChain<Object>[] degraded;
		private final Function<ChatRequest, Object> cacheKey;
		@Nullable
		private final BreakerPath breakerPath;
		private final GuardMetrics metrics;
		private final String policyName;

		@SuppressWarnings("unchecked")
		LadderRun(FallbackChain<Object> chain, boolean cut, Function<ChatRequest, Object> cacheKey,
				@Nullable BreakerPath breakerPath, GuardMetrics metrics, String policyName) {
			this.chain = chain;
			this.degraded = new FallbackChain[Degradation.values().length];
			if (cut) {
				for (Degradation d : Degradation.values()) {
					degraded[d.ordinal()] = chain.only(d.sources()).orElse(null);
				}
			}
			this.cacheKey = cacheKey;
			this.breakerPath = breakerPath;
			this.metrics = metrics;
			this.policyName = policyName;
		}

		@Override
		public AnswerSource answers() {
			return this;
		}

		@Override
		public boolean answers(Shortfall why) {
			return chain.isEnteredBy(triggerOf(why));
		}

		@Override
		public boolean answersFirst(Degradation degradation) {
			return degraded[degradation.ordinal()] != null;
		}

		@Override
		public Publisher<?> answer(Shortfall why, Throwable cause, RequestPort port) {
			return walk(chain, triggerOf(why), cause, port);
		}

		@Override
		public Publisher<?> answerFirst(Degradation degradation, Throwable cause, RequestPort port) {
			return walk(Objects.requireNonNull(degraded[degradation.ordinal()]), FallbackTrigger.LOAD, cause, port);
		}

		private Publisher<?> walk(FallbackChain<Object> ladder, FallbackTrigger trigger, Throwable cause,
				RequestPort port) {
			// keyed by what the caller asked, so a truncated retry and a later identical request share a key
			Object key = CacheKeys.keyOf(cacheKey, port.original());
			FallbackRequest request = new FallbackRequest(port.request(), cause, trigger, port.priority(), key,
					breakerPath);
			return ladder.answer(request, port.blockingScheduler(), port.timer(), port::sourceChosen, metrics,
					policyName);
		}
	}
}
