package dev.aiguard.core;

import java.util.Locale;
import java.util.Objects;

import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * How urgent a guarded call is. Lower ordinal = more urgent.
 *
 * <p>The priority travels in the Reactor {@link Context} under {@link #CONTEXT_KEY}, so a WebFlux
 * handler sets it once and every guarded call below inherits it:
 *
 * <pre>{@code
 * client.stream(request)
 *     .transform(AiGuard.of(policy))
 *     .contextWrite(Priority.P0.asContext());
 * }</pre>
 */
public enum Priority {

	/** Interactive: a person is watching the answer appear. */
	P0,
	/** Assistive: suggestions, autocomplete, background help for a user session. */
	P1,
	/** Batch: summarisation, indexing, anything nobody waits on. */
	P2;

	/** The Reactor {@link Context} key that carries a {@link Priority}. */
	public static final Object CONTEXT_KEY = Priority.class.getName();

	private static final Priority[] VALUES = values();

	/** @return a context holding this priority, for {@code contextWrite(...)}. */
	public Context asContext() {
		return Context.of(CONTEXT_KEY, this);
	}

	/** @return whether this priority is more urgent than {@code other}. */
	public boolean isHigherThan(Priority other) {
		return ordinal() < other.ordinal();
	}

	/** @return the next more urgent priority, or this one when it is already {@link #P0}. */
	public Priority promoted() {
		return this == P0 ? P0 : VALUES[ordinal() - 1];
	}

	/**
	 * Reads the priority from a context.
	 *
	 * @param context the subscriber's context
	 * @param fallback used when the context has no priority
	 * @return the priority found, else {@code fallback}
	 * @throws IllegalArgumentException when the key holds something that is not a priority
	 */
	public static Priority from(ContextView context, Priority fallback) {
		Object value = context.getOrDefault(CONTEXT_KEY, null);
		if (value == null) {
			return fallback;
		}
		if (value instanceof Priority) {
			return (Priority) value;
		}
		if (value instanceof CharSequence) {
			return parse(value.toString());
		}
		throw new IllegalArgumentException("context key " + CONTEXT_KEY + " holds " + value.getClass().getName()
				+ ", expected " + Priority.class.getName());
	}

	/**
	 * Parses {@code P0}, {@code p1}, {@code P2} (case-insensitive, surrounding blanks ignored).
	 *
	 * @throws IllegalArgumentException naming the value when it is not a priority
	 */
	public static Priority parse(String text) {
		Objects.requireNonNull(text, "text");
		String t = text.trim().toUpperCase(Locale.ROOT);
		for (Priority p : VALUES) {
			if (p.name().equals(t)) {
				return p;
			}
		}
		throw new IllegalArgumentException("unknown priority '" + text + "': expected P0, P1 or P2");
	}
}
