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
		return store(endpoint(redis), config);
	}

	/** @return a store on {@code endpoint}, as {@link #store(RedisServer, UnaryOperator)} returns one */
	RedisBucketStore store(RedisEndpoint endpoint, UnaryOperator<RedisBucketStore.Builder> config) {
		List<StoreModeChange> changes = new java.util.concurrent.CopyOnWriteArrayList<>();
		RedisBucketStore store = config.apply(RedisBucketStore.builder(endpoint).listener(changes::add)).build();
		open.add(0, store);
		RedisSettings settings = endpoint.settings();
		String redis = endpoint.toString();
		try {
			store.shared().get(connectBound(settings).toMillis(), TimeUnit.MILLISECONDS);
			store.available(WARM_UP, "warm-up").get(connectBound(settings).toMillis(), TimeUnit.MILLISECONDS);
		}
		catch (Exception e) {
			throw new AssertionError("store did not reach Redis at " + redis + "; its mode changes: " + changes, e);
		}
		// the event, not the instant: the latest change heard is the one to SHARED (listeners hear of a change
		// before mode() shows it), and mode() shows it; a warm-up that failed and moved the store comes back
		// within the hysteresis' bound
		try {
			Await.until("the store is shared after its warm-up", returnBound(settings),
					() -> !changes.isEmpty() && changes.get(changes.size() - 1).to() == BucketStore.Mode.SHARED
							&& store.mode() == BucketStore.Mode.SHARED);
		}
		catch (AssertionError e) {
			throw new AssertionError(e.getMessage() + "; its mode changes: " + changes, e);
		}
		return store;
	}

	/**
	 * How long a store may take to connect: one attempt is bounded by the connect timeout and the first
	 * answer (the command timeout), the next starts a probe interval later. Three attempts, for a cold JVM
	 * on a machine whose two cores are kept busy by another process (a handshake missed twice was seen).
	 */
	static Duration connectBound(RedisSettings settings) {
		return settings.connectTimeout().plus(settings.commandTimeout()).plus(settings.probeInterval()).multipliedBy(3);
	}

	/**
	 * How long a store in fallback may take to share again once Redis answers (the hysteresis): a
	 * reconnection (the reconnect delay and a connect) and {@code sharedAfterProbes} pings in a row, each a
	 * probe interval after the previous one ended and each bounded by the connect and command timeouts
	 * (a probe's own bound); and one round more, as a busy machine's timers run late.
	 */
	static Duration returnBound(RedisSettings settings) {
		Duration probe = settings.probeInterval().plus(settings.connectTimeout()).plus(settings.commandTimeout());
		return settings.reconnectDelay().plus(settings.connectTimeout())
				.plus(probe.multipliedBy(settings.sharedAfterProbes() + 1L));
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
