/**
 * Output validation: a stream that ends well can still carry a bad answer (empty, filtered,
 * looping, not the JSON that was asked for). An {@link dev.aiguard.validation.OutputValidator}
 * judges the assembled answer when an attempt ends; a
 * {@link dev.aiguard.validation.StreamingValidator} watches each chunk and can cut the stream
 * while it runs. A rejected attempt ends with an {@link dev.aiguard.validation.InvalidOutputException}
 * and the outcome {@link dev.aiguard.core.Outcome#INVALID}, which the breaker counts as a
 * failure and the guard retries or sends down the fallback ladder like any failed attempt.
 * {@link dev.aiguard.validation.Validators} builds the validators the library ships.
 *
 * <pre>{@code
 * GuardPolicy policy = GuardPolicy.builder("chat")
 *     .validate(Validators.emptyAnswer(), Validators.finishReason())
 *     .validateStreaming(RepetitionDetector.defaults())
 *     .build();
 * }</pre>
 *
 * <p>This package uses {@code core} and {@code chat} only.
 */
@NullMarked
package dev.aiguard.validation;

import org.jspecify.annotations.NullMarked;
