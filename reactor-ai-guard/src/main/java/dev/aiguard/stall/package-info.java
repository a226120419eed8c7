/**
 * Token-stream stall and completeness detection: first-token, idle and max-duration deadlines
 * with one re-armed timer per subscription, and the terminal-marker check that catches silently
 * truncated answers. Start with {@link dev.aiguard.stall.Stall#detect} and
 * {@link dev.aiguard.stall.StallSpec}.
 */
@NullMarked
package dev.aiguard.stall;

import org.jspecify.annotations.NullMarked;
