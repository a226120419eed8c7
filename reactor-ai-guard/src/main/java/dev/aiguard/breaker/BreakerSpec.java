package dev.aiguard.breaker;

import org.jspecify.annotations.Nullable;

/**
 * The breaker capability of a policy: which breaker each attempt asks for permission. At most one
 * of three: a shared {@link CircuitBreaker}, a {@link BreakerConfig} the policy builds a breaker of
 * its own from, or a {@link BreakerPath} through a breaker tree. Setting one clears the others.
 * Immutable and copy-on-write.
 *
 * <pre>{@code
 * BreakerSpec own = BreakerSpec.none().config(BreakerConfig.defaults());
 * BreakerSpec shared = BreakerSpec.none().breaker(registry.breaker("openai"));
 * BreakerSpec tree = BreakerSpec.none().path(tree.path("openai", "eu-1"));
 * }</pre>
 *
 * Each setter's message names the field {@code breaker}, as a policy builder does.
 */
public final class BreakerSpec {

	private static final BreakerSpec NONE = new BreakerSpec(null, null, null);

	@Nullable
	private final CircuitBreaker breaker;
	@Nullable
	private final BreakerConfig config;
	@Nullable
	private final BreakerPath path;

	private BreakerSpec(@Nullable CircuitBreaker breaker, @Nullable BreakerConfig config, @Nullable BreakerPath path) {
		this.breaker = breaker;
		this.config = config;
		this.path = path;
	}

	/** @return no breaker: attempts ask nobody for permission */
	public static BreakerSpec none() {
		return NONE;
	}

	/** @param shared asked by every attempt; it keeps the clock and metrics it was built with */
	public BreakerSpec breaker(CircuitBreaker shared) {
		return new BreakerSpec(require(shared), null, null);
	}

	/** @param own the config of a breaker the policy builds for itself, on its own clock and metrics */
	public BreakerSpec config(BreakerConfig own) {
		return new BreakerSpec(null, require(own), null);
	}

	/** @param treePath every attempt passes each level of a breaker tree, one permit per level */
	public BreakerSpec path(BreakerPath treePath) {
		return new BreakerSpec(null, null, require(treePath));
	}

	/** @return the shared breaker, or {@code null} */
	@Nullable
	public CircuitBreaker breaker() {
		return breaker;
	}

	/** @return the config of the policy's own breaker, or {@code null} */
	@Nullable
	public BreakerConfig config() {
		return config;
	}

	/** @return the breaker tree path, or {@code null} */
	@Nullable
	public BreakerPath path() {
		return path;
	}

	@Override
	public String toString() {
		return "BreakerSpec{" + (path != null ? "path=" + path : config != null ? "config=" + config
				: breaker != null ? "breaker=" + breaker.name() : "none") + '}';
	}

	private static <V> V require(@Nullable V value) {
		if (value == null) {
			throw new IllegalArgumentException("breaker must not be null");
		}
		return value;
	}
}
