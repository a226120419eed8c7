package dev.aiguard.redis;

import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import io.lettuce.core.pubsub.RedisPubSubAdapter;
import org.jspecify.annotations.Nullable;

import dev.aiguard.breaker.BreakerEvent;
import dev.aiguard.breaker.BreakerListener;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;

/**
 * Shares breaker verdicts between instances over Redis pub/sub: when the breaker of one instance trips
 * on a provider outage, the same-named breakers of the others open too, for the same wait, so they do
 * not each have to fail their own way into it; when the probes close it, the others close as well.
 * Opt-in, per breaker ({@link #attach}).
 *
 * <pre>{@code
 * RedisBreakerSync sync = RedisBreakerSync.builder(redis)
 *     .instanceId("api-1")
 *     .probeQuota(1)                       // one instance probes each outage, the others wait for its verdict
 *     .metrics(new MicrometerRedisMetrics(meterRegistry))
 *     .build();
 * sync.attach(openAiBreaker);
 * }</pre>
 *
 * <h2>What travels</h2>
 * A local trip (CLOSED or HALF_OPEN to OPEN) starts a new <em>episode</em>: the instance numbers it
 * ({@code INCR}), takes a probe slot in it, and publishes {@code OPEN} with its remaining open wait.
 * A local close out of OPEN or HALF_OPEN publishes {@code CLOSED}. A receiving instance applies them
 * with {@link CircuitBreaker#transitionToOpen(Duration, String)} and
 * {@link CircuitBreaker#transitionToClosed(String)}; operator states (FORCED_OPEN, DISABLED) are
 * neither published nor overridden, and OPEN to HALF_OPEN stays local.
 *
 * <h2>Probing together</h2>
 * Each receiver of an {@code OPEN} asks Redis for a probe slot of that episode: the first
 * {@link Builder#probeQuota(int)} instances (the one that tripped first among them) open for the same
 * wait and probe from HALF_OPEN when it ends, each with its breaker's own probe count; the others open
 * for the wait plus {@link Builder#verdictWait(Duration)} and follow the verdict the probers publish
 * (a close, or a re-open that starts the next episode). Should the probers vanish, the others probe
 * on their own once their longer wait is over.
 *
 * <h2>No echo</h2>
 * A transition applied from a message is not published again (the listener knows it is applying
 * one), an instance ignores messages it published itself, and a message of an older episode than the
 * latest one seen is ignored.
 *
 * <p>Messages arrive on a Lettuce thread; applying one is a compare-and-swap on the breaker. Local
 * transitions are sent in the order they happened, one at a time, by the sync's own daemon thread
 * ({@code aiguard-redis-sync-<instanceId>}), which also connects and closes. While Redis is down
 * nothing is shared and every breaker decides alone; a transition that could not be published is
 * counted ({@link RedisMetrics#breakerTransitionNotPublished}).
 */
public final class RedisBreakerSync implements AutoCloseable {

	/** The applying thread: the breaker's listener runs on it, synchronously, and must not echo. */
	private static final ThreadLocal<Boolean> APPLYING = new ThreadLocal<>();

	/** A breaker under sync: its listener and the latest episode seen. */
	private final class Attached implements BreakerListener {
		final CircuitBreaker breaker;
		final String channel;
		final AtomicLong epoch = new AtomicLong();

		Attached(CircuitBreaker breaker) {
			this.breaker = breaker;
			this.channel = channelPrefix + breaker.name();
		}

		@Override
		public void onEvent(BreakerEvent event) {
			if (!(event instanceof BreakerEvent.StateTransition t) || APPLYING.get() != null) {
				return;
			}
			if (t.to() == BreakerState.OPEN && (t.from() == BreakerState.CLOSED || t.from() == BreakerState.HALF_OPEN)) {
				publishOpen(this, t.reason());
			}
			else if (t.to() == BreakerState.CLOSED
					&& (t.from() == BreakerState.HALF_OPEN || t.from() == BreakerState.OPEN)) {
				BreakerMessage closedMessage = new BreakerMessage(instanceId, epoch.get(), BreakerState.CLOSED, 0, t.reason());
				publish(this, BreakerState.CLOSED, () -> send(this, closedMessage));
			}
		}
	}

	private final String instanceId;
	private final int probeQuota;
	private final @Nullable Duration verdictWait;
	private final RedisMetrics metrics;
	private final String channelPrefix;
	private final String keyPrefix;
	private final ConcurrentHashMap<String, Attached> attached = new ConcurrentHashMap<>();
	private final SyncConnections links;

	private volatile boolean closed;

	private RedisBreakerSync(Builder b) {
		this.instanceId = b.instanceId;
		this.probeQuota = b.probeQuota;
		this.verdictWait = b.verdictWait;
		this.metrics = b.metrics;
		this.channelPrefix = b.endpoint.settings().keyPrefix() + "breaker:";
		this.keyPrefix = b.endpoint.settings().keyPrefix() + "breaker:";
		this.links = new SyncConnections(b.endpoint, instanceId,
				() -> attached.values().stream().map(a -> a.channel).toArray(String[]::new), new RedisPubSubAdapter<>() {
					@Override
					public void message(String channel, String message) {
						received(channel, message);
					}
				});
	}

