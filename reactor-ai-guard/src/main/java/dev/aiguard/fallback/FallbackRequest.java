package dev.aiguard.fallback;

import java.util.Objects;

import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatRequest;
import org.jspecify.annotations.Nullable;

/**
 * What a fallback step knows about the request it answers instead of the realtime model.
 *
 * <pre>{@code
 * Fallback<ChatChunk> faq = Fallback.lightweight(req ->
 *     req.chatRequest() == null ? Flux.empty() : faqIndex.answer(req.chatRequest().lastMessage().content()));
 * }</pre>
 *
 * @param chatRequest the request as the caller made it (call form), or {@code null} when the guard
 *        was applied with {@code transform} and never saw it
 * @param cause why the realtime answer failed (a {@code BreakerOpenException}, an
 *        {@code AdmissionRejectedException}, the last retry's error...)
 * @param trigger the kind of failure that entered the ladder
 * @param priority the priority the request runs at
 * @param cacheKey the key under which a {@link ResponseCache} holds the answer to this request, or
 *        {@code null} when the request has none (cache steps then miss)
 * @param breakerPath the path through a breaker tree the realtime attempts took (which endpoint
 *        failed or refused), or {@code null} when the policy has no tree; a
 *        {@link Fallback#siblings} step starts from it
 */
public record FallbackRequest(@Nullable ChatRequest chatRequest, Throwable cause, FallbackTrigger trigger,
		Priority priority, @Nullable Object cacheKey, @Nullable BreakerPath breakerPath) {

	public FallbackRequest {
		Objects.requireNonNull(cause, "cause");
		Objects.requireNonNull(trigger, "trigger");
		Objects.requireNonNull(priority, "priority");
	}

	/** A request outside a breaker tree: {@link #breakerPath()} is {@code null}. */
	public FallbackRequest(@Nullable ChatRequest chatRequest, Throwable cause, FallbackTrigger trigger,
			Priority priority, @Nullable Object cacheKey) {
		this(chatRequest, cause, trigger, priority, cacheKey, null);
	}
}
