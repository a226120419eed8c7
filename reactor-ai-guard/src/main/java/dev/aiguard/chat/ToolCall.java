package dev.aiguard.chat;

import java.util.Objects;

/**
 * A complete tool call an assistant message made.
 *
 * @param id the provider's call id, which the tool's result message refers to
 * @param name the function name
 * @param arguments the arguments as JSON text
 */
public record ToolCall(String id, String name, String arguments) {

	public ToolCall {
		Objects.requireNonNull(id, "id");
		Objects.requireNonNull(name, "name");
		arguments = arguments == null ? "" : arguments;
	}
}
