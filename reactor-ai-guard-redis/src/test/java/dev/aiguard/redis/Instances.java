package dev.aiguard.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore;

/** Endpoints and stores a test opens, each on its own Lettuce client (as separate instances would be), closed together. */
final class Instances implements AutoCloseable {

	/** The command timeout of {@link #settings(RedisServer)}. */
	static final Duration COMMAND_TIMEOUT = Duration.ofMillis(250);

	/** Short timeouts so a test sees a fallback and a recovery quickly. */
	static RedisSettings settings(RedisServer redis) {
		return settings(redis, COMMAND_TIMEOUT);
	}

	/** @param commandTimeout the most one operation may take */
	static RedisSettings settings(RedisServer redis, Duration commandTimeout) {
		return RedisSettings.builder(redis.uri())
				.commandTimeout(commandTimeout)
				.connectTimeout(Duration.ofSeconds(2)) // a cold JVM on a busy machine
				.reconnectDelay(Duration.ofMillis(100))
				.probeInterval(Duration.ofMillis(100))
				.build();
	}

	private final List<AutoCloseable> open = new ArrayList<>();
	private final Duration commandTimeout;

	/** Stores and endpoints with the short {@link #COMMAND_TIMEOUT}. */
	Instances() {
		this(COMMAND_TIMEOUT);
	}

	/** @param commandTimeout the command timeout of every endpoint this opens */
	Instances(Duration commandTimeout) {
		this.commandTimeout = commandTimeout;
	}

	RedisEndpoint endpoint(RedisServer redis) {
		RedisEndpoint endpoint = RedisEndpoint.create(settings(redis, commandTimeout));
		open.add(endpoint);
		return endpoint;
	}

	/**
	 * @return a store on a new client, once it is shared and has used a bucket once (on a cold JVM the
	 *         first use loads Bucket4j's classes and may miss the short command timeout; the store then
	 *         falls back and recovers, before the test starts)
	 */
	RedisBucketStore store(RedisServer redis, UnaryOperator<RedisBucketStore.Builder> config) {
		List<StoreModeChange> changes = new java.util.concurrent.CopyOnWriteArrayList<>();
		RedisBucketStore store = unconnectedStore(redis, b -> config.apply(b.listener(changes::add)));
		try {
			store.shared().get(5, TimeUnit.SECONDS);
			store.available(WARM_UP, "warm-up").get(5, TimeUnit.SECONDS);
		}
		catch (Exception e) {
			throw new AssertionError("store did not reach Redis at " + redis, e);
		}
		try {
			Await.until("the store is shared after its warm-up", Duration.ofSeconds(5),
					() -> store.mode() == BucketStore.Mode.SHARED);
		}
		catch (AssertionError e) {
			throw new AssertionError(e.getMessage() + "; its mode changes: " + changes, e);
		}
		return store;
	}

	private static final BucketSpec WARM_UP = BucketSpec.of("warm-up", 1, Duration.ofSeconds(1));

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
