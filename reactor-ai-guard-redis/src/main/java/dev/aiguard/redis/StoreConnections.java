package dev.aiguard.redis;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.AsyncProxyManager;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.api.StatefulRedisConnection;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

/**
 * The two connections of a {@link RedisBucketStore}, opened, pinged and closed on one
 * {@link ConnectionWorker}. The budget commands (Bucket4j's) and the health probe's pings never share a
 * connection, and a connection is never closed while a command is being written on it (the worker says
 * why).
 *
 * <ul>
 * <li>The probe connection is written only on the worker, and closed there: its writes and its close
 * never overlap.</li>
 * <li>The command connection is written on the worker too: a budget operation starts there, and
 * Bucket4j hears each answer there ({@link WorkerAnswers}), so the next round trip it starts from an
 * answer is written there as well — never on Lettuce's event loop, never on a caller's thread. Each
 * operation is counted while it is in flight. Closing stops new operations at once, waits for those in
 * flight to finish (at most twice the command timeout: each of their commands fails by then), and only
 * then closes the connection, on the worker.</li>
 * </ul>
 */
final class StoreConnections {

	/** Both connections, opened together. */
	private record Pair(StatefulRedisConnection<String, byte[]> commands, StatefulRedisConnection<String, byte[]> probes) {
	}

	private final RedisEndpoint endpoint;
	/** Connects, pings and closes, one task at a time. */
	private final ConnectionWorker worker;
	private final long drainMillis;
	/** Budget operations on the command connection that have not finished yet. */
	private final AtomicInteger inFlight = new AtomicInteger();
	/** Completed once {@link #close()} was called and no operation is in flight. */
	private final CompletableFuture<Void> drained = new CompletableFuture<>();

	private volatile boolean closed;
	private volatile @Nullable StatefulRedisConnection<String, byte[]> commands;
	private volatile @Nullable StatefulRedisConnection<String, byte[]> probes;
	private volatile @Nullable AsyncProxyManager<String> proxies;

	/**
	 * @param scheduler the worker's scheduler, or {@code null} for a daemon thread of the store's own,
	 *        named {@code aiguard-redis-probe-<storeName>}
	 */
	StoreConnections(RedisEndpoint endpoint, String storeName, @Nullable Scheduler scheduler) {
		this.endpoint = endpoint;
		this.worker = new ConnectionWorker("aiguard-redis-probe-" + storeName, scheduler);
		this.drainMillis = 2 * Math.max(1, endpoint.settings().commandTimeout().toMillis());
	}

	/** @return the worker's time, in nanoseconds */
	long nowNanos() {
		return worker.nowNanos();
	}

	/** @return whether {@code task} was handed to the worker (not once the store is closed) */
	boolean onWorker(Runnable task) {
		return !closed && worker.run(task);
	}

	/**
	 * Runs a budget operation's first write on the worker: the worker is the only thread that writes on
	 * the command connection (its answers come back there too, {@link WorkerAnswers}). Call it between
	 * {@link #enter()} and {@link #exit()}: the connection stays open until the operation is counted out.
	 *
	 * @return whether {@code task} was handed to the worker (not once it has ended)
	 */
	boolean write(Runnable task) {
		return worker.run(task);
	}

	/** @return {@code task} run once on the worker after {@code delay}; disposed when the store is closed */
	Disposable after(Duration delay, Runnable task) {
		return worker.after(delay, task);
	}

	/** A copy of {@code future} failed when it has not completed within {@code millis} ({@link ConnectionWorker#deadline}). */
	<T> CompletableFuture<T> deadline(CompletableFuture<T> future, long millis) {
		return worker.deadline(future, millis);
	}

	/** @return Bucket4j's proxies on the command connection, or {@code null} before it is open */
	@Nullable AsyncProxyManager<String> proxies() {
		return proxies;
	}

	/** @return whether {@code handler} is one of the two connections */
	boolean owns(@Nullable RedisChannelHandler<?, ?> handler) {
		return handler != null && (handler == commands || handler == probes);
	}

