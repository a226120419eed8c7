package dev.aiguard.chat;

import org.jspecify.annotations.Nullable;

/**
 * A piece of a tool call as it streams: the first delta of a call carries its id and name, the
 * following ones pieces of its JSON arguments.
 *
 * @param index which call of the answer this delta belongs to
 * @param id the call id, or {@code null} after the first delta
 * @param name the function name, or {@code null} after the first delta
 * @param argumentsDelta the next piece of the arguments, possibly empty
 */
public record ToolCallDelta(int index, @Nullable String id, @Nullable String name, String argumentsDelta) {
}
