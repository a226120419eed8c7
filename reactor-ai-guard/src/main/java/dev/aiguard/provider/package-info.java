/**
 * Provider wire formats: {@link dev.aiguard.provider.OpenAiChunkCodec} and
 * {@link dev.aiguard.provider.AnthropicChunkCodec} turn stream events into
 * {@link dev.aiguard.chat.ChatChunk}s, {@link dev.aiguard.provider.ProviderErrors} classifies
 * failures into typed {@link dev.aiguard.provider.ProviderException}s and outcomes, and
 * {@link dev.aiguard.provider.OpenAiCompatibleClient} streams from any OpenAI-compatible server on
 * Reactor Netty.
 *
 * <pre>{@code
 * Flux<ChatChunk> answer = OpenAiCompatibleClient.builder("http://127.0.0.1:8000/v1").model("m").build()
 *     .stream(request)
 *     .transform(AiGuard.of(GuardPolicy.builder("chat").errorClassifier(ErrorClassifier::outcomeOf).build()));
 * }</pre>
 *
 * The codecs and error-body parsing need Jackson (an optional dependency), the client Reactor
 * Netty (optional too); the exceptions and {@code ProviderErrors.isRetryable}
 * need neither.
 */
package dev.aiguard.provider;
