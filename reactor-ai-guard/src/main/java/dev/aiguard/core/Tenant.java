package dev.aiguard.core;

import java.util.Objects;
import java.util.Optional;

import reactor.util.context.Context;
import reactor.util.context.ContextView;

/**
 * Who a guarded call is made for: a customer, a team, an API consumer. Like {@link Priority} it
 * travels in the Reactor {@link Context}, under {@link #CONTEXT_KEY}, so the edge of a service sets
 * it once and every guarded call below can read it (adapters pass it on; budgets and reports key on
 * it).
 *
 * <pre>{@code
 * chat(request).contextWrite(Tenant.of("acme").asContext());
 * }</pre>
 *
 * @param id 1 to 128 characters, none of them a control character, a blank (any Unicode space: also
 *        U+00A0, U+2007, U+202F, U+3000) or an invisible format character (U+200B, U+FEFF)
 */
public record Tenant(String id) {

	/** The Reactor {@link Context} key that carries a {@link Tenant}. */
	public static final Object CONTEXT_KEY = Tenant.class.getName();

	/** The longest id accepted: ids become metric tags and map keys. */
	public static final int MAX_LENGTH = 128;

	public Tenant {
		Objects.requireNonNull(id, "id");
		if (id.isEmpty() || id.length() > MAX_LENGTH) {
			throw new IllegalArgumentException("tenant id must have 1 to " + MAX_LENGTH + " characters, had "
					+ id.length());
		}
		for (int i = 0; i < id.length(); i++) {
			char c = id.charAt(i);
			if (Character.isISOControl(c) || Character.isWhitespace(c) || Character.isSpaceChar(c)
					|| Character.getType(c) == Character.FORMAT) {
				throw new IllegalArgumentException("tenant id must not contain blanks or control characters, was '"
						+ id.replaceAll("\\p{Cntrl}", "?") + "'");
			}
		}
	}

	/** @return the tenant with this id, checked as the constructor does */
	public static Tenant of(String id) {
		return new Tenant(id);
	}

	/** @return a context holding this tenant, for {@code contextWrite(...)}. */
	public Context asContext() {
		return Context.of(CONTEXT_KEY, this);
	}

	/**
	 * Reads the tenant from a context.
	 *
	 * @return the tenant found (a {@code Tenant} or its id as a string), else empty
	 * @throws IllegalArgumentException when the key holds something else, or a string that is not a valid id
	 */
	public static Optional<Tenant> from(ContextView context) {
		Object value = context.getOrDefault(CONTEXT_KEY, null);
		if (value == null) {
			return Optional.empty();
		}
		if (value instanceof Tenant) {
			return Optional.of((Tenant) value);
		}
		if (value instanceof CharSequence) {
			return Optional.of(new Tenant(value.toString()));
		}
		throw new IllegalArgumentException("context key " + CONTEXT_KEY + " holds " + value.getClass().getName()
				+ ", expected " + Tenant.class.getName());
	}

	@Override
	public String toString() {
		return id;
	}
}
