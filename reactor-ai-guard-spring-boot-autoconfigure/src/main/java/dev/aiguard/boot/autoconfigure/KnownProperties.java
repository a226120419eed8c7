package dev.aiguard.boot.autoconfigure;

import java.lang.reflect.Constructor;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import org.jspecify.annotations.Nullable;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName.Form;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.MethodParameter;
import org.springframework.core.ResolvableType;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.SystemEnvironmentPropertySource;

/**
 * The property names that {@code @ConfigurationProperties} classes bound under {@code aiguard.*}
 * know, as a tree read from the classes themselves (JavaBean properties, record components, map
 * and list types), and the check that every {@code aiguard.*} name in the environment is one of
 * them. Boot's binder ignores a name no class has, so without this check a misspelled key is a
 * setting that silently does nothing.
 *
 * <p>Names compare in Boot's uniform form (lower case, letters and digits only), so every relaxed
 * spelling that binds ({@code idle-timeout}, {@code idleTimeout}, {@code idle_timeout},
 * {@code IDLETIMEOUT}) passes. Map keys (policy, breaker, tenant names) are free; what lies under
 * a key is checked against the map's value type, and a map of plain values ({@code signals},
 * {@code encodings}, {@code reserves}) takes any key, dots included, as Boot does.
 */
final class KnownProperties {

	/** The root every checked name descends from. */
	static final ConfigurationPropertyName ROOT = ConfigurationPropertyName.of(AiGuardProperties.PREFIX);

	/** The classes this module binds under {@code aiguard}, by prefix; a class that moves out of AiGuardProperties joins here. */
	static final Map<String, Class<?>> OWN = Map.of(AiGuardProperties.PREFIX, AiGuardProperties.class,
			AiGuardRedisProperties.PREFIX, AiGuardRedisProperties.class);

	private final Node root = new Node();

	/**
	 * Adds the names of a class bound at {@code prefix}.
	 *
	 * @param prefix {@code aiguard} or a name under it
	 * @param type the bound class
	 * @return this
	 */
	KnownProperties add(String prefix, Class<?> type) {
		ConfigurationPropertyName name = ConfigurationPropertyName.of(prefix);
		if (!name.equals(ROOT) && !ROOT.isAncestorOf(name)) {
			throw new IllegalArgumentException("prefix must be under " + ROOT + ", was " + prefix);
		}
		Node at = root;
		for (int i = 1; i < name.getNumberOfElements(); i++) {
			at = at.child(name.getElement(i, Form.DASHED));
		}
		at.merge(node(ResolvableType.forClass(type), new HashSet<>()));
		return this;
	}

	/**
	 * Checks every name under {@code aiguard} in the sources.
	 *
	 * @param sources the environment's configuration property sources
	 * @throws InvalidGuardPropertyException naming the first unknown key (in name order) and the nearest known one
	 */
	void check(Iterable<ConfigurationPropertySource> sources) {
		Map<String, InvalidGuardPropertyException> unknown = new TreeMap<>();
		for (ConfigurationPropertySource source : sources) {
			if (!(source instanceof IterableConfigurationPropertySource iterable)) {
				continue;
			}
			boolean environment = source.getUnderlyingSource() instanceof SystemEnvironmentPropertySource;
			iterable.filter(ROOT::isAncestorOf).forEach(name -> {
				InvalidGuardPropertyException problem = problem(name, environment);
				if (problem != null) {
					ConfigurationProperty property = source.getConfigurationProperty(name);
					String origin = property == null || property.getOrigin() == null ? describe(source)
							: property.getOrigin().toString();
					unknown.putIfAbsent(name.toString(), InvalidGuardPropertyException.unknown(problem.property(),
							problem.nearest(), problem.reason() + " (set in " + origin + ")"));
				}
			});
		}
		if (unknown.isEmpty()) {
			return;
		}
		InvalidGuardPropertyException first = unknown.values().iterator().next();
		if (unknown.size() == 1) {
			throw first;
		}
		List<String> others = new ArrayList<>(unknown.keySet()).subList(1, unknown.size());
		throw InvalidGuardPropertyException.unknown(first.property(), first.nearest(),
				first.reason() + "; also unknown: " + String.join(", ", others));
	}

