package dev.aiguard;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Function;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.fallback.FallbackChain;
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

	/** Swapped only by this guard's {@link GuardControl}, one CAS per change in force. */
	@SuppressWarnings("rawtypes")
	static final AtomicReferenceFieldUpdater<AiGuard, PolicyView> VIEW =
			AtomicReferenceFieldUpdater.newUpdater(AiGuard.class, PolicyView.class, "view");

	private final ChunkInspector<T> inspector;
	/**
	 * The policy in force, as requests read it: read once when a request is subscribed. Fixed for
	 * a guard made by {@code of}; replaced by its {@link GuardControl} for one made by {@code live}.
	 */
	volatile PolicyView<T> view;

	private AiGuard(GuardPolicy policy, ChunkInspector<T> inspector) {
		this.inspector = inspector;
		this.view = new PolicyView<>(policy, 0L, null);
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
		checkFits(policy, inspector);
		policy.applyLaneSizes(null);
		return new AiGuard<>(policy, inspector);
	}

	/**
	 * A guard whose policy can be replaced while it serves requests, for the library's own
	 * {@link ChatChunk} streams.
	 *
	 * <pre>{@code
	 * GuardControl<ChatChunk> control = AiGuard.live(policy);
	 * AiGuard<ChatChunk> guard = control.guard();             // share it like any guard
	 * control.update("ops:alice", b -> b.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(3))));
	 * }</pre>
	 *
	 * @return the control of a new guard that starts with {@code policy}
	 */
	public static GuardControl<ChatChunk> live(GuardPolicy policy) {
		return live(policy, ChatChunk.inspector());
	}

	/**
	 * @param inspector tells the guard which chunks are content, heartbeats and terminal
	 * @return the control of a new guard for any chunk type that starts with {@code policy}
	 */
	public static <T> GuardControl<T> live(GuardPolicy policy, ChunkInspector<T> inspector) {
		return new GuardControl<>(of(policy, inspector));
	}

	/** Refuses a policy whose components produce chunks the inspector cannot read. */
	static void checkFits(GuardPolicy policy, ChunkInspector<?> inspector) {
		Class<?> type = inspector.chunkType();
		FallbackChain<?> chain = policy.fallback();
		if (chain != null) {
			requireFits(type, chain.chunkType(), "fallback chain", policy);
		}
		requireFits(type, policy.midStream().chunkType(), "mid-stream policy", policy);
		if (policy.responseCache() != null) {
			requireFits(type, policy.responseCache().chunkType(), "response cache", policy);
		}
		if (policy.validates() && type != Object.class && !type.isAssignableFrom(ChatChunk.class)) {
			throw new IllegalArgumentException("policy '" + policy.name() + "': output validators read "
					+ ChatChunk.class.getName() + " answers but the guard's inspector reads " + type.getName());
		}
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

	/** @return the policy in force: the one the next request starts with */
	public GuardPolicy policy() {
		return view.policy;
	}

	public ChunkInspector<T> inspector() {
		return inspector;
	}

	/** @return the policy in force as requests read it */
	PolicyView<T> view() {
		return view;
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
				return "aiGuard(" + guard.policy().name() + ")";
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
				return "aiGuardCall(" + guard.policy().name() + ")";
			}
			if (key == Scannable.Attr.RUN_STYLE) {
				return Scannable.Attr.RunStyle.SYNC;
			}
			return null;
		}
	}
}
