package dev.aiguard.breaker;

import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Consumer;

/**
 * Breakers shared by name, so several policies (chat, summarise, embed...) that call the same provider
 * trip together. The first request for a name creates the breaker with the config given then (or the
 * registry's default); later requests get that same breaker whatever config they pass — change a live
 * breaker with {@link CircuitBreaker#reconfigure}.
 *
 * <pre>{@code
 * BreakerRegistry registry = BreakerRegistry.builder()
 *     .defaultConfig(BreakerConfig.defaults())
 *     .metrics(new MicrometerGuardMetrics(meterRegistry))
 *     .build();
 * CircuitBreaker openai = registry.breaker("openai");
 * CircuitBreaker slow = registry.breaker("reasoning", reasoningConfig);
 * BreakerTree llm = registry.tree("llm", tree -> tree
 *     .provider("openai", "gpt-4o", "gpt-4o-mini")
 *     .provider("anthropic", "claude-sonnet"));
 * }</pre>
 */
public final class BreakerRegistry {

	private final ConcurrentMap<String, CircuitBreaker> breakers = new ConcurrentHashMap<>();
	private final ConcurrentMap<String, BreakerTree> trees = new ConcurrentHashMap<>();
	private final BreakerConfig defaultConfig;
	/** A copy of what the builder was given, so a later change to the builder does not reach the registry. */
	private final Builder wiring;

	private BreakerRegistry(Builder b) {
		this.defaultConfig = b.defaultConfig;
		this.wiring = b.wire(new Builder());
	}

	/** @return a registry with the default config, the system clock and no metrics */
	public static BreakerRegistry ofDefaults() {
		return builder().build();
	}

	/** @return a builder */
	public static Builder builder() {
		return new Builder();
	}

	/** @return the breaker named {@code name}, created with the default config on first use */
	public CircuitBreaker breaker(String name) {
		return breaker(name, defaultConfig);
	}

	/** @return the breaker named {@code name}, created with {@code config} on first use */
	public CircuitBreaker breaker(String name, BreakerConfig config) {
		BreakerConfig.notNull("name", name);
		BreakerConfig.notNull("config", config);
		CircuitBreaker existing = breakers.get(name);
		if (existing != null) {
			return existing;
		}
		return breakers.computeIfAbsent(name, n -> wiring.wire(CircuitBreaker.builder(n)).config(config).build());
	}

	/** @return the breaker named {@code name} if it exists */
	public Optional<CircuitBreaker> find(String name) {
		return Optional.ofNullable(breakers.get(name));
	}

	/** @return every breaker created so far */
	public Collection<CircuitBreaker> breakers() {
		return List.copyOf(breakers.values());
	}

	/**
	 * The {@link BreakerTree} named {@code name}, built by {@code spec} on first use; later requests get
	 * the same tree whatever spec they pass. The tree's breakers read the registry's clock, report to
	 * its metrics and listeners, and are in the registry under their paths ({@code name},
	 * {@code name/provider}, {@code name/provider/endpoint}). Every level starts from the registry's
	 * default config (parents without its trip policy and consecutive-failure rule, which the tree's
	 * correlation rule replaces); {@code spec} may set its own.
	 *
	 * <pre>{@code
	 * BreakerTree llm = registry.tree("llm", tree -> tree
	 *     .systemConfig(BreakerConfig.custom().openP0ProbeShare(0.05).build())
	 *     .provider("openai", "gpt-4o", "gpt-4o-mini"));
	 * }</pre>
	 *
	 * @throws IllegalArgumentException when the spec is incomplete, or a breaker of the tree would take
	 *         the name of a breaker the registry already holds
	 */
	public BreakerTree tree(String name, Consumer<BreakerTree.Builder> spec) {
		BreakerConfig.notNull("name", name);
		BreakerConfig.notNull("spec", spec);
		BreakerTree existing = trees.get(name);
		if (existing != null) {
			return existing;
		}
		return trees.computeIfAbsent(name, n -> {
			BreakerConfig parents = BreakerConfig.from(defaultConfig).consecutiveFailuresToTrip(0)
					.tripPolicy(TripPolicy.failureRate()).build();
			BreakerTree.Builder b = wiring.wire(BreakerTree.builder(n)).endpointConfig(defaultConfig)
					.providerConfig(parents).systemConfig(parents);
			spec.accept(b);
			BreakerTree tree = b.build((breakerName, config) -> {
				if (breakers.containsKey(breakerName)) {
					throw new IllegalArgumentException("breaker tree '" + n + "' needs the name '" + breakerName
							+ "', which a breaker of the registry already has");
				}
				return b.newBreaker(breakerName, config);
			});
			for (BreakerPath path : tree.paths()) {
				breakers.putIfAbsent(path.endpoint().breaker().name(), path.endpoint().breaker());
			}
			for (BreakerNode provider : tree.root().children()) {
				breakers.putIfAbsent(provider.breaker().name(), provider.breaker());
			}
			breakers.putIfAbsent(tree.root().breaker().name(), tree.root().breaker());
			return tree;
		});
	}

	/** @return the tree named {@code name} if it exists */
	public Optional<BreakerTree> findTree(String name) {
		return Optional.ofNullable(trees.get(name));
	}

	/** @return every tree created so far */
	public Collection<BreakerTree> trees() {
		return List.copyOf(trees.values());
	}

	/** @return the config new breakers get by default */
	public BreakerConfig defaultConfig() {
		return defaultConfig;
	}

	/** Builds a {@link BreakerRegistry}; what it is given applies to every breaker it creates. */
	public static final class Builder extends BreakerWiring<Builder> {

		private BreakerConfig defaultConfig = BreakerConfig.defaults();

		private Builder() {
		}

		@Override
		Builder self() {
			return this;
		}

		/** @param config the config a breaker gets when its first request brings none (default {@link BreakerConfig#defaults()}) */
		public Builder defaultConfig(BreakerConfig config) {
			this.defaultConfig = BreakerConfig.notNull("defaultConfig", config);
			return this;
		}

		/** @return the registry, empty */
		public BreakerRegistry build() {
			return new BreakerRegistry(this);
		}
	}
}
