package dev.aiguard;

import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import org.reactivestreams.Publisher;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import dev.aiguard.core.Priority;
import dev.aiguard.core.ChunkInspector;

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

	private AiGuard(GuardPolicy policy, ChunkInspector<T> inspector) {
		this.policy = policy;
		this.inspector = inspector;
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
		return new AiGuard<>(policy, inspector);
	}

	/** @return the guarded stream: {@code source} subscribed once per attempt */
	@Override
	public Flux<T> apply(Flux<T> source) {
		Objects.requireNonNull(source, "source");
		return new FluxGuarded<>(source, this);
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
		AiGuard<T> self = this;
		return new Flux<T>() {
			@Override
			public void subscribe(CoreSubscriber<? super T> actual) {
				new GuardedStream<T>(upstream, request, true, self, actual).start();
			}
		};
	}

	public GuardPolicy policy() {
		return policy;
	}

	public ChunkInspector<T> inspector() {
		return inspector;
	}

	/** The assembled operator; subscribing creates a {@link GuardedStream}. */
	static final class FluxGuarded<T> extends Flux<T> {

		private final Flux<T> source;
		private final AiGuard<T> guard;

		FluxGuarded(Flux<T> source, AiGuard<T> guard) {
			this.source = source;
			this.guard = guard;
		}

		@Override
		public void subscribe(CoreSubscriber<? super T> actual) {
			new GuardedStream<T>(request -> source, null, false, guard, actual).start();
		}
	}
}
