package dev.aiguard;

import java.util.EnumSet;
import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.load.LoadAction;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.truncation.TruncationSpec;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxOperator;

/**
 * Guards a token stream: stall and completeness detection, one outcome per attempt recorded in
 * metrics, and one {@link GuardReport} per request.
 *
 * <pre>{@code
 * AiGuard<ChatChunk> guard = AiGuard.of(policy);          // build once, share
 *
 * Flux<ChatChunk> answer = client.stream(request)
 *     .transform(guard)
 *     .contextWrite(Priority.P0.asContext());
 * }</pre>
 *
 * An {@code AiGuard} holds no per-request state: everything a request needs is created when it
 * is subscribed, so one instance guards any number of subscriptions and re-subscriptions, with
 * {@code transform} and {@code transformDeferred} alike.
 *
 * @param <T> the chunk type
 */
public final class AiGuard<T> implements Function<Flux<T>, Flux<T>> {

	private final GuardPolicy policy;
	private final ChunkInspector<T> inspector;
	/** What the recovery decision reads of the policy, for each form: resolved once, not per request. */
	private final Recovery.Rules transformRules;
	private final Recovery.Rules callRules;
	/**
	 * The ladder's steps the load governor's actions walk before (or instead of) the live model,
	 * cut once; {@code null} when the ladder has none of them or is not entered by LOAD.
	 */
	@Nullable
	private final FallbackChain<T> cheaperFirst;
	@Nullable
	private final FallbackChain<T> fallbackFirst;
	@Nullable
	private final FallbackChain<T> staticOnly;

	private AiGuard(GuardPolicy policy, ChunkInspector<T> inspector) {
		this.policy = policy;
		this.inspector = inspector;
		this.transformRules = rulesOf(policy, false);
		this.callRules = rulesOf(policy, true);
		FallbackChain<T> chain = fallback();
		boolean byLoad = chain != null && policy.load() != null && chain.isEnteredBy(FallbackTrigger.LOAD);
		this.cheaperFirst = byLoad ? chain.only(EnumSet.of(Source.CACHE, Source.LIGHTWEIGHT)).orElse(null) : null;
		this.fallbackFirst = byLoad ? chain.only(EnumSet.of(Source.FALLBACK_MODEL, Source.CACHE)).orElse(null) : null;
		this.staticOnly = byLoad ? chain.only(EnumSet.of(Source.STATIC)).orElse(null) : null;
	}

	private static Recovery.Rules rulesOf(GuardPolicy policy, boolean callForm) {
		TruncationSpec truncation = policy.truncation();
		MidStreamPolicy<?> mid = policy.midStream();
		FallbackChain<?> chain = policy.fallback();
		return new Recovery.Rules(callForm, policy.retry().maxAttempts(), policy.maxAnswerAttempts(),
				truncation == null ? 0 : truncation.maxTruncations(), mid.mode(), mid.maxContinuations(),
				mid.support() != null, trigger -> chain != null && chain.isEnteredBy(trigger));
	}

	/** @return a guard for the library's own {@link ChatChunk} streams */
	public static AiGuard<ChatChunk> of(GuardPolicy policy) {
		return of(policy, ChatChunk.inspector());
	}

	/**
	 * @param inspector tells the guard which chunks are content, heartbeats and terminal
	 * @return a guard for streams of any chunk type
	 */
	public static <T> AiGuard<T> of(GuardPolicy policy, ChunkInspector<T> inspector) {
		Objects.requireNonNull(policy, "policy");
		Objects.requireNonNull(inspector, "inspector");
		Class<?> type = inspector.chunkType();
		FallbackChain<?> chain = policy.fallback();
		if (chain != null) {
			requireFits(type, chain.chunkType(), "fallback chain", policy);
		}
		requireFits(type, policy.midStream().chunkType(), "mid-stream policy", policy);
		if (policy.responseCache() != null) {
			requireFits(type, policy.responseCache().chunkType(), "response cache", policy);
		}
		return new AiGuard<>(policy, inspector);
	}

	/**
	 * A component whose chunks are not the guard's would fail mid-stream with a
	 * {@code ClassCastException}: refuse it now, when both types are known.
	 */
	private static void requireFits(Class<?> guardType, Class<?> componentType, String component, GuardPolicy policy) {
		if (guardType != Object.class && componentType != Object.class && !guardType.isAssignableFrom(componentType)) {
			throw new IllegalArgumentException("policy '" + policy.name() + "': the " + component + " produces "
					+ componentType.getName() + " chunks but the guard's inspector reads " + guardType.getName());
		}
	}

