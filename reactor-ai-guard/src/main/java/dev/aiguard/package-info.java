/**
 * The composed guard for streaming LLM answers: {@link dev.aiguard.AiGuard},
 * {@link dev.aiguard.GuardPolicy}, {@link dev.aiguard.core.Priority}, {@link dev.aiguard.core.Outcome},
 * {@link dev.aiguard.GuardReport} and {@link dev.aiguard.core.ChunkInspector}.
 *
 * <pre>{@code
 * Flux<ChatChunk> answer = client.stream(request).transform(AiGuard.of(policy));
 * }</pre>
 */
@NullMarked
package dev.aiguard;

import org.jspecify.annotations.NullMarked;
