package dev.aiguard.redis;

import java.util.Objects;
import java.util.function.Supplier;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

import dev.aiguard.breaker.BreakerState;
import dev.aiguard.budget.BucketStore;

/**
 * {@link RedisMetrics} on a Micrometer {@link MeterRegistry} (the guard's own
 * {@code aiguard.budget.store.mode} gauge shows each policy's store mode; these show each Redis store):
 * <ul>
 * <li>{@code aiguard.redis.store.mode} (gauge; tags {@code store}, {@code mode}): 1 for the store's
 * current mode, 0 for the others;</li>
 * <li>{@code aiguard.redis.store.fallbacks} (counter; tags {@code store}, {@code mode}): changes to
 * {@code FALLBACK_OPEN} or {@code FALLBACK_CLOSED};</li>
 * <li>{@code aiguard.redis.breaker.received} and {@code aiguard.redis.breaker.published}
 * (counters; tags {@code breaker}, {@code state}): breaker transitions applied from other instances,
 * and local ones published to them;</li>
 * <li>{@code aiguard.redis.breaker.unpublished} (counter; tags {@code breaker}, {@code state}): local
 * transitions that could not be published (Redis down, or the sync closed before they were sent).</li>
 * </ul>
 *
 * <pre>{@code
 * RedisMetrics metrics = new MicrometerRedisMetrics(meterRegistry);
 * }</pre>
 */
public final class MicrometerRedisMetrics implements RedisMetrics {

	private final MeterRegistry registry;

	/** @param registry where the meters go */
	public MicrometerRedisMetrics(MeterRegistry registry) {
		this.registry = Objects.requireNonNull(registry, "registry");
	}

	@Override
	public void storeRegistered(String store, Supplier<BucketStore.Mode> mode) {
		for (BucketStore.Mode m : BucketStore.Mode.values()) {
			Gauge.builder("aiguard.redis.store.mode", mode, s -> s.get() == m ? 1 : 0)
					.description("1 for the budget store's current mode (SHARED, FALLBACK_OPEN, FALLBACK_CLOSED), else 0")
					.tag("store", store).tag("mode", m.name())
					.strongReference(true) // the supplier lives only in the gauge
					.register(registry);
		}
	}

	@Override
	public void storeModeChanged(String store, BucketStore.Mode from, BucketStore.Mode to) {
		if (to == BucketStore.Mode.FALLBACK_OPEN || to == BucketStore.Mode.FALLBACK_CLOSED) {
			Counter.builder("aiguard.redis.store.fallbacks")
					.description("Times the budget store lost Redis and fell back")
					.tag("store", store).tag("mode", to.name()).register(registry).increment();
		}
	}

	@Override
	public void breakerTransitionReceived(String breaker, BreakerState to) {
		Counter.builder("aiguard.redis.breaker.received")
				.description("Breaker transitions of other instances applied to this one")
				.tag("breaker", breaker).tag("state", to.name()).register(registry).increment();
	}

	@Override
	public void breakerTransitionPublished(String breaker, BreakerState to) {
		Counter.builder("aiguard.redis.breaker.published")
				.description("Breaker transitions of this instance published to the others")
				.tag("breaker", breaker).tag("state", to.name()).register(registry).increment();
	}

	@Override
	public void breakerTransitionNotPublished(String breaker, BreakerState to) {
		Counter.builder("aiguard.redis.breaker.unpublished")
				.description("Breaker transitions of this instance that could not be published to the others")
				.tag("breaker", breaker).tag("state", to.name()).register(registry).increment();
	}
}
