package dev.aiguard.boot.autoconfigure;

import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * An {@code aiguard.*} property the library refused. Startup fails with it, and
 * {@link InvalidGuardPropertyFailureAnalyzer} turns it into Boot's "APPLICATION FAILED TO START"
 * report naming the property, the value and why.
 */
public class InvalidGuardPropertyException extends IllegalArgumentException {

	private static final long serialVersionUID = 1L;

	private final String property;

	@Nullable
	private final transient Object value;

	private final String reason;

	/**
	 * @param property the full property name, e.g. {@code aiguard.policies.chat.stall.idle-timeout}
	 * @param value the bound value ({@code null} when the property is missing)
	 * @param reason why it was refused
	 * @param cause the library's exception, when there is one
	 */
	public InvalidGuardPropertyException(String property, @Nullable Object value, String reason, @Nullable Throwable cause) {
		super((value == null ? "Invalid setting under '" + property + "'"
				: "Invalid property '" + property + "' (value '" + value + "')") + ": " + reason, cause);
		this.property = Objects.requireNonNull(property, "property");
		this.value = value;
		this.reason = Objects.requireNonNull(reason, "reason");
	}

	/** @return the full property name */
	public String property() {
		return property;
	}

	/** @return the value that was refused, or {@code null} when it was missing */
	public @Nullable Object value() {
		return value;
	}

	/** @return why it was refused */
	public String reason() {
		return reason;
	}
}