	/** @return a builder for a sync through {@code endpoint} */
	public static Builder builder(RedisEndpoint endpoint) {
		return new Builder(endpoint);
	}

	private RedisBreakerSync start() {
		links.connect();
		return this;
	}

	/** @return this instance's id, the origin of what it publishes */
	public String instanceId() {
		return instanceId;
	}

	/**
	 * Completes once the sync is connected and subscribed to the breakers attached so far. While Redis
	 * cannot be reached the sync keeps trying, every {@link RedisSettings#reconnectDelay()}, and shares
	 * nothing meanwhile.
	 *
	 * @return a future for start-up and tests
	 */
	public CompletableFuture<Void> ready() {
		return links.ready();
	}

	/**
	 * Shares {@code breaker}'s transitions with the same-named breakers of the other instances.
	 *
	 * @return a future completed once this instance listens for the others' transitions of it
	 * @throws IllegalStateException when a breaker of the same name is attached already
	 */
	public CompletableFuture<Void> attach(CircuitBreaker breaker) {
		Objects.requireNonNull(breaker, "breaker");
		Attached a = new Attached(breaker);
		if (attached.putIfAbsent(breaker.name(), a) != null) {
			throw new IllegalStateException("a breaker named '" + breaker.name() + "' is attached already");
		}
		breaker.addListener(a);
		return links.subscribe(a.channel);
	}

	/**
	 * Stops sharing {@code breaker}'s transitions.
	 *
	 * @return whether it was attached
	 */
	public boolean detach(CircuitBreaker breaker) {
		Attached a = attached.get(breaker.name());
		if (a == null || a.breaker != breaker || !attached.remove(breaker.name(), a)) {
			return false;
		}
		breaker.removeListener(a);
		links.unsubscribe(a.channel);
		return true;
	}

	// ---------------------------------------------------------------- publishing

	/** A local trip: number the episode, take a probe slot in it, tell the others. */
	private void publishOpen(Attached a, String reason) {
		long waitMillis = a.breaker.untilProbe().map(Duration::toMillis).orElse(0L);
		publish(a, BreakerState.OPEN, () -> links.command(r -> r.incr(keyPrefix + a.breaker.name() + ":epoch"))
				.thenCompose(epoch -> {
					raise(a.epoch, epoch);
					return claim(a, epoch, waitMillis).thenApply(slot -> epoch);
				})
				.thenCompose(epoch -> send(a, new BreakerMessage(instanceId, epoch, BreakerState.OPEN, waitMillis, reason))));
	}

	/**
	 * Queues a local transition behind the ones before it (a close never overtakes the trip before it);
	 * the metrics hear whether it reached Redis. While not connected it is not shared, as without Redis.
	 */
	private void publish(Attached a, BreakerState state, Supplier<CompletableFuture<?>> commands) {
		String name = a.breaker.name();
		links.publish(new SyncConnections.Publication() {
			@Override
			public CompletableFuture<?> send() {
				return commands.get();
			}

			@Override
			public void settled(@Nullable Throwable error) {
				safely(() -> {
					if (error == null) {
						metrics.breakerTransitionPublished(name, state);
					}
					else {
						metrics.breakerTransitionNotPublished(name, state);
					}
				});
			}
		});
	}

	private CompletableFuture<Long> send(Attached a, BreakerMessage message) {
		return links.command(r -> r.publish(a.channel, message.encode()));
	}

	/** @return the probe slot this instance got in the episode (1 = first), kept a little past its verdict */
	private CompletableFuture<Long> claim(Attached a, long epoch, long waitMillis) {
		String key = keyPrefix + a.breaker.name() + ":probes:" + epoch;
		long ttl = waitMillis + verdictWaitFor(a.breaker).toMillis() + 60_000;
		return links.command(r -> r.incr(key)).thenCompose(slot -> links.command(r -> r.pexpire(key, ttl))
				.handle((x, e) -> slot));
	}

	private Duration verdictWaitFor(CircuitBreaker breaker) {
		return verdictWait != null ? verdictWait : breaker.config().maxTimeInHalfOpen();
	}

	// ---------------------------------------------------------------- receiving