	/**
	 * Pings Redis on the probe connection, or opens both connections when they are not open yet. Call
	 * it on the worker only.
	 *
	 * @return completed when Redis answered (within the command timeout), failed otherwise
	 */
	CompletableFuture<Void> probe() {
		StatefulRedisConnection<String, byte[]> p = probes;
		if (p == null) {
			return connect();
		}
		return p.async().ping().toCompletableFuture().thenApply(pong -> null);
	}

	private CompletableFuture<Void> connect() {
		CompletableFuture<StatefulRedisConnection<String, byte[]>> c = endpoint.connect();
		CompletableFuture<StatefulRedisConnection<String, byte[]>> p = endpoint.connect();
		CompletableFuture<Void> installed = new CompletableFuture<>();
		c.thenCombine(p, Pair::new).whenComplete((pair, error) -> {
			if (error != null) {
				c.thenAccept(StatefulRedisConnection::closeAsync);
				p.thenAccept(StatefulRedisConnection::closeAsync);
				installed.completeExceptionally(error);
			}
			// installed on the worker, so that closing (also there) sees them or they see it closed
			else if (!onWorker(() -> install(pair, installed))) {
				closeUnused(pair, installed);
			}
		});
		return installed;
	}

	private void install(Pair pair, CompletableFuture<Void> installed) {
		if (closed) {
			closeUnused(pair, installed);
			return;
		}
		if (probes != null) { // an earlier attempt that ended late got there first: keep its pair
			pair.commands().closeAsync();
			pair.probes().closeAsync();
			installed.complete(null);
			return;
		}
		WorkerAnswers<String> api = new WorkerAnswers<>(pair.commands().async(), worker);
		proxies = new Bucket4jLettuce.LettuceBasedProxyManagerBuilder<>(api)
				.expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(10)))
				.build()
				.asAsync();
		commands = pair.commands();
		probes = pair.probes();
		installed.complete(null);
	}

	/** Connections opened after the store closed: nothing was written on them. */
	private static void closeUnused(Pair pair, CompletableFuture<Void> installed) {
		pair.commands().closeAsync();
		pair.probes().closeAsync();
		installed.completeExceptionally(new IllegalStateException("the store is closed"));
	}

	/**
	 * Counts a budget operation in before it writes on the command connection.
	 *
	 * @return whether it may go on; {@code false} once the store is closing
	 */
	boolean enter() {
		inFlight.incrementAndGet();
		if (closed) {
			exit();
			return false;
		}
		return true;
	}

	/** Counts a budget operation out, once its future (not its deadline) has completed. */
	void exit() {
		if (inFlight.decrementAndGet() == 0 && closed) {
			drained.complete(null);
		}
	}

	/**
	 * Stops new operations at once and returns; the connections close on the worker once the
	 * operations in flight have finished (or failed by their timeout), then the worker ends.
	 */
	void close() {
		if (closed) {
			return;
		}
		closed = true;
		if (inFlight.get() == 0) {
			drained.complete(null);
		}
		Disposable bound = after(Duration.ofMillis(drainMillis), () -> drained.complete(null));
		drained.thenRun(() -> {
			bound.dispose();
			worker.runOrHere(this::closeConnections);
		});
	}

	private void closeConnections() {
		StatefulRedisConnection<String, byte[]> p = probes;
		StatefulRedisConnection<String, byte[]> c = commands;
		CompletableFuture<Void> closedProbes = p == null ? CompletableFuture.completedFuture(null) : p.closeAsync();
		CompletableFuture<Void> closedCommands = c == null ? CompletableFuture.completedFuture(null) : c.closeAsync();
		CompletableFuture.allOf(closedProbes, closedCommands).whenComplete((ok, error) -> worker.end());
	}

	/** @return completed once both connections are closed and the worker is disposed */
	CompletableFuture<Void> terminated() {
		return worker.terminated();
	}
}
