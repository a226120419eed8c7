/**
 * The guard for LangChain4j: a {@code StreamingChatModel}'s callbacks as a {@code Flux<ChatChunk>}.
 *
 * <pre>{@code
 * StreamingChatModel model = OpenAiStreamingChatModel.builder()
 *     .httpClientBuilder(AbortableHttpClientBuilder.create())
 *     .baseUrl(baseUrl).apiKey(key).modelName("gpt-4o-mini")
 *     .build();
 * Flux<ChatChunk> answer = AiGuard.of(policy).call(request, LangChain4jStreams.of(model));
 * }</pre>
 *
 * {@link dev.aiguard.langchain4j.LangChain4jStreams} is the bridge;
 * {@link dev.aiguard.langchain4j.AbortableHttpClientBuilder} is LangChain4j's JDK HTTP client made
 * cancellable before the first token and able to keep the headers of error responses.
 */
@NullMarked
package dev.aiguard.langchain4j;

import org.jspecify.annotations.NullMarked;