	private void received(String channel, String text) {
		if (!channel.startsWith(channelPrefix)) {
			return;
		}
		Attached a = attached.get(channel.substring(channelPrefix.length()));
		BreakerMessage m = BreakerMessage.decode(text);
		if (a == null || m == null || m.origin().equals(instanceId) || closed) {
			return;
		}
		if (m.state() == BreakerState.OPEN) {
			if (m.epoch() < a.epoch.get()) {
				return; // an older episode than one this instance has seen
			}
			raise(a.epoch, m.epoch());
			CompletableFuture<Long> slot = links.connected() ? claim(a, m.epoch(), m.waitMillis())
					: CompletableFuture.completedFuture(1L);
			slot.handle((n, error) -> {
				// without an answer from Redis, probe like a prober: better than waiting for a verdict that may not come
				boolean probes = error != null || n <= probeQuota;
				Duration wait = Duration.ofMillis(m.waitMillis());
				String why = "peer " + m.origin() + ": " + m.reason();
				if (!probes) {
					wait = wait.plus(verdictWaitFor(a.breaker));
					why = why + " (probe slots taken by peers: waiting for their verdict)";
				}
				apply(a, BreakerState.OPEN, wait, why);
				return null;
			});
		}
		else if (m.epoch() >= a.epoch.get()) {
			apply(a, BreakerState.CLOSED, Duration.ZERO, "peer " + m.origin() + ": " + m.reason());
		}
	}

	private void apply(Attached a, BreakerState to, Duration wait, String reason) {
		if (closed) {
			return;
		}
		boolean moved;
		APPLYING.set(Boolean.TRUE);
		try {
			moved = to == BreakerState.OPEN ? a.breaker.transitionToOpen(wait, reason)
					: a.breaker.transitionToClosed(reason);
		}
		finally {
			APPLYING.remove();
		}
		if (moved) {
			safely(() -> metrics.breakerTransitionReceived(a.breaker.name(), to));
		}
	}

	// ---------------------------------------------------------------- helpers

	private static void raise(AtomicLong value, long to) {
		value.accumulateAndGet(to, Math::max);
	}

	private static void safely(Runnable callback) {
		try {
			callback.run();
		}
		catch (Throwable t) {
			// a throwing metrics implementation must not break the sync
		}
	}

	/**
	 * Detaches every breaker and closes the sync's connections (not the {@link RedisEndpoint}); returns at
	 * once. A transition published before the call still reaches Redis: the sync's worker sends what is
	 * queued, then closes the connections, and its thread ends — within four command timeouts whatever
	 * Redis does. What could not be sent by then is counted by
	 * {@link RedisMetrics#breakerTransitionNotPublished}.
	 */
	@Override
	public void close() {
		closed = true;
		attached.values().forEach(a -> a.breaker.removeListener(a));
		attached.clear();
		links.close();
	}

	/** @return completed once the connections are closed and the sync's thread has ended (for tests) */
	CompletableFuture<Void> terminated() {
		return links.terminated();
	}

	@Override
	public String toString() {
		return "RedisBreakerSync{" + instanceId + ", " + attached.keySet() + "}";
	}

	/** Builds a {@link RedisBreakerSync}; each setter checks its value. */
	public static final class Builder {

		private final RedisEndpoint endpoint;
		private String instanceId = UUID.randomUUID().toString();
		private int probeQuota = 1;
		private @Nullable Duration verdictWait;
		private RedisMetrics metrics = RedisMetrics.NOOP;

		private Builder(RedisEndpoint endpoint) {
			this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
		}

		/** @param id this instance's id, unique among the instances, without '|' (default: a random UUID) */
		public Builder instanceId(String id) {
			Objects.requireNonNull(id, "instanceId");
			if (id.isBlank() || id.indexOf('|') >= 0) {
				throw new IllegalArgumentException("instanceId must be non-blank without '|', was '" + id + "'");
			}
			this.instanceId = id;
			return this;
		}

		/** @param quota how many instances probe each outage, {@code >= 1} (default 1) */
		public Builder probeQuota(int quota) {
			if (quota < 1) {
				throw new IllegalArgumentException("probeQuota must be >= 1, was " + quota);
			}
			this.probeQuota = quota;
			return this;
		}

		/**
		 * @param wait how much longer than the probers an instance without a probe slot stays open,
		 * waiting for their verdict, {@code > 0} (default: the breaker's
		 * {@code BreakerConfig.maxTimeInHalfOpen()})
		 */
		public Builder verdictWait(Duration wait) {
			Objects.requireNonNull(wait, "verdictWait");
			if (wait.isNegative() || wait.isZero()) {
				throw new IllegalArgumentException("verdictWait must be > 0, was " + wait);
			}
			this.verdictWait = wait;
			return this;
		}

		/** @param metrics where the published and received transitions are counted */
		public Builder metrics(RedisMetrics metrics) {
			this.metrics = Objects.requireNonNull(metrics, "metrics");
			return this;
		}

		/**
		 * Builds the sync and starts connecting, asynchronously ({@link RedisBreakerSync#ready()}).
		 *
		 * @throws IllegalStateException when the endpoint is closed
		 */
		public RedisBreakerSync build() {
			if (endpoint.isClosed()) {
				throw new IllegalStateException("endpoint " + endpoint + " is closed");
			}
			return new RedisBreakerSync(this).start();
		}
	}
}
