package dev.aiguard.test;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * A chat model without HTTP: a function from {@link ChatRequest} to the {@link ChatChunk}s the
 * library's own client would produce, played from {@link ModelScript}s, with every delay a Reactor
 * timer. It plugs in wherever a client's {@code stream} method does, the guard's call form first:
 *
 * <pre>{@code
 * ScriptedModel model = ScriptedModel.of(ModelScript.answer("Hello there"));
 * model.enqueue(ModelScript.answer("Hello there").stallAfter(1));   // the first call stalls, the retry answers
 *
 * StepVerifier.withVirtualTime(() -> AiGuard.of(policy).call(request, model))
 *     .thenAwait(Duration.ofSeconds(30))
 *     .expectNextCount(6)
 *     .verifyComplete();
 * assertThat(model.requests()).hasSize(2);
 * }</pre>
 *
 * <ul>
 * <li>Each subscription is one call: it records the request and takes the next script queued with
 * {@link #enqueue}, else the default script. Resubscribing the same {@code Flux} (a retry in the
 * transform form) is a new call.</li>
 * <li>Delays run on the scheduler given to {@link #of(ModelScript, Scheduler)}, else on
 * {@link Schedulers#parallel()} looked up at subscription, so {@code StepVerifier.withVirtualTime}
 * replaces it.</li>
 * <li>A stalled call never ends by itself; cancelling it is counted in {@link #cancellations()}.</li>
 * </ul>
 */
public final class ScriptedModel implements Function<ChatRequest, Flux<ChatChunk>> {

	private final ModelScript defaultScript;
	@Nullable
	private final Scheduler timer;
	private final ConcurrentLinkedQueue<ModelScript> queued = new ConcurrentLinkedQueue<>();
	private final CopyOnWriteArrayList<ChatRequest> requests = new CopyOnWriteArrayList<>();
	private final AtomicLong cancellations = new AtomicLong();

	private ScriptedModel(ModelScript defaultScript, @Nullable Scheduler timer) {
		this.defaultScript = defaultScript;
		this.timer = timer;
	}

	/**
	 * @param defaultScript what every call does unless a queued script says otherwise
	 * @return a model timing its delays on {@link Schedulers#parallel()} (virtual time in a
	 *         {@code StepVerifier.withVirtualTime})
	 */
	public static ScriptedModel of(ModelScript defaultScript) {
		return new ScriptedModel(Objects.requireNonNull(defaultScript, "defaultScript"), null);
	}

	/**
	 * @param defaultScript what every call does unless a queued script says otherwise
	 * @param timer where the delays run, e.g. a {@code VirtualTimeScheduler} the test holds
	 * @return a model timing its delays on {@code timer}
	 */
	public static ScriptedModel of(ModelScript defaultScript, Scheduler timer) {
		return new ScriptedModel(Objects.requireNonNull(defaultScript, "defaultScript"),
				Objects.requireNonNull(timer, "timer"));
	}

	/**
	 * Queues one script per coming call, in order; once they are used up, calls get the default
	 * script again. Concurrent calls each take a different script.
	 *
	 * @return this model
	 */
	public ScriptedModel enqueue(ModelScript... next) {
		Objects.requireNonNull(next, "next");
		for (int i = 0; i < next.length; i++) {
			if (next[i] == null) {
				throw new IllegalArgumentException("next[" + i + "] must not be null");
			}
		}
		queued.addAll(List.of(next));
		return this;
	}

	/** @return the answer to {@code request}; nothing happens before subscription */
	@Override
	public Flux<ChatChunk> apply(ChatRequest request) {
		Objects.requireNonNull(request, "request");
		return Flux.defer(() -> {
			requests.add(request);
			ModelScript next = queued.poll();
			ModelScript script = next != null ? next : defaultScript;
			return script.play(request, timer != null ? timer : Schedulers.parallel());
		}).doOnCancel(cancellations::incrementAndGet);
	}

	/** @return the request of every call so far, in the order the calls were subscribed */
	public List<ChatRequest> requests() {
		return List.copyOf(requests);
	}

	/**
	 * @return the request of the latest call
	 * @throws IllegalStateException when the model has not been called
	 */
	public ChatRequest lastRequest() {
		List<ChatRequest> all = requests();
		if (all.isEmpty()) {
			throw new IllegalStateException("the scripted model has not been called");
		}
		return all.get(all.size() - 1);
	}

	/** @return how many calls have been subscribed */
	public int calls() {
		return requests.size();
	}

	/** @return how many calls their subscriber cancelled before they ended */
	public long cancellations() {
		return cancellations.get();
	}

	/** @return the scripts queued with {@link #enqueue} that no call has taken yet */
	public int queued() {
		return queued.size();
	}
}
