/**
 * Spring AI adapter: {@link dev.aiguard.springai.AiGuardAdvisor} guards a {@code ChatClient}'s
 * {@code stream()} and {@code call()} with one line,
 *
 * <pre>{@code
 * ChatClient chat = ChatClient.builder(chatModel).defaultAdvisors(AiGuardAdvisor.of(policy)).build();
 * }</pre>
 *
 * {@link dev.aiguard.springai.SpringAiChunks} reads Spring AI's responses for a guard applied by
 * hand, {@link dev.aiguard.springai.SpringAiErrors} types the errors Spring AI's models throw (and
 * scrubs credentials from them), and {@link dev.aiguard.springai.OpenAiHttpCustomizer} fits the HTTP
 * client of Spring AI's OpenAI models to the guard (finish reasons in any case, a read timeout of
 * its own).
 */
@NullMarked
package dev.aiguard.springai;

import org.jspecify.annotations.NullMarked;
