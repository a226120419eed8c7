/**
 * The subscriber that enforces one attempt's deadlines and its terminal-marker check,
 * {@link dev.aiguard.stall.watch.StallWatch}, shared by the stall operator and the guard's attempt
 * loop. Not exported by the module: applications reach it through {@code Stall.detect} or
 * {@code AiGuard}.
 */
@NullMarked
package dev.aiguard.stall.watch;

import org.jspecify.annotations.NullMarked;
