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

	@Nullable
	private final String nearest;

	private final boolean unknown;

	/**
	 * @param property the full property name, e.g. {@code aiguard.policies.chat.stall.idle-timeout}
	 * @param value the bound value ({@code null} when the property is missing)
	 * @param reason why it was refused
	 * @param cause the library's exception, when there is one
	 */
	public InvalidGuardPropertyException(String property, @Nullable Object value, String reason, @Nullable Throwable cause) {
		this((value == null ? "Invalid setting under '" + property + "'"
				: "Invalid property '" + property + "' (value '" + value + "')") + ": " + reason, property, value, reason,
				null, false, cause);
	}

	private InvalidGuardPropertyException(String message, String property, @Nullable Object value, String reason,
			@Nullable String nearest, boolean unknown, @Nullable Throwable cause) {
		super(message, cause);
		this.property = Objects.requireNonNull(property, "property");
		this.value = value;
		this.reason = Objects.requireNonNull(reason, "reason");
		this.nearest = nearest;
		this.unknown = unknown;
	}

	/**
	 * A key under {@code aiguard.*} that no bound class knows (a misspelling Boot would ignore).
	 *
	 * <pre>
	 * InvalidGuardPropertyException.unknown("aiguard.policies.chat.stall.idle-timout",
	 *     "aiguard.policies.chat.stall.idle-timeout", "no such property; did you mean ...")
	 * </pre>
	 *
	 * @param property the unknown key as set
	 * @param nearest the known key nearest to it, or {@code null} when the level takes a value and no key
	 * @param reason what is wrong and where the key was set
	 * @return the exception; its value is never shown (the key may hold a secret)
	 */
	public static InvalidGuardPropertyException unknown(String property, @Nullable String nearest, String reason) {
		return new InvalidGuardPropertyException("Unknown property '" + property + "': " + reason, property, null, reason,
				nearest, true, null);
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

	/** @return whether no bound class knows the property (see {@link #unknown}) */
	public boolean isUnknown() {
		return unknown;
	}

	/** @return the known property nearest to an unknown one, or {@code null} */
	public @Nullable String nearest() {
		return nearest;
	}
}
