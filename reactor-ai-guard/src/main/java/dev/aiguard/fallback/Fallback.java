package dev.aiguard.fallback;

import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;

import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import dev.aiguard.core.Source;

/**
 * One rung of the degradation ladder: a way to answer a request when the realtime model cannot,
 * tagged with the {@link Source} the answer will be reported as.
 *
 * <pre>{@code
 * FallbackChain<ChatChunk> chain = FallbackChain.<ChatChunk>builder()
 *     .step(Fallback.model(req -> smallModel.stream(req), AiGuard.of(smallModelPolicy)))
 *     .step(Fallback.cache(cache))
 *     .step(Fallback.lightweight(req -> faq.answer(req)))
 *     .step(Fallback.staticText("The assistant is busy right now. Please try again in a minute."))
 *     .build();
 * }</pre>
 *
 * A step fails by signalling an error or by completing before its first element; the chain then
 * tries the next one. An implementation of this interface must be stateless or thread-safe: one
 * step serves every request of its chain.
 *
 * @param <T> the chunk type, the same as the realtime stream's
 */
public interface Fallback<T> {

	/** @return how an answer from this step is reported; never {@link Source#REALTIME} */
	Source source();

	/**
	 * @return the class of the chunks this step answers with, when it is known ({@code Object.class}
	 *         when not): the guard refuses, when it is built, a chain whose known type does not fit
	 *         its own chunk type
	 */
	default Class<?> chunkType() {
		return Object.class;
	}

	/**
	 * @param request what is known about the request being answered
	 * @return the answer; subscribed at most once per request, errors or empty when this step
	 *         cannot answer
	 */
	Flux<T> answer(FallbackRequest request);

	/**
	 * @return whether {@link #answer} or the stream it returns may block the calling thread; such a
	 *         step is called and subscribed on the blocking scheduler the chain is walked with,
	 *         never on an event loop
	 */
	default boolean mayBlock() {
		return false;
	}

	/**
	 * Another model or provider ({@link Source#FALLBACK_MODEL}). Needs the {@link ChatRequest}:
	 * in the transform form, where the guard never sees one, this step fails and the ladder moves on.
	 *
	 * @param factory opens the answer stream for a request; called when the step is subscribed
	 */
	static <T> Fallback<T> model(Function<? super ChatRequest, ? extends Publisher<T>> factory) {
		return new FallbackSteps.ModelStep<>(FallbackSteps.require("factory", factory), null);
	}

	/**
	 * Another model guarded by its own operator, typically an {@code AiGuard} with a breaker of its
	 * own, so an outage of the fallback model opens that breaker and not the main one.
	 *
	 * @param factory opens the answer stream for a request
	 * @param guard applied to every stream the factory opens
	 */
	static <T> Fallback<T> model(Function<? super ChatRequest, ? extends Publisher<T>> factory,
			Function<? super Flux<T>, ? extends Publisher<T>> guard) {
		return new FallbackSteps.ModelStep<>(FallbackSteps.require("factory", factory),
				FallbackSteps.require("guard", guard));
	}

	/**
	 * Another model endpoint of a {@link BreakerTree} ({@link Source#FALLBACK_MODEL}): the request's
	 * {@link FallbackRequest#breakerPath()} says which endpoint failed or refused, and this step goes
	 * to a CLOSED sibling under the same provider first (when that provider is CLOSED), then to an
	 * endpoint under another CLOSED provider ({@link BreakerTree#alternativesTo}). The call takes a
	 * permit on the chosen path at the request's priority (a refused path is skipped) and settles it
	 * once: {@code SUCCESS} on completion after at least one chunk (time to first chunk measured on
	 * the tree's clock), {@code INCOMPLETE} on an empty completion, {@code FAILURE} on an error,
	 * {@code CANCELLED} on a cancel (the ladder's step timeout included). It fails, and the ladder
	 * moves on, without a {@code ChatRequest}, without a path of this tree, or with no alternative
	 * left.
	 *
	 * <pre>{@code
	 * Fallback.siblings(tree, (path, req) -> client.stream(req.withModel(path.endpoint().name())))
	 * }</pre>
	 *
	 * @param tree the tree whose endpoints answer
	 * @param client opens the answer stream of an endpoint for a request
	 */
	static <T> Fallback<T> siblings(BreakerTree tree,
			BiFunction<? super BreakerPath, ? super ChatRequest, ? extends Publisher<T>> client) {
		return new FallbackSteps.SiblingStep<>(FallbackSteps.require("tree", tree),
				FallbackSteps.require("client", client));
	}

	/**
	 * Replays the answer a {@link ResponseCache} holds under the request's
	 * {@link FallbackRequest#cacheKey()} ({@link Source#CACHE}). A miss, a request without key, a
	 * failing or a slow lookup all make this step fail. Blocking exactly when the cache says it
	 * {@linkplain ResponseCache#mayBlock() may block}.
	 */
	static <T> Fallback<T> cache(ResponseCache<T> cache) {
		return new FallbackSteps.CacheStep<>(FallbackSteps.require("cache", cache));
	}

	/**
	 * A cheap local answer ({@link Source#LIGHTWEIGHT}): keyword FAQ matching, rules, a template.
	 * Treated as blocking (it runs on the blocking scheduler); use
	 * {@link #lightweight(Function, boolean)} to declare a function that never blocks.
	 *
	 * @param function called when the step is subscribed; return {@code Flux.empty()} to pass
	 */
	static <T> Fallback<T> lightweight(Function<? super FallbackRequest, ? extends Publisher<T>> function) {
		return lightweight(function, true);
	}

	/**
	 * @param function called when the step is subscribed; return {@code Flux.empty()} to pass
	 * @param mayBlock whether the function (or its stream) may block
	 */
	static <T> Fallback<T> lightweight(Function<? super FallbackRequest, ? extends Publisher<T>> function,
			boolean mayBlock) {
		return new FallbackSteps.LightweightStep<>(FallbackSteps.require("function", function), mayBlock);
	}

	/**
	 * A fixed answer ({@link Source#STATIC}) that cannot fail: the list is copied now and replayed
	 * as it is. It must be the last step of a chain.
	 *
	 * @param chunks the answer, at least one chunk, no {@code null}
	 * @throws IllegalArgumentException naming {@code chunks} when empty or holding {@code null}
	 */
	static <T> Fallback<T> staticAnswer(List<? extends T> chunks) {
		return new FallbackSteps.StaticStep<>(FallbackSteps.copyChunks(chunks));
	}

	/**
	 * A fixed text as a complete {@link ChatChunk} answer: one token chunk per word (each keeping the
	 * whitespace that follows it, so a UI types it out like a model answer), then
	 * {@code finish("stop")} and {@code done()}.
	 *
	 * @throws IllegalArgumentException naming {@code text} when it is {@code null} or blank
	 */
	static Fallback<ChatChunk> staticText(String text) {
		return new FallbackSteps.StaticStep<>(FallbackSteps.textChunks(text));
	}
}