	private static String describe(ConfigurationPropertySource source) {
		return source.getUnderlyingSource() instanceof PropertySource<?> p ? "property source '" + p.getName() + "'"
				: String.valueOf(source.getUnderlyingSource());
	}

	/**
	 * @param name a name under {@code aiguard}
	 * @param environment whether it comes from environment variables, whose underscores may stand
	 *        for a dot or a dash, and whose first level may belong to another program sharing the prefix
	 * @return why the name is unknown, or {@code null} when a bound class knows it
	 */
	@Nullable InvalidGuardPropertyException problem(ConfigurationPropertyName name, boolean environment) {
		return walk(root, name, 1, environment);
	}

	private @Nullable InvalidGuardPropertyException walk(Node node, ConfigurationPropertyName name, int i, boolean environment) {
		if (i == name.getNumberOfElements() || node.free) {
			return null;
		}
		if (node.element != null && name.isNumericIndex(i)) {
			return walk(node.element, name, i + 1, environment);
		}
		if (node.anyKey != null) {
			return walk(node.anyKey, name, i + 1, environment);
		}
		String uniform = name.getElement(i, Form.UNIFORM);
		Node child = node.children.get(uniform);
		InvalidGuardPropertyException below = child == null ? null : walk(child, name, i + 1, environment);
		if (child != null && below == null) {
			return null;
		}
		if (environment) {
			// AIGUARD_POLICIES_CHAT_STALL_IDLE_TIMEOUT binds idle-timeout: an underscore may have been a dash
			String joined = uniform;
			for (int j = i + 1; j < name.getNumberOfElements(); j++) {
				joined += name.getElement(j, Form.UNIFORM);
				Node longer = node.children.get(joined);
				if (longer != null && walk(longer, name, j + 1, environment) == null) {
					return null;
				}
			}
			if (i == 1 && child == null) {
				// a variable such as AIGUARD_HOME may belong to another program; only known groups are checked
				return null;
			}
		}
		if (below != null) {
			return below;
		}
		String parent = prefix(name, i);
		String key = parent + "." + name.getElement(i, Form.ORIGINAL);
		if (node.children.isEmpty()) {
			return InvalidGuardPropertyException.unknown(key, null,
					"'" + parent + "' takes a value and has no property '" + name.getElement(i, Form.ORIGINAL) + "'");
		}
		String nearest = parent + "." + nearest(uniform, node.children.values());
		return InvalidGuardPropertyException.unknown(key, nearest, "no such property; did you mean '" + nearest
				+ "'? Known under '" + parent + "': " + String.join(", ", names(node.children.values())));
	}

	private static String prefix(ConfigurationPropertyName name, int elements) {
		return name.chop(elements).toString();
	}

	private static List<String> names(Collection<Node> nodes) {
		return nodes.stream().map(n -> n.name).sorted().toList();
	}

	private static String nearest(String uniform, Collection<Node> candidates) {
		String best = null;
		int bestDistance = Integer.MAX_VALUE;
		for (Node candidate : candidates) {
			int d = distance(uniform, candidate.uniform);
			if (d < bestDistance || d == bestDistance && candidate.name.compareTo(best) < 0) {
				best = candidate.name;
				bestDistance = d;
			}
		}
		return best;
	}

