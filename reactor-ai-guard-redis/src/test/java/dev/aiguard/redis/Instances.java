package dev.aiguard.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

/** Endpoints and stores a test opens, each on its own Lettuce client (as separate instances would be), closed together. */
final class Instances implements AutoCloseable {

	/** Short timeouts so a test sees a fallback and a recovery quickly. */
	static RedisSettings settings(RedisServer redis) {
		return RedisSettings.builder(redis.uri())
				.commandTimeout(Duration.ofMillis(200))
				.connectTimeout(Duration.ofSeconds(2)) // a cold JVM on a busy machine
				.reconnectDelay(Duration.ofMillis(100))
				.probeInterval(Duration.ofMillis(100))
				.build();
	}

	private final List<AutoCloseable> open = new ArrayList<>();

	RedisEndpoint endpoint(RedisServer redis) {
		RedisEndpoint endpoint = RedisEndpoint.create(settings(redis));
		open.add(endpoint);
		return endpoint;
	}

	/** @return a store on a new client, once it is shared */
	RedisBucketStore store(RedisServer redis, UnaryOperator<RedisBucketStore.Builder> config) {
		RedisBucketStore store = unconnectedStore(redis, config);
		try {
			store.shared().get(5, TimeUnit.SECONDS);
		}
		catch (Exception e) {
			throw new AssertionError("store did not reach Redis at " + redis, e);
		}
		return store;
	}

	/** @return a store on a new client, whatever its mode */
	RedisBucketStore unconnectedStore(RedisServer redis, UnaryOperator<RedisBucketStore.Builder> config) {
		RedisBucketStore store = config.apply(RedisBucketStore.builder(endpoint(redis))).build();
		open.add(0, store);
		return store;
	}

	@Override
	public void close() {
		for (AutoCloseable c : open) {
			try {
				c.close();
			}
			catch (Exception ignored) {
				// closing the rest matters more
			}
		}
		open.clear();
	}
}
