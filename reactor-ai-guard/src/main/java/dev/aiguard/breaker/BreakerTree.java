package dev.aiguard.breaker;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiFunction;

/**
 * Breakers in a hierarchy: the system → its providers → their model endpoints. Each node is a plain
 * {@link CircuitBreaker}; a call passes one of each level through a {@link BreakerPath}. An
 * endpoint trips on its own calls; a provider and the system follow their children's own judgements:
 * they trip when at least {@link Builder#childrenToTrip(int) two} children are failing and those are at
 * least {@link Builder#childrenShareToTrip(double) half} of the children with traffic, never on one
 * child failing alone nor on a rate pooled over children. So "gpt-x on this deployment fails", "the
 * whole provider is down" and "everything we call fails" are three different states.
 *
 * <pre>{@code
 * BreakerTree tree = BreakerTree.builder("llm")
 *     .endpointConfig(BreakerConfig.custom().failureRateThreshold(0.5).build())
 *     .systemConfig(BreakerConfig.custom().openP0ProbeShare(0.05).p0ProbeWindow(Duration.ofSeconds(2)).build())
 *     .provider("openai", "gpt-4o", "gpt-4o-mini")
 *     .provider("anthropic", "claude-sonnet")
 *     .build();
 * GuardPolicy chat = GuardPolicy.builder("chat").breaker(tree.path("openai", "gpt-4o")).build();
 * }</pre>
 *
 * <p>Share a tree by name through {@link BreakerRegistry#tree(String, java.util.function.Consumer)};
 * its breakers are then in the registry too, named {@code tree}, {@code tree/provider} and
 * {@code tree/provider/endpoint}. {@link #snapshot()} shows the whole tree at once.
 */
public final class BreakerTree {

	private final String name;
	private final BreakerNode root;
	private final BreakerClock clock;
	private final Map<String, Map<String, BreakerPath>> paths;
	private final List<BreakerPath> allPaths;
	private final int childrenToTrip;
	private final double childrenShareToTrip;

	private BreakerTree(Builder b, BiFunction<String, BreakerConfig, CircuitBreaker> create) {
		this.name = b.name;
		this.clock = b.clock;
		this.childrenToTrip = b.childrenToTrip;
		this.childrenShareToTrip = b.childrenShareToTrip;
		List<BreakerNode> providers = new ArrayList<>();
		for (Map.Entry<String, List<String>> provider : b.providers.entrySet()) {
			String providerPath = name + "/" + provider.getKey();
			List<BreakerNode> endpoints = new ArrayList<>();
			for (String endpoint : provider.getValue()) {
				endpoints.add(new BreakerNode(endpoint, BreakerLevel.ENDPOINT,
						create.apply(providerPath + "/" + endpoint, b.endpointConfig), List.of()));
			}
			List<BreakerNode> children = List.copyOf(endpoints);
			providers.add(new BreakerNode(provider.getKey(), BreakerLevel.PROVIDER,
					create.apply(providerPath, parentConfig(b.providerConfig, children, b)), children));
		}
		List<BreakerNode> children = List.copyOf(providers);
		this.root = new BreakerNode(name, BreakerLevel.SYSTEM,
				create.apply(name, parentConfig(b.systemConfig, children, b)), children);
		Map<String, Map<String, BreakerPath>> byProvider = new LinkedHashMap<>();
		List<BreakerPath> all = new ArrayList<>();
		for (BreakerNode provider : root.children()) {
			Map<String, BreakerPath> byEndpoint = new LinkedHashMap<>();
			for (BreakerNode endpoint : provider.children()) {
				BreakerPath path = new BreakerPath(this, root, provider, endpoint);
				byEndpoint.put(endpoint.name(), path);
				all.add(path);
			}
			byProvider.put(provider.name(), Collections.unmodifiableMap(byEndpoint));
		}
		this.paths = Collections.unmodifiableMap(byProvider);
		this.allPaths = List.copyOf(all);
	}

	private static BreakerConfig parentConfig(BreakerConfig config, List<BreakerNode> children, Builder b) {
		return BreakerConfig.from(config)
				.tripPolicy(new CorrelatedFailurePolicy(children, b.childrenToTrip, b.childrenShareToTrip)).build();
	}

	/** @return a builder for a tree whose root (the system level) is named {@code name} */
	public static Builder builder(String name) {
		return new Builder(name);
	}

	/** @return the tree's name, also its root's and its system breaker's */
	public String name() {
		return name;
	}

	/** @return the system node */
	public BreakerNode root() {
		return root;
	}

	/**
	 * @return the provider node named {@code provider}
	 * @throws IllegalArgumentException naming the provider when the tree has none of that name
	 */
	public BreakerNode provider(String provider) {
		for (BreakerNode node : root.children()) {
			if (node.name().equals(provider)) {
				return node;
			}
		}
		throw new IllegalArgumentException("provider '" + provider + "' is not in breaker tree '" + name
				+ "', which has " + paths.keySet());
	}

