/**
 * The vocabulary every other package of the library speaks, and nothing else: request
 * {@link dev.aiguard.core.Priority}, attempt {@link dev.aiguard.core.Outcome}, answer
 * {@link dev.aiguard.core.Source}, the {@link dev.aiguard.core.StallPhase} a deadline passed in,
 * {@link dev.aiguard.core.ChunkInspector} for any chunk type, {@link dev.aiguard.core.RetryHint}
 * for errors that know whether a retry may help, {@link dev.aiguard.core.OutputLimits} and
 * {@link dev.aiguard.core.CallbackException}.
 *
 * <p>This package depends on no other package of the library; an ArchUnit test keeps it so.
 */
@NullMarked
package dev.aiguard.core;

import org.jspecify.annotations.NullMarked;
