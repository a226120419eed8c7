package dev.aiguard.redis;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.AsyncProxyManager;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.api.StatefulRedisConnection;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The two connections of a {@link RedisBucketStore} and the one worker that opens, pings and closes
 * them. The budget commands (Bucket4j's) and the health probe's pings never share a connection, and a
 * connection is never closed while a command is being written on it: Lettuce's endpoint lock
 * ({@code SharedLock}, unbounded in Lettuce 6.8.2 and 7.7.0, redis/lettuce#3880) spins forever when a
 * close waits for writers that never drain, and then holds the closing thread for good.
 *
 * <ul>
 * <li>The probe connection is written only on the worker, and closed there: its writes and its close
 * never overlap.</li>
 * <li>The command connection is written by whichever thread runs a budget operation; each operation
 * is counted while it is in flight. Closing stops new operations at once, waits for those in flight
 * to finish (at most twice the command timeout: each of their commands fails by then), and only then
 * closes the connection, on the worker.</li>
 * </ul>
 */
final class StoreConnections {

	/** Both connections, opened together. */
	private record Pair(StatefulRedisConnection<String, byte[]> commands, StatefulRedisConnection<String, byte[]> probes) {
	}

	private final RedisEndpoint endpoint;
	private final Scheduler scheduler;
	/** Whether {@link #scheduler} is the store's own thread, disposed once the connections are closed. */
	private final boolean ownScheduler;
	/** Connects, pings and closes, one task at a time. */
	private final Scheduler.Worker worker;
	private final long drainMillis;
	/** Budget operations on the command connection that have not finished yet. */
	private final AtomicInteger inFlight = new AtomicInteger();
	/** Completed once {@link #close()} was called and no operation is in flight. */
	private final CompletableFuture<Void> drained = new CompletableFuture<>();
	/** Completed once both connections are closed and the worker is disposed. */
	private final CompletableFuture<Void> terminated = new CompletableFuture<>();

	private volatile boolean closed;
	private volatile StatefulRedisConnection<String, byte[]> commands;
	private volatile StatefulRedisConnection<String, byte[]> probes;
	private volatile AsyncProxyManager<String> proxies;

	/**
	 * @param scheduler the worker's scheduler, or {@code null} for a daemon thread of the store's own,
	 *        named {@code aiguard-redis-probe-<storeName>}
	 */
	StoreConnections(RedisEndpoint endpoint, String storeName, Scheduler scheduler) {
		this.endpoint = endpoint;
		this.ownScheduler = scheduler == null;
		this.scheduler = ownScheduler ? ownThread(storeName) : scheduler;
		this.worker = this.scheduler.createWorker();
		this.drainMillis = 2 * Math.max(1, endpoint.settings().commandTimeout().toMillis());
	}

	/**
	 * A daemon that may block (it is not one of Reactor's non-blocking threads), so Lettuce's endpoint
	 * locks are taken there and not on a thread that deadlines of guarded streams share.
	 */
	private static Scheduler ownThread(String storeName) {
		String name = "aiguard-redis-probe-" + storeName;
		return Schedulers.fromExecutorService(Executors.newSingleThreadScheduledExecutor(task -> {
			Thread t = new Thread(task, name);
			t.setDaemon(true);
			return t;
		}), name);
	}

	/** @return the scheduler's time, in nanoseconds */
	long nowNanos() {
		return scheduler.now(TimeUnit.NANOSECONDS);
	}

	/** @return whether {@code task} was handed to the worker (not once the store is closed) */
	boolean onWorker(Runnable task) {
		if (closed) {
			return false;
		}
		try {
			worker.schedule(task);
			return true;
		}
		catch (RejectedExecutionException disposed) {
			return false;
		}
	}

	/** @return {@code task} run once on the worker after {@code delay}; disposed when the store is closed */
	Disposable after(Duration delay, Runnable task) {
		try {
			return worker.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
		}
		catch (RejectedExecutionException disposed) {
			return () -> { };
		}
	}

	/**
	 * A copy of {@code future} failed with a {@link java.util.concurrent.TimeoutException} when it has
	 * not completed within {@code millis}, timed on the worker. Not {@code orTimeout}: its timer is the
	 * JDK's shared delayer, whose task is cancelled under that delayer's queue lock by whichever thread
	 * completes the future — often a Lettuce event loop, which must not wait for a lock (and under
	 * BlockHound a park there throws inside the lock's queue and leaves it stuck for every thread).
	 * Reactor's worker tasks are cancelled the non-blocking way.
	 */
	<T> CompletableFuture<T> deadline(CompletableFuture<T> future, long millis) {
		CompletableFuture<T> copy = future.copy(); // the deadline never completes the caller's future
		Disposable timer = after(Duration.ofMillis(millis),
				() -> copy.completeExceptionally(new java.util.concurrent.TimeoutException("no answer within " + millis + " ms")));
		copy.whenComplete((v, e) -> timer.dispose());
		return copy;
	}

	/** @return Bucket4j's proxies on the command connection, or {@code null} before it is open */
	AsyncProxyManager<String> proxies() {
		return proxies;
	}

	/** @return whether {@code handler} is one of the two connections */
	boolean owns(RedisChannelHandler<?, ?> handler) {
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
		proxies = Bucket4jLettuce.casBasedBuilder(pair.commands().async())
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
			try {
				worker.schedule(this::closeConnections);
			}
			catch (RejectedExecutionException disposed) {
				// a scheduler given to the store was disposed before it: nothing runs on it any more
				closeConnections();
			}
		});
	}

	private void closeConnections() {
		StatefulRedisConnection<String, byte[]> p = probes;
		StatefulRedisConnection<String, byte[]> c = commands;
		CompletableFuture<Void> closedProbes = p == null ? CompletableFuture.completedFuture(null) : p.closeAsync();
		CompletableFuture<Void> closedCommands = c == null ? CompletableFuture.completedFuture(null) : c.closeAsync();
		// Lettuce completes a close on its event loop, which must not wait for the executor's lock that
		// disposing takes: the disposal goes back to the worker
		CompletableFuture.allOf(closedProbes, closedCommands).whenComplete((ok, error) -> {
			try {
				worker.schedule(this::end);
			}
			catch (RejectedExecutionException disposed) {
				end();
			}
		});
	}

	/** Disposes the worker (and the store's own thread), whatever happens. */
	private void end() {
		try {
			worker.dispose();
			if (ownScheduler) {
				scheduler.dispose();
			}
		}
		finally {
			terminated.complete(null);
		}
	}

	/** @return completed once both connections are closed and the worker is disposed */
	CompletableFuture<Void> terminated() {
		return terminated.copy();
	}
}
