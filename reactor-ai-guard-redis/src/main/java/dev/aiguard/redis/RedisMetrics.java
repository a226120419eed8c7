package dev.aiguard.redis;

import java.util.function.Supplier;

import dev.aiguard.breaker.BreakerState;
import dev.aiguard.budget.BucketStore;

/**
 * What the Redis integration reports. Every method has a no-op default; {@link MicrometerRedisMetrics}
 * records them on a Micrometer registry. Implementations must not block and should not throw (a
 * throwing one is ignored).
 *
 * <pre>{@code
 * RedisMetrics metrics = new MicrometerRedisMetrics(meterRegistry);
 * RedisBucketStore store = RedisBucketStore.builder(redis).metrics(metrics).build();
 * }</pre>
 */
public interface RedisMetrics {

	/** Records nothing. */
	RedisMetrics NOOP = new RedisMetrics() {
	};

	/**
	 * A store was built: expose its mode as a gauge.
	 *
	 * @param store the store's name
	 * @param mode reads the store's current mode
	 */
	default void storeRegistered(String store, Supplier<BucketStore.Mode> mode) {
	}

	/**
	 * A store changed mode; a change to a fallback mode counts as one fallback.
	 *
	 * @param store the store's name
	 * @param from the mode before
	 * @param to the mode now
	 */
	default void storeModeChanged(String store, BucketStore.Mode from, BucketStore.Mode to) {
	}

	/**
	 * A breaker transition of another instance arrived and was applied.
	 *
	 * @param breaker the breaker's name
	 * @param to the state it was moved to
	 */
	default void breakerTransitionReceived(String breaker, BreakerState to) {
	}

	/**
	 * A local breaker transition was published to the other instances.
	 *
	 * @param breaker the breaker's name
	 * @param to the state it moved to
	 */
	default void breakerTransitionPublished(String breaker, BreakerState to) {
	}

	/**
	 * A local breaker transition could not be published: Redis did not answer, the sync was not
	 * connected, or it was closed before the transition could be sent.
	 *
	 * @param breaker the breaker's name
	 * @param to the state it moved to
	 */
	default void breakerTransitionNotPublished(String breaker, BreakerState to) {
	}
}
