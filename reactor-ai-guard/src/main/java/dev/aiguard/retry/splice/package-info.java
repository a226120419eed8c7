/**
 * Joining a continuation onto the text the user already saw without repeating it:
 * {@link dev.aiguard.retry.splice.OverlapSplicer}. Not exported by the module: continuation
 * strategies use it on the user's behalf.
 */
@NullMarked
package dev.aiguard.retry.splice;

import org.jspecify.annotations.NullMarked;
