/**
 * Recovery for token streams without duplicates: {@link dev.aiguard.retry.RetryRules} (which
 * errors, how many tries, backoff with full jitter and {@code Retry-After}),
 * {@link dev.aiguard.retry.RetryBudget} (a shared cap on retries as a fraction of traffic),
 * {@link dev.aiguard.retry.MidStreamPolicy} (what happens after the first token: fail, notice or
 * continue), {@link dev.aiguard.retry.ContinuationStrategy} and the overlap splicer of
 * {@code retry.splice} (continuing a cut answer seamlessly).
 *
 * <pre>{@code
 * RetryRules retry = RetryRules.defaults();                 // 3 tries, 0.5 s .. 8 s, full jitter
 * RetryBudget budget = RetryBudget.create();               // one per service, shared
 * MidStreamPolicy<ChatChunk> midStream = MidStreamPolicy.fail();
 * }</pre>
 *
 * See {@code docs/retry-and-truncation.md}.
 */
@NullMarked
package dev.aiguard.retry;

import org.jspecify.annotations.NullMarked;
