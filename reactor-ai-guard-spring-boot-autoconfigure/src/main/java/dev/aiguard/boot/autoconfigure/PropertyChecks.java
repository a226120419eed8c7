package dev.aiguard.boot.autoconfigure;

import java.util.Arrays;
import java.util.Locale;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * Hands one property's value to the library and turns the library's refusal into an
 * {@link InvalidGuardPropertyException} naming that property: the rules stay in the library, the
 * message still says which line of the configuration is wrong. Every mapper goes through these.
 */
final class PropertyChecks {

	private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

	private PropertyChecks() {
	}

	/** Refuses a policy, breaker, lanes or tree name that cannot be a meter tag or a bean name. */
	static void checkName(String at, @Nullable String name) {
		if (name == null || !NAME.matcher(name).matches()) {
			throw new InvalidGuardPropertyException(at, name,
					"a name must be 1 to 64 letters, digits, '.', '_' or '-'", null);
		}
	}

	/** Applies a value to a builder unless it is unset, naming the property when the library refuses it. */
	static <V> void set(String property, @Nullable V value, Consumer<V> setter) {
		if (value != null) {
			try {
				setter.accept(value);
			}
			catch (IllegalArgumentException | NullPointerException e) {
				throw new InvalidGuardPropertyException(property, value, String.valueOf(e.getMessage()), e);
			}
		}
	}

	/** Derives an immutable spec with a value unless it is unset, naming the property when refused. */
	static <S, V> S with(String property, @Nullable V value, S spec, BiFunction<S, V, S> wither) {
		if (value == null) {
			return spec;
		}
		try {
			return wither.apply(spec, value);
		}
		catch (IllegalArgumentException | NullPointerException e) {
			throw new InvalidGuardPropertyException(property, value, String.valueOf(e.getMessage()), e);
		}
	}

	static <V, R> R make(String property, V value, Function<V, R> factory) {
		try {
			return factory.apply(value);
		}
		catch (IllegalArgumentException | NullPointerException e) {
			throw new InvalidGuardPropertyException(property, value, String.valueOf(e.getMessage()), e);
		}
	}

	static <R> R make(String property, Supplier<R> factory) {
		try {
			return factory.get();
		}
		catch (IllegalArgumentException | IllegalStateException | NullPointerException e) {
			throw new InvalidGuardPropertyException(property, null, String.valueOf(e.getMessage()), e);
		}
	}

	/** Reads a constant the way Boot binds one: any case, '-' for '_'. */
	static <E extends Enum<E>> E enumValue(String property, String value, Class<E> type) {
		try {
			return Enum.valueOf(type, value.trim().toUpperCase(Locale.ROOT).replace('-', '_'));
		}
		catch (IllegalArgumentException e) {
			throw new InvalidGuardPropertyException(property, value, "expected one of "
					+ Arrays.toString(type.getEnumConstants()).toLowerCase(Locale.ROOT), e);
		}
	}

	/** Reads a constant from a map key, ignoring case. */
	static <E extends Enum<E>> E constant(String property, String key, Class<E> type) {
		for (E e : type.getEnumConstants()) {
			if (e.name().equalsIgnoreCase(key.trim())) {
				return e;
			}
		}
		throw new InvalidGuardPropertyException(property, key, "expected one of "
				+ Arrays.toString(type.getEnumConstants()).toLowerCase(Locale.ROOT), null);
	}
}