	/**
	 * @return the path to {@code endpoint} under {@code provider}: the same object on every call
	 * @throws IllegalArgumentException naming the provider or endpoint when the tree has no such node
	 */
	public BreakerPath path(String provider, String endpoint) {
		Map<String, BreakerPath> endpoints = paths.get(provider);
		if (endpoints == null) {
			throw new IllegalArgumentException("provider '" + provider + "' is not in breaker tree '" + name
					+ "', which has " + paths.keySet());
		}
		BreakerPath path = endpoints.get(endpoint);
		if (path == null) {
			throw new IllegalArgumentException("endpoint '" + endpoint + "' is not under provider '" + provider
					+ "' in breaker tree '" + name + "', which has " + endpoints.keySet());
		}
		return path;
	}

	/** @return every endpoint's path, providers and endpoints in the order they were declared */
	public List<BreakerPath> paths() {
		return allPaths;
	}

	/**
	 * Where to go when {@code failed} cannot answer, best first: the other endpoints under the same
	 * provider, when that provider is CLOSED; then the endpoints under the other CLOSED providers.
	 * Only CLOSED endpoints are listed; each list keeps the declared order. The system level is not
	 * looked at: a call on the chosen path still asks it.
	 *
	 * @param failed the path that failed or refused
	 * @return the alternatives now, possibly empty
	 */
	public List<BreakerPath> alternativesTo(BreakerPath failed) {
		Objects.requireNonNull(failed, "failed");
		List<BreakerPath> out = new ArrayList<>();
		BreakerNode home = failed.provider();
		if (home.breaker().state() == BreakerState.CLOSED) {
			addClosedEndpoints(home, failed, out);
		}
		for (BreakerNode provider : root.children()) {
			if (provider != home && provider.breaker().state() == BreakerState.CLOSED) {
				addClosedEndpoints(provider, failed, out);
			}
		}
		return out;
	}

	private void addClosedEndpoints(BreakerNode provider, BreakerPath failed, List<BreakerPath> out) {
		Map<String, BreakerPath> endpoints = Objects.requireNonNull(paths.get(provider.name()), "paths");
		for (BreakerNode endpoint : provider.children()) {
			if (endpoint != failed.endpoint() && endpoint.breaker().state() == BreakerState.CLOSED) {
				out.add(endpoints.get(endpoint.name()));
			}
		}
	}

	/** @return the clock every breaker of the tree reads */
	public BreakerClock clock() {
		return clock;
	}

	/** @return the fewest failing children that trip a parent */
	public int childrenToTrip() {
		return childrenToTrip;
	}

	/** @return the share of a parent's children with traffic that must be failing for it to trip */
	public double childrenShareToTrip() {
		return childrenShareToTrip;
	}

	/** @return the whole tree as it is now */
	public BreakerNodeSnapshot snapshot() {
		return root.snapshot();
	}

	@Override
	public String toString() {
		return "BreakerTree{" + name + ", " + paths.keySet() + "}";
	}

	/**
	 * Builds a {@link BreakerTree}: per-level configs, the providers and their endpoints, and what
	 * every breaker of the tree shares (clock, metrics, listeners). Each setter checks its argument;
	 * {@link #build()} checks the whole.
	 */
	public static final class Builder extends BreakerWiring<Builder> {

		private final String name;
		private BreakerConfig systemConfig = BreakerConfig.defaults();
		private BreakerConfig providerConfig = BreakerConfig.defaults();
		private BreakerConfig endpointConfig = BreakerConfig.defaults();
		private int childrenToTrip = 2;
		private double childrenShareToTrip = 0.5;
		private final Map<String, List<String>> providers = new LinkedHashMap<>();

		private Builder(String name) {
			this.name = checkName("name", name);
		}

		@Override
		Builder self() {
			return this;
		}

		/**
		 * @param config the system breaker's config; its trip policy is the tree's correlation rule, so it
		 *        must keep the default policy and no {@code consecutiveFailuresToTrip}
		 */
		public Builder systemConfig(BreakerConfig config) {
			this.systemConfig = parent("systemConfig", config);
			return this;
		}

		/** @param config every provider breaker's config; the same rules as {@link #systemConfig} */
		public Builder providerConfig(BreakerConfig config) {
			this.providerConfig = parent("providerConfig", config);
			return this;
		}

		/** @param config every endpoint breaker's config: anything a plain breaker takes */
		public Builder endpointConfig(BreakerConfig config) {
			this.endpointConfig = BreakerConfig.notNull("endpointConfig", config);
			return this;
		}

