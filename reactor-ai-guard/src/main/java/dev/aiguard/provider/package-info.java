/**
 * Provider wire formats: {@link dev.aiguard.provider.OpenAiChunkCodec} and
 * {@link dev.aiguard.provider.AnthropicChunkCodec} turn stream events into
 * {@link dev.aiguard.chat.ChatChunk}s, {@link dev.aiguard.provider.ProviderErrors} classifies
 * failures into typed {@link dev.aiguard.provider.ProviderException}s and outcomes,
 * {@link dev.aiguard.provider.OpenAiCompatibleClient} streams from any OpenAI-compatible server and
 * {@link dev.aiguard.provider.AnthropicClient} from the Anthropic Messages API, both on Reactor Netty.
 *
 * <pre>{@code
 * Flux<ChatChunk> answer = OpenAiCompatibleClient.builder("http://127.0.0.1:8000/v1").model("m").build()
 *     .stream(request)
 *     .transform(AiGuard.of(GuardPolicy.builder("chat").errorClassifier(ErrorClassifier::outcomeOf).build()));
 *
 * Flux<ChatChunk> claude = AnthropicClient.builder("https://api.anthropic.com/v1")
 *     .apiKey(System.getenv("ANTHROPIC_API_KEY")).model("claude-haiku-4-5").build()
 *     .stream(request)
 *     .transform(AiGuard.of(policy));
 * }</pre>
 *
 * The codecs and error-body parsing need Jackson (an optional dependency), the clients Reactor
 * Netty (optional too); the exceptions and {@code ProviderErrors.isRetryable}
 * need neither.
 */
@NullMarked
package dev.aiguard.provider;

import org.jspecify.annotations.NullMarked;
