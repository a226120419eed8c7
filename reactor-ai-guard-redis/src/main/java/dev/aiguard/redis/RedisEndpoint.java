package dev.aiguard.redis;

import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.codec.RedisCodec;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.DefaultClientResources;
import io.lettuce.core.resource.Delay;

/**
 * One Redis server that instances share state through: a Lettuce {@link RedisClient} set up for the
 * guard's needs — commands time out after {@link RedisSettings#commandTimeout()}, commands issued while
 * disconnected fail at once instead of queueing, and a lost connection is retried every
 * {@link RedisSettings#reconnectDelay()}. {@link RedisBucketStore} and {@link RedisBreakerSync} open
 * their connections through it. Closing it shuts the client down.
 *
 * <pre>{@code
 * try (RedisEndpoint redis = RedisEndpoint.create(RedisSettings.of("redis://127.0.0.1:6379"))) {
 *     RedisBucketStore store = RedisBucketStore.builder(redis).instances(3).build();
 *     ...
 * }
 * }</pre>
 */
public final class RedisEndpoint implements AutoCloseable {

	/** Keys as UTF-8 strings, values as bytes: what Bucket4j's Lettuce integration stores. */
	static final RedisCodec<String, byte[]> CODEC = RedisCodec.of(StringCodec.UTF8, ByteArrayCodec.INSTANCE);

	private final RedisSettings settings;
	private final RedisClient client;
	private final ClientResources resources;
	private volatile boolean closed;

	private RedisEndpoint(RedisSettings settings, RedisClient client, ClientResources resources) {
		this.settings = settings;
		this.client = client;
		this.resources = resources;
	}

	/**
	 * Creates a client for {@code settings}, with its own Netty threads (two I/O and two computation
	 * threads: the guard's traffic to Redis is small). Connecting happens when a store or a sync opens
	 * its connection, asynchronously.
	 *
	 * @return an endpoint that owns its client and shuts it down on {@link #close()}
	 */
	public static RedisEndpoint create(RedisSettings settings) {
		Objects.requireNonNull(settings, "settings");
		ClientResources resources = DefaultClientResources.builder()
				.ioThreadPoolSize(2)
				.computationThreadPoolSize(2)
				.reconnectDelay(Delay.constant(settings.reconnectDelay()))
				.build();
		RedisClient client = RedisClient.create(resources, settings.uri());
		client.setOptions(options(settings));
		return new RedisEndpoint(settings, client, resources);
	}

	/** @return the client options the guard needs: short timeouts, fail fast while disconnected, reconnect */
	static ClientOptions options(RedisSettings settings) {
		return ClientOptions.builder()
				.autoReconnect(true)
				.disconnectedBehavior(ClientOptions.DisconnectedBehavior.REJECT_COMMANDS)
				.timeoutOptions(TimeoutOptions.enabled(settings.commandTimeout()))
				.socketOptions(SocketOptions.builder().connectTimeout(settings.connectTimeout()).build())
				.build();
	}

	/** @return the settings */
	public RedisSettings settings() {
		return settings;
	}

	/** @return the Lettuce client, e.g. to add a {@code RedisConnectionStateListener} */
	public RedisClient client() {
		return client;
	}

	/** @return a new command connection (string keys, byte values), once connected */
	CompletableFuture<StatefulRedisConnection<String, byte[]>> connect() {
		return client.connectAsync(CODEC, settings.uri()).toCompletableFuture();
	}

	/** @return a new command connection with string keys and values, once connected */
	CompletableFuture<StatefulRedisConnection<String, String>> connectStrings() {
		return client.connectAsync(StringCodec.UTF8, settings.uri()).toCompletableFuture();
	}

	/** @return a new pub/sub connection (string channels and messages), once connected */
	CompletableFuture<StatefulRedisPubSubConnection<String, String>> connectPubSub() {
		return client.connectPubSubAsync(StringCodec.UTF8, settings.uri()).toCompletableFuture();
	}

	/** @return whether {@link #close()} was called */
	boolean isClosed() {
		return closed;
	}

	/**
	 * Shuts the client and its threads down, closing every connection opened through it. Blocks for
	 * at most a few hundred milliseconds: call it when the application stops, not from a Reactor thread.
	 */
	@Override
	public void close() {
		if (closed) {
			return;
		}
		closed = true;
		client.shutdown(0, 2, TimeUnit.SECONDS);
		resources.shutdown(0, 2, TimeUnit.SECONDS);
	}

	@Override
	public String toString() {
		return "RedisEndpoint{" + settings.uri().getHost() + ":" + settings.uri().getPort() + "}";
	}
}