	/** Levenshtein distance (insert, delete, replace). */
	static int distance(String a, String b) {
		int[] previous = new int[b.length() + 1];
		int[] current = new int[b.length() + 1];
		for (int j = 0; j <= b.length(); j++) {
			previous[j] = j;
		}
		for (int i = 1; i <= a.length(); i++) {
			current[0] = i;
			for (int j = 1; j <= b.length(); j++) {
				int replace = previous[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
				current[j] = Math.min(replace, Math.min(previous[j], current[j - 1]) + 1);
			}
			int[] swap = previous;
			previous = current;
			current = swap;
		}
		return previous[b.length()];
	}

	private static Node node(ResolvableType type, Set<Class<?>> path) {
		Class<?> raw = type.resolve(Object.class);
		Node node = new Node();
		if (Map.class.isAssignableFrom(raw)) {
			ResolvableType value = type.asMap().getGeneric(1);
			// a map of plain values takes the rest of the name as its key, dots and all
			node.anyKey = isBean(value.resolve(Object.class)) || isContainer(value.resolve(Object.class))
					? node(value, path) : Node.free();
		}
		else if (Collection.class.isAssignableFrom(raw) || raw.isArray()) {
			node.element = node(raw.isArray() ? type.getComponentType() : type.asCollection().getGeneric(0), path);
		}
		else if (isBean(raw)) {
			if (!path.add(raw)) {
				return Node.free();
			}
			properties(raw).forEach((name, propertyType) -> node.child(name).merge(node(propertyType, path)));
			path.remove(raw);
		}
		return node;
	}

	private static boolean isContainer(Class<?> type) {
		return Map.class.isAssignableFrom(type) || Collection.class.isAssignableFrom(type) || type.isArray();
	}

	/** A value Boot converts from one string (or a list of them): nothing is bound under its name. */
	private static boolean isPlain(Class<?> type) {
		return type.isPrimitive() || type.isEnum() || type.getName().startsWith("java.")
				|| type.getName().startsWith("org.springframework.util.unit.");
	}

	private static boolean isBean(Class<?> type) {
		return !isPlain(type) && !isContainer(type) && !properties(type).isEmpty();
	}

	/** The bindable properties of a class, by dashed name: record components, else setters and nested getters. */
	private static Map<String, ResolvableType> properties(Class<?> type) {
		Map<String, ResolvableType> properties = new LinkedHashMap<>();
		if (type.isRecord()) {
			for (RecordComponent c : type.getRecordComponents()) {
				properties.put(dashed(c.getName()), ResolvableType.forType(c.getGenericType()));
			}
			return properties;
		}
		Constructor<?>[] constructors = type.getDeclaredConstructors();
		if (constructors.length == 1 && constructors[0].getParameterCount() > 0
				&& constructors[0].getParameters()[0].isNamePresent()) {
			for (int i = 0; i < constructors[0].getParameterCount(); i++) {
				properties.put(dashed(constructors[0].getParameters()[i].getName()),
						ResolvableType.forConstructorParameter(constructors[0], i));
			}
		}
		for (var descriptor : BeanUtils.getPropertyDescriptors(type)) {
			boolean settable = descriptor.getWriteMethod() != null;
			// Boot binds into what a getter without setter returns, when that is a map, a list or a bean
			boolean nested = descriptor.getReadMethod() != null && !"class".equals(descriptor.getName())
					&& (isContainer(descriptor.getPropertyType()) || !isPlain(descriptor.getPropertyType()));
			if (settable || nested) {
				ResolvableType propertyType = descriptor.getReadMethod() != null
						? ResolvableType.forMethodReturnType(descriptor.getReadMethod(), type)
						: ResolvableType.forMethodParameter(new MethodParameter(descriptor.getWriteMethod(), 0), type);
				properties.put(dashed(descriptor.getName()), propertyType);
			}
		}
		return properties;
	}

	private static String dashed(String camel) {
		StringBuilder out = new StringBuilder(camel.length() + 4);
		for (int i = 0; i < camel.length(); i++) {
			char c = camel.charAt(i);
			if (Character.isUpperCase(c) && i > 0) {
				out.append('-');
			}
			out.append(Character.toLowerCase(c));
		}
		return out.toString();
	}

	/** One level of the tree: named children (a bean), any key (a map), numbered elements (a list), or anything (free). */
	private static final class Node {

		final Map<String, Node> children = new TreeMap<>();

		String name = "";

		String uniform = "";

		@Nullable Node anyKey;

		@Nullable Node element;

		boolean free;

		static Node free() {
			Node node = new Node();
			node.free = true;
			return node;
		}

		Node child(String dashedName) {
			String key = ConfigurationPropertyName.of(dashedName).getElement(0, Form.UNIFORM);
			return children.computeIfAbsent(key, k -> {
				Node child = new Node();
				child.name = dashedName;
				child.uniform = k;
				return child;
			});
		}

		void merge(Node other) {
			free |= other.free;
			if (other.anyKey != null) {
				anyKey = anyKey == null ? other.anyKey : merged(anyKey, other.anyKey);
			}
			if (other.element != null) {
				element = element == null ? other.element : merged(element, other.element);
			}
			other.children.forEach((key, child) -> child(child.name).merge(child));
		}

		private static Node merged(Node a, Node b) {
			a.merge(b);
			return a;
		}
	}
}
