/**
 * The guard for the official OpenAI Java SDK ({@code com.openai:openai-java}):
 * {@link dev.aiguard.openai.OpenAiStreams} turns the SDK's async streaming into a {@code Flux}
 * (of the library's {@code ChatChunk}s or of the SDK's own chunks) and gives the call form its
 * function; {@link dev.aiguard.openai.OpenAiChunks} maps and inspects the SDK's chunks,
 * {@link dev.aiguard.openai.OpenAiRequests} converts requests both ways, and
 * {@link dev.aiguard.openai.OpenAiSdkErrors} maps the SDK's errors to the library's typed
 * provider errors.
 *
 * <pre>{@code
 * OpenAIClientAsync client = OpenAIOkHttpClientAsync.builder().fromEnv().maxRetries(0).build();
 * Flux<ChatChunk> answer = AiGuard.of(policy)
 *     .call(OpenAiRequests.toChatRequest(params), OpenAiStreams.of(client, params));
 * }</pre>
 */
@NullMarked
package dev.aiguard.openai;

import org.jspecify.annotations.NullMarked;