	/**
	 * @return the guarded stream: {@code source} subscribed once per attempt. It is a
	 *         {@link FluxOperator} assembled through {@link Flux#onAssembly}, so
	 *         {@code checkpoint()} and {@code Hooks.onOperatorDebug()} see it like any operator
	 */
	@Override
	public Flux<T> apply(Flux<T> source) {
		Objects.requireNonNull(source, "source");
		return FluxGuarded.assemble(source, this);
	}

	/**
	 * The call form: the guard owns the request, so between attempts it can shrink the prompt after a
	 * context-length error ({@link GuardPolicy#truncation()}), send a continuation after a mid-stream
	 * failure ({@code MidStreamPolicy.continueWith}), hand the request to fallback steps and key the
	 * response cache with it. Lazy: nothing is sent until the result is subscribed, and each
	 * subscription is a new request.
	 *
	 * <pre>{@code
	 * Flux<ChatChunk> answer = guard.call(request, client::stream);
	 * }</pre>
	 *
	 * @param request the request as the caller wrote it
	 * @param upstream sends a request and returns its stream; called once per attempt
	 */
	public Flux<T> call(ChatRequest request, Function<ChatRequest, ? extends Publisher<? extends T>> upstream) {
		Objects.requireNonNull(request, "request");
		Objects.requireNonNull(upstream, "upstream");
		return FluxGuardedCall.assemble(request, upstream, this);
	}

	public GuardPolicy policy() {
		return policy;
	}

	public ChunkInspector<T> inspector() {
		return inspector;
	}

	Recovery.Rules rules(boolean callForm) {
		return callForm ? callRules : transformRules;
	}

	// The policy holds these for any chunk type; the guard reads them as its own.

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

	/** The transform form: subscribing creates a {@link GuardedStream} that subscribes the source per attempt. */
	static final class FluxGuarded<T> extends FluxOperator<T, T> {

		private final AiGuard<T> guard;

		FluxGuarded(Flux<? extends T> source, AiGuard<T> guard) {
			super(source);
			this.guard = guard;
		}

		/** {@code Flux.onAssembly} is visible to Flux subclasses only. */
		static <T> Flux<T> assemble(Flux<? extends T> source, AiGuard<T> guard) {
			return onAssembly(new FluxGuarded<>(source, guard));
		}

		@Override
		public void subscribe(CoreSubscriber<? super T> actual) {
			new GuardedStream<T>(request -> source, null, false, guard, actual).start();
		}

		@Override
		@Nullable
		public Object scanUnsafe(Scannable.Attr key) {
			if (key == Scannable.Attr.NAME) {
				return "aiGuard(" + guard.policy.name() + ")";
			}
			return super.scanUnsafe(key);
		}
	}

	/** The call form: a source, since the guard sends the request itself. */
	static final class FluxGuardedCall<T> extends Flux<T> implements Scannable {

		private final ChatRequest request;
		private final Function<ChatRequest, ? extends Publisher<? extends T>> upstream;
		private final AiGuard<T> guard;

		FluxGuardedCall(ChatRequest request, Function<ChatRequest, ? extends Publisher<? extends T>> upstream,
				AiGuard<T> guard) {
			this.request = request;
			this.upstream = upstream;
			this.guard = guard;
		}

		static <T> Flux<T> assemble(ChatRequest request,
				Function<ChatRequest, ? extends Publisher<? extends T>> upstream, AiGuard<T> guard) {
			return onAssembly(new FluxGuardedCall<>(request, upstream, guard));
		}

		@Override
		public void subscribe(CoreSubscriber<? super T> actual) {
			new GuardedStream<T>(upstream, request, true, guard, actual).start();
		}

		@Override
		@Nullable
		public Object scanUnsafe(Scannable.Attr key) {
			if (key == Scannable.Attr.NAME) {
				return "aiGuardCall(" + guard.policy.name() + ")";
			}
			if (key == Scannable.Attr.RUN_STYLE) {
				return Scannable.Attr.RunStyle.SYNC;
			}
			return null;
		}
	}
}