		/** @param config the config of every level (a parent's trip policy becomes the correlation rule) */
		public Builder config(BreakerConfig config) {
			return systemConfig(config).providerConfig(config).endpointConfig(config);
		}

		/**
		 * @param children the fewest failing children that trip a parent, between 2 and 100 (default 2):
		 *        one child alone never does. A parent with fewer children never trips; its children's own
		 *        breakers refuse their calls.
		 */
		public Builder childrenToTrip(int children) {
			if (children < 2 || children > 100) {
				throw new IllegalArgumentException("childrenToTrip must be between 2 and 100, was " + children);
			}
			this.childrenToTrip = children;
			return this;
		}

		/**
		 * A parent trips when at least {@link #childrenToTrip(int)} of its children are failing <em>and</em>
		 * they are at least this share of its children with traffic (calls in their window, or OPEN or
		 * HALF_OPEN). A child is failing when OPEN or HALF_OPEN, or when its own trip policy is at its
		 * trip limit; never on a rate pooled over children.
		 *
		 * <pre>{@code
		 * BreakerTree.builder("llm").childrenToTrip(2).childrenShareToTrip(0.5)  // the defaults
		 * }</pre>
		 *
		 * @param share a fraction in (0, 1] (default 0.5: half of the children in use)
		 */
		public Builder childrenShareToTrip(double share) {
			if (!(share > 0 && share <= 1)) {
				throw new IllegalArgumentException("childrenShareToTrip must be a fraction in (0, 1], was " + share
						+ (share > 1 && share <= 100 ? " (write 0.5 for 50 %)" : ""));
			}
			this.childrenShareToTrip = share;
			return this;
		}

		/**
		 * Declares a provider and its model endpoints (repeatable; order is kept, and is the order
		 * {@link BreakerTree#alternativesTo} offers them in).
		 *
		 * @param provider the provider's name, no {@code '/'}
		 * @param endpoints its endpoints' names, at least one, distinct, no {@code '/'}
		 */
		public Builder provider(String provider, String... endpoints) {
			BreakerConfig.notNull("endpoints", endpoints);
			return provider(provider, Arrays.asList(endpoints));
		}

		/** @see #provider(String, String...) */
		public Builder provider(String provider, List<String> endpoints) {
			checkName("provider", provider);
			if (providers.containsKey(provider)) {
				throw new IllegalArgumentException("provider '" + provider + "' is declared twice in breaker tree '"
						+ name + "'");
			}
			if (endpoints == null || endpoints.isEmpty()) {
				throw new IllegalArgumentException("provider '" + provider + "' needs at least one endpoint, was "
						+ endpoints);
			}
			List<String> names = new ArrayList<>();
			for (String endpoint : endpoints) {
				checkName("endpoint", endpoint);
				if (names.contains(endpoint)) {
					throw new IllegalArgumentException("endpoint '" + endpoint + "' is declared twice under provider '"
							+ provider + "'");
				}
				names.add(endpoint);
			}
			providers.put(provider, List.copyOf(names));
			return this;
		}

		/**
		 * @return the tree, every breaker CLOSED
		 * @throws IllegalArgumentException when no provider was declared
		 */
		public BreakerTree build() {
			return build((breakerName, config) -> newBreaker(breakerName, config));
		}

		BreakerTree build(BiFunction<String, BreakerConfig, CircuitBreaker> create) {
			if (providers.isEmpty()) {
				throw new IllegalArgumentException("breaker tree '" + name + "' needs at least one provider");
			}
			return new BreakerTree(this, create);
		}

		CircuitBreaker newBreaker(String breakerName, BreakerConfig config) {
			return wire(CircuitBreaker.builder(breakerName)).config(config).build();
		}

		String name() {
			return name;
		}

		private static BreakerConfig parent(String field, BreakerConfig config) {
			BreakerConfig.notNull(field, config);
			if (config.consecutiveFailuresToTrip() != 0) {
				throw new IllegalArgumentException(field + ".consecutiveFailuresToTrip must be 0 in a breaker tree "
						+ "(a parent trips on its children's correlated failure only), was "
						+ config.consecutiveFailuresToTrip());
			}
			if (!config.tripPolicy().equals(TripPolicy.failureRate())
					&& !(config.tripPolicy() instanceof CorrelatedFailurePolicy)) {
				throw new IllegalArgumentException(field + ".tripPolicy must stay the default in a breaker tree "
						+ "(a parent trips on its children's correlated failure), was " + config.tripPolicy());
			}
			return config;
		}

		private static String checkName(String field, String value) {
			BreakerConfig.notNull(field, value);
			if (value.isBlank() || value.indexOf('/') >= 0) {
				throw new IllegalArgumentException(field + " must be non-blank without '/', was '" + value + "'");
			}
			return value;
		}
	}
}
