/**
 * Budgets: counting a prompt's tokens before it is sent, per-request prompt and output caps, the
 * price of an answer, and rate, token and money budgets per tenant and per provider key.
 *
 * <p>Buckets live in a {@link dev.aiguard.budget.BucketStore}: {@link dev.aiguard.budget.LocalBucketStore}
 * keeps them in the process on Bucket4j (an optional dependency, {@code com.bucket4j:bucket4j_jdk17-core});
 * a shared store (Redis) implements the same interface so every instance of a service draws on the
 * same buckets.
 */
@NullMarked
package dev.aiguard.budget;

import org.jspecify.annotations.NullMarked;
