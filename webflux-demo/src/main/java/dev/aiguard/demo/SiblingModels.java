package dev.aiguard.demo;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.TimeoutException;

import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StreamStalledException;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * The client of the ladder's {@code Fallback.siblings} step: asks the mock for the model of a
 * sibling endpoint of the breaker tree ({@code mock-small} when {@code mock-large} cannot answer),
 * with the request as the guard last sent it. The step takes the sibling's permit and settles it;
 * this client adds what the guard's own deadlines do for the primary model and the ladder's step
 * timeout does not:
 * <ul>
 * <li>chunks before the first content chunk are held back, so the step's timeout runs to the first
 * token (not to the role announcement the mock sends at once);</li>
 * <li>an answer without content, or one that ends without its terminal marker, ends with an
 * {@link IncompleteStreamException}: before the first token the step fails and the ladder goes on
 * (as the policy's empty-answer rule does for the primary), after it the answer ends as an error;</li>
 * <li>after the first token, a gap longer than the policy's idle timeout ends the answer with a
 * {@link StreamStalledException} ({@code IDLE}).</li>
 * </ul>
 * Each of these is a failure for the sibling's breaker.
 * The model that gave the first token is written into the request's {@link AnsweringModel}, so the
 * {@code done} event can say which model answered.
 */
final class SiblingModels {

	private final ModelUpstream upstream;
	private final Duration idleTimeout;

	/** @param idleTimeout the policy's {@code stall.idle-timeout} */
	SiblingModels(ModelUpstream upstream, Duration idleTimeout) {
		this.upstream = Objects.requireNonNull(upstream, "upstream");
		this.idleTimeout = Objects.requireNonNull(idleTimeout, "idleTimeout");
	}

	/** @return the sibling's answer to {@code request}, asked under the sibling endpoint's model name */
	Flux<ChatChunk> stream(BreakerPath sibling, ChatRequest request) {
		String model = sibling.endpoint().name();
		return Flux.deferContextual(context -> {
			AnsweringModel answering = AnsweringModel.of(context);
			long[] tokens = {0}; // one subscription: its signals never overlap
			boolean[] terminal = {false};
			return upstream.stream(request.withModel(model))
				.skipWhile(chunk -> !chunk.hasContent())
				.timeout(Mono.never(), chunk -> Mono.delay(idleTimeout))
				.onErrorMap(TimeoutException.class,
						e -> new StreamStalledException(StallPhase.IDLE, tokens[0], idleTimeout))
				.doOnNext(chunk -> {
					if (chunk.hasContent() && tokens[0]++ == 0 && answering != null) {
						answering.set(model);
					}
					terminal[0] |= chunk.terminal();
				})
				.concatWith(Mono.defer(() -> terminal[0] ? Mono.<ChatChunk>empty()
						: Mono.error(new IncompleteStreamException(tokens[0]))));
		});
	}

	/**
	 * The model that answered a request through the ladder's {@code FALLBACK_MODEL} step; one per
	 * request, in its Reactor {@code Context}.
	 */
	static final class AnsweringModel {

		private static final Object KEY = AnsweringModel.class;

		@Nullable
		private volatile String model;

		/** @return the holder of the request whose context this is, or {@code null} */
		@Nullable
		static AnsweringModel of(ContextView context) {
			return context.getOrDefault(KEY, null);
		}

		/** @return {@code context} with this holder in it */
		Context into(Context context) {
			return context.put(KEY, this);
		}

		void set(String answeredBy) {
			this.model = answeredBy;
		}

		/** @return the sibling model that answered, or {@code null} when none did */
		@Nullable
		String get() {
			return model;
		}
	}
}
