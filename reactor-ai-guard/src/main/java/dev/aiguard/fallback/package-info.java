/**
 * The degradation ladder: when the realtime model cannot answer, a
 * {@link dev.aiguard.fallback.FallbackChain} tries {@link dev.aiguard.fallback.Fallback} steps
 * best first (another model, the {@link dev.aiguard.fallback.ResponseCache}, a lightweight
 * function, a static answer), and every answer says which {@link dev.aiguard.core.Source} it
 * came from. {@link dev.aiguard.fallback.CacheKeys} and the recorder in {@code fallback.recording}
 * fill the cache with complete realtime answers.
 *
 * <pre>{@code
 * FallbackChain<ChatChunk> chain = FallbackChain.<ChatChunk>builder()
 *     .step(Fallback.cache(ResponseCache.caffeine()))
 *     .step(Fallback.staticText("The assistant is busy right now. Please try again in a minute."))
 *     .timeout(Duration.ofSeconds(1))
 *     .build();
 * }</pre>
 */
@NullMarked
package dev.aiguard.fallback;

import org.jspecify.annotations.NullMarked;

