/**
 * Prompt shrinking for context-length errors: {@link dev.aiguard.truncation.TokenCounter}
 * (a characters/4 estimate, or exact on jtokkit), {@link dev.aiguard.truncation.PromptTruncator}
 * (keep the last turns, or fit a token budget), {@link dev.aiguard.truncation.TruncationSpec}
 * (budget from the provider's limit, at most N rounds, every round smaller) and
 * {@link dev.aiguard.truncation.PromptTooLargeException}.
 *
 * <pre>{@code
 * TruncationSpec truncation = TruncationSpec.defaults().counter(TokenCounter.jtokkit("o200k_base"));
 * ChatRequest smaller = truncation.shrink(request, OptionalInt.of(8192), OptionalInt.of(9013)).request();
 * }</pre>
 *
 * See {@code docs/retry-and-truncation.md}.
 */
@NullMarked
package dev.aiguard.truncation;

import org.jspecify.annotations.NullMarked;
