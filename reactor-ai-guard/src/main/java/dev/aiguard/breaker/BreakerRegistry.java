package dev.aiguard.breaker;

import java.time.Clock;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

import dev.aiguard.metrics.GuardMetrics;

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
 * }</pre>
 */
public final class BreakerRegistry {

	private final ConcurrentMap<String, CircuitBreaker> breakers = new ConcurrentHashMap<>();
	private final BreakerConfig defaultConfig;
	private final BreakerClock clock;
	private final Clock wallClock;
	private final GuardMetrics metrics;
	private final List<BreakerListener> listeners;

	private BreakerRegistry(Builder b) {
		this.defaultConfig = b.defaultConfig;
		this.clock = b.clock;
		this.wallClock = b.wallClock;
		this.metrics = b.metrics;
		this.listeners = List.copyOf(b.listeners);
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
		Objects.requireNonNull(name, "name");
		Objects.requireNonNull(config, "config");
		CircuitBreaker existing = breakers.get(name);
		if (existing != null) {
			return existing;
		}
		return breakers.computeIfAbsent(name, n -> {
			CircuitBreaker.Builder b = CircuitBreaker.builder(n).config(config).clock(clock).wallClock(wallClock)
					.metrics(metrics);
			listeners.forEach(b::listener);
			return b.build();
		});
	}

	/** @return the breaker named {@code name} if it exists */
	public Optional<CircuitBreaker> find(String name) {
		return Optional.ofNullable(breakers.get(name));
	}

	/** @return every breaker created so far */
	public Collection<CircuitBreaker> breakers() {
		return List.copyOf(breakers.values());
	}

	/** @return the config new breakers get by default */
	public BreakerConfig defaultConfig() {
		return defaultConfig;
	}

	/** Builds a {@link BreakerRegistry}; what it is given applies to every breaker it creates. */
	public static final class Builder {

		private BreakerConfig defaultConfig = BreakerConfig.defaults();
		private BreakerClock clock = BreakerClock.system();
		private Clock wallClock = Clock.systemUTC();
		private GuardMetrics metrics = GuardMetrics.noop();
		private final List<BreakerListener> listeners = new ArrayList<>();

		private Builder() {
		}

		public Builder defaultConfig(BreakerConfig config) {
			this.defaultConfig = Objects.requireNonNull(config, "defaultConfig");
			return this;
		}

		public Builder clock(BreakerClock clock) {
			this.clock = Objects.requireNonNull(clock, "clock");
			return this;
		}

		public Builder wallClock(Clock wallClock) {
			this.wallClock = Objects.requireNonNull(wallClock, "wallClock");
			return this;
		}

		public Builder metrics(GuardMetrics metrics) {
			this.metrics = Objects.requireNonNull(metrics, "metrics");
			return this;
		}

		/** @param listener registered on every breaker the registry creates (repeatable) */
		public Builder listener(BreakerListener listener) {
			listeners.add(Objects.requireNonNull(listener, "listener"));
			return this;
		}

		public BreakerRegistry build() {
			return new BreakerRegistry(this);
		}
	}
}
