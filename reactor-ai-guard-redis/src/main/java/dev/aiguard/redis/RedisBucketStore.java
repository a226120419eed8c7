package dev.aiguard.redis;

import java.net.SocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Delayed;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.ConsumptionProbe;
import io.github.bucket4j.TokensInheritanceStrategy;
import io.github.bucket4j.distributed.AsyncBucketProxy;
import io.github.bucket4j.distributed.ExpirationAfterWriteStrategy;
import io.github.bucket4j.distributed.proxy.AsyncProxyManager;
import io.github.bucket4j.distributed.proxy.optimization.Optimizations;
import io.github.bucket4j.redis.lettuce.Bucket4jLettuce;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.api.StatefulRedisConnection;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import dev.aiguard.budget.Bucket4jSpecs;
import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.budget.Take;

/**
 * A {@link BucketStore} whose buckets live in Redis, so every instance of a service draws on the same
 * tenant and provider budgets. Each bucket is a Bucket4j bucket behind Bucket4j's Lettuce
 * {@link AsyncProxyManager} (compare-and-swap scripts; nothing blocks a thread). Keys are
 * {@code <prefix>budget:<spec name>:<id>} and expire once the bucket would have refilled.
 *
 * <pre>{@code
 * RedisEndpoint redis = RedisEndpoint.create(RedisSettings.of("redis://redis:6379"));
 * RedisBucketStore store = RedisBucketStore.builder(redis)
 *     .name("budgets")
 *     .instances(3)                                 // the local fallback holds 1/3 of each budget
 *     .fallback(RedisBucketStore.Fallback.OPEN)     // or CLOSED: refuse while Redis is down
 *     .listener(change -> log.warn("{}", change))
 *     .build();
 * }</pre>
 *
 * <h2>When Redis is down</h2>
 * An operation that fails — Redis has not answered it within {@link RedisSettings#commandTimeout()}
 * (all its round trips together), the connection was lost, or the client refuses commands while
 * disconnected — moves the store to its fallback mode at
 * once, and that same request is answered by the fallback (it is never answered twice). A lost
 * connection moves it there as soon as Lettuce notices, before any request fails. In
 * {@link Mode#FALLBACK_OPEN} each budget is a local in-process bucket holding {@code 1/instances} of
 * the shared one, so the instances together stay near the shared budget; a bucket this instance used
 * while shared starts its fallback from this instance's part of what Redis last said was left, not
 * full; in
 * {@link Mode#FALLBACK_CLOSED} every {@link #tryTake} fails with
 * {@link SharedStoreUnavailableException}. Every {@link RedisSettings#probeInterval()} the store asks
 * Redis whether it is back, and returns to {@link Mode#SHARED} when it answers. A restarted Redis that
 * kept no data hands out full buckets again. Each change is told to the {@link StoreModeListener}s and
 * to {@link RedisMetrics}.
 */
public final class RedisBucketStore implements BucketStore, AutoCloseable {

	/** What a store does while Redis cannot be reached. */
	public enum Fallback {
		/** Admit from a local bucket holding {@code 1/instances} of each shared budget. */
		OPEN,
		/** Refuse every {@link BucketStore#tryTake}. */
		CLOSED
	}

	private static final AtomicReferenceFieldUpdater<RedisBucketStore, Mode> MODE = AtomicReferenceFieldUpdater
			.newUpdater(RedisBucketStore.class, Mode.class, "mode");

	/** A Redis bucket and the spec it was built for. */
	private record Remote(BucketSpec spec, AsyncBucketProxy bucket) {
	}

	private final RedisEndpoint endpoint;
	private final String name;
	private final int instances;
	private final Mode fallbackMode;
	private final String keyPrefix;
	private final List<StoreModeListener> listeners;
	private final RedisMetrics metrics;
	private final Scheduler scheduler;
	/** Whether {@link #scheduler} is the store's own thread (the default), disposed when it closes. */
	private final boolean ownScheduler;
	private final LocalBucketStore local;
	private final ConcurrentHashMap<String, Remote> remotes = new ConcurrentHashMap<>();
	private final ConcurrentHashMap<BucketSpec, BucketSpec> shares = new ConcurrentHashMap<>();
	private final ConcurrentHashMap<BucketSpec, Long> versions = new ConcurrentHashMap<>();
	/** Spec name and id: what the shared bucket had left at the last take, and the fallback it was applied in. */
	private final ConcurrentHashMap<String, long[]> lastShared = new ConcurrentHashMap<>();
	/** Counts the falls from SHARED to the fallback. */
	private volatile long fallbacks;
	private final CompletableFuture<Void> firstShared = new CompletableFuture<>();
	private final long deadlineMillis;
	private final AtomicBoolean probeInFlight = new AtomicBoolean();
	/**
	 * Held while a probe hands its ping to Lettuce and while {@link #close()} marks the store closed:
	 * a probe never writes on the connection while it is being closed. Lettuce 6.8's endpoint lock
	 * can be left spinning for good when a command is written while the connection closes (a
	 * {@code SharedLock} that counts writers per thread), which pegs the writing thread — one of
	 * the probe scheduler's — and blocks {@code closeAsync()} forever.
	 */
	private final Object probeOrClose = new Object();
	private final RedisConnectionStateListener connectionWatch = new ConnectionWatch();

	private volatile Mode mode;
	private volatile String fallbackReason = "not connected yet";
	private volatile StatefulRedisConnection<String, byte[]> connection;
	private volatile AsyncProxyManager<String> proxies;
	private volatile Disposable probing;
	private volatile boolean closed;

	private RedisBucketStore(Builder b) {
		this.endpoint = b.endpoint;
		this.name = b.name;
		this.instances = b.instances;
		this.fallbackMode = b.fallback == Fallback.OPEN ? Mode.FALLBACK_OPEN : Mode.FALLBACK_CLOSED;
		this.keyPrefix = endpoint.settings().keyPrefix() + "budget:";
		this.listeners = List.copyOf(b.listeners);
		this.metrics = b.metrics;
		this.ownScheduler = b.scheduler == null;
		this.scheduler = ownScheduler ? probeThread(name) : b.scheduler;
		this.local = b.localClock == null ? LocalBucketStore.create() : LocalBucketStore.create(b.localClock);
		this.mode = fallbackMode;
		this.deadlineMillis = Math.max(1, endpoint.settings().commandTimeout().toMillis());
	}

	/**
	 * The store's own probe thread: a daemon that may block (it is not one of Reactor's
	 * non-blocking threads), so Lettuce's endpoint locks are taken there and not on a thread
	 * that deadlines of guarded streams share, should Lettuce ever hold one for long.
	 */
	private static Scheduler probeThread(String storeName) {
		return Schedulers.fromExecutorService(Executors.newSingleThreadScheduledExecutor(task -> {
			Thread t = new Thread(task, "aiguard-redis-probe-" + storeName);
			t.setDaemon(true);
			return t;
		}), "aiguard-redis-probe-" + storeName);
	}

	/** @return a builder for a store on {@code endpoint} */
	public static Builder builder(RedisEndpoint endpoint) {
		return new Builder(endpoint);
	}

	private RedisBucketStore start() {
		safely(() -> metrics.storeRegistered(name, this::mode));
		endpoint.client().addListener(connectionWatch);
		startProbing();
		probe();
		return this;
	}

	// ---------------------------------------------------------------- reading

	@Override
	public Mode mode() {
		return mode;
	}

	/** @return the store's name (the metrics' {@code store} tag) */
	public String name() {
		return name;
	}

	/** @return the number of instances sharing the budgets; the local fallback holds 1/this of each */
	public int instances() {
		return instances;
	}

	/** @return the mode this store falls back to while Redis is down */
	public Mode fallbackMode() {
		return fallbackMode;
	}

	/**
	 * Completes the first time the store reaches {@link Mode#SHARED} (right after connecting when Redis
	 * is up). Until then it answers from its fallback.
	 *
	 * <pre>{@code
	 * store.shared().get(2, TimeUnit.SECONDS);   // at start-up, off any Reactor thread
	 * }</pre>
	 *
	 * @return a future completed when the store is first shared
	 */
	public CompletableFuture<Void> shared() {
		return firstShared.copy();
	}

	/**
	 * @return the spec the local fallback uses for {@code spec}: the same name, period and refill, and
	 *         {@code capacity / instances} units (at least one)
	 */
	public BucketSpec localShare(BucketSpec spec) {
		BucketSpec share = shares.get(spec);
		return share != null ? share : shares.computeIfAbsent(spec, this::share);
	}

	private BucketSpec share(BucketSpec spec) {
		BucketSpec s = BucketSpec.of(spec.name(), Math.max(1, spec.capacity() / instances), spec.period());
		return spec.refill() == BucketSpec.Refill.INTERVALLY ? s.intervally() : s;
	}

	// ---------------------------------------------------------------- operations

	@Override
	public CompletableFuture<Take> tryTake(BucketSpec spec, String id, long units) {
		Objects.requireNonNull(spec, "spec");
		Objects.requireNonNull(id, "id");
		if (units < 1) {
			return CompletableFuture.failedFuture(new IllegalArgumentException("units must be >= 1, was " + units));
		}
		AsyncBucketProxy bucket = sharedBucket(spec, id);
		if (bucket == null) {
			return fallbackTake(spec, id, units);
		}
		return guarded(() -> bucket.tryConsumeAndReturnRemaining(units)).handle((probe, error) -> {
			if (error == null) {
				sawShared(spec, id, probe.getRemainingTokens());
				return CompletableFuture.completedFuture(take(probe));
			}
			lost(error);
			return fallbackTake(spec, id, units);
		}).thenCompose(f -> f);
	}

	private static Take take(ConsumptionProbe probe) {
		return probe.isConsumed() ? Take.ofTaken(probe.getRemainingTokens())
				: Take.ofRefused(probe.getNanosToWaitForRefill());
	}

	private CompletableFuture<Take> fallbackTake(BucketSpec spec, String id, long units) {
		if (fallbackMode == Mode.FALLBACK_CLOSED) {
			return CompletableFuture.failedFuture(new SharedStoreUnavailableException(name, fallbackReason));
		}
		return local.tryTake(alignedShare(spec, id), id, units);
	}

	/** Remembers what a shared bucket had left, for the local share should Redis go down. */
	private void sawShared(BucketSpec spec, String id, long remaining) {
		String key = spec.name() + ':' + id;
		long[] seen = lastShared.get(key);
		if (seen == null) {
			seen = lastShared.computeIfAbsent(key, k -> new long[] {Long.MAX_VALUE, -1L});
		}
		seen[0] = remaining;
	}

	/**
	 * The local share of {@code spec}, lowered, once per fallback, to this instance's part of what the
	 * shared bucket last had left: a fallback never hands out a full bucket the shared one had spent.
	 */
	private BucketSpec alignedShare(BucketSpec spec, String id) {
		BucketSpec share = localShare(spec);
		long[] seen = lastShared.get(spec.name() + ':' + id);
		long now = fallbacks;
		if (seen != null && seen[1] != now) {
			synchronized (seen) {
				if (seen[1] != now) {
					seen[1] = now;
					long target = Math.max(0L, seen[0]) / instances;
					BucketStore.Immediate sync = local.immediate();
					long held = sync.available(share, id);
					if (held > target) {
						sync.takeRegardless(share, id, held - target);
					}
				}
			}
		}
		return share;
	}

	/**
	 * Reserves in Redis with Bucket4j's reserve-and-calculate-time-to-sleep command, one
	 * compare-and-swap: the instances' requests queue in the order Redis saw them. While Redis is down
	 * the local share reserves the same way (fail-open) or the reservation fails (fail-closed).
	 */
	@Override
	public CompletableFuture<Take> reserve(BucketSpec spec, String id, long units, long maxWaitNanos) {
		Objects.requireNonNull(spec, "spec");
		Objects.requireNonNull(id, "id");
		if (units < 1) {
			return CompletableFuture.failedFuture(new IllegalArgumentException("units must be >= 1, was " + units));
		}
		if (maxWaitNanos < 0) {
			return CompletableFuture.failedFuture(
					new IllegalArgumentException("maxWaitNanos must be >= 0, was " + maxWaitNanos));
		}
		if (units > spec.capacity()) {
			return CompletableFuture.completedFuture(Take.ofRefused(Long.MAX_VALUE));
		}
		if (maxWaitNanos == 0) {
			return tryTake(spec, id, units).thenApply(t -> t.taken() ? Take.ofReserved(0L) : t);
		}
		AsyncBucketProxy bucket = sharedBucket(spec, id);
		if (bucket == null) {
			return fallbackReserve(spec, id, units, maxWaitNanos);
		}
		WaitHeard heard = new WaitHeard();
		return guarded(() -> bucket.asScheduler().tryConsume(units, maxWaitNanos, heard).thenCompose(reserved -> reserved
				? CompletableFuture.completedFuture(reservedShared(spec, id, heard.nanos))
				: bucket.estimateAbilityToConsume(units).thenApply(e -> Take.ofRefused(e.getNanosToWaitForRefill()))))
				.handle((take, error) -> {
					if (error == null) {
						return CompletableFuture.completedFuture(take);
					}
					lost(error);
					return fallbackReserve(spec, id, units, maxWaitNanos);
				}).thenCompose(f -> f);
	}

	private Take reservedShared(BucketSpec spec, String id, long nanos) {
		if (nanos > 0L) {
			sawShared(spec, id, 0L); // queueing: the shared bucket is in debt
		}
		return Take.ofReserved(nanos);
	}

	private CompletableFuture<Take> fallbackReserve(BucketSpec spec, String id, long units, long maxWaitNanos) {
		if (fallbackMode == Mode.FALLBACK_CLOSED) {
			return CompletableFuture.failedFuture(new SharedStoreUnavailableException(name, fallbackReason));
		}
		return local.reserve(alignedShare(spec, id), id, units, maxWaitNanos);
	}

	/**
	 * The "scheduler" handed to Bucket4j's reservation: Bucket4j reserves atomically in Redis and then
	 * schedules the completion after the wait; this one hears the wait and completes at once (the
	 * guard waits on its own timer).
	 */
	private static final class WaitHeard extends AbstractExecutorService implements ScheduledExecutorService {
		volatile long nanos;

		@Override
		public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
			nanos = unit.toNanos(delay);
			command.run();
			return new Done<>(null);
		}

		@Override
		public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
			nanos = unit.toNanos(delay);
			try {
				return new Done<>(callable.call());
			}
			catch (Exception e) {
				throw new CompletionException(e);
			}
		}

		@Override
		public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
			throw new UnsupportedOperationException("a reservation schedules once");
		}

		@Override
		public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
			throw new UnsupportedOperationException("a reservation schedules once");
		}

		@Override
		public void execute(Runnable command) {
			command.run();
		}

		@Override
		public void shutdown() {
		}

		@Override
		public List<Runnable> shutdownNow() {
			return List.of();
		}

		@Override
		public boolean isShutdown() {
			return false;
		}

		@Override
		public boolean isTerminated() {
			return false;
		}

		@Override
		public boolean awaitTermination(long timeout, TimeUnit unit) {
			return false;
		}
	}

	/** An already completed scheduled task. */
	private record Done<V>(V value) implements ScheduledFuture<V> {

		@Override
		public long getDelay(TimeUnit unit) {
			return 0L;
		}

		@Override
		public int compareTo(Delayed other) {
			return Long.compare(0L, other.getDelay(TimeUnit.NANOSECONDS));
		}

		@Override
		public boolean cancel(boolean mayInterruptIfRunning) {
			return false;
		}

		@Override
		public boolean isCancelled() {
			return false;
		}

		@Override
		public boolean isDone() {
			return true;
		}

		@Override
		public V get() {
			return value;
		}

		@Override
		public V get(long timeout, TimeUnit unit) {
			return value;
		}
	}

	@Override
	public CompletableFuture<Void> takeRegardless(BucketSpec spec, String id, long units) {
		return update(spec, id, units, b -> b.consumeIgnoringRateLimits(units).thenApply(x -> null),
				() -> local.takeRegardless(localShare(spec), id, units));
	}

	@Override
	public CompletableFuture<Void> giveBack(BucketSpec spec, String id, long units) {
		return update(spec, id, units, b -> b.addTokens(units),
				() -> local.giveBack(localShare(spec), id, units));
	}

	@Override
	public CompletableFuture<Void> pause(BucketSpec spec, String id, Duration duration) {
		Objects.requireNonNull(duration, "duration");
		if (duration.isNegative() || duration.isZero()) {
			return CompletableFuture.completedFuture(null);
		}
		// the local share is paused as well: should Redis go down now, the fallback honours the pause too
		local.pause(localShare(spec), id, duration);
		long refill = spec.refilledIn(duration);
		// hold -refill afterwards (a longer pause already in place is kept): empty by the pause's end
		return update(spec, id, 1, b -> b.getAvailableTokens().thenCompose(available -> {
			long units = available + refill;
			return units > 0 ? b.consumeIgnoringRateLimits(units).thenApply(x -> (Void) null)
					: CompletableFuture.<Void>completedFuture(null);
		}), () -> {
		});
	}

	@Override
	public CompletableFuture<Long> available(BucketSpec spec, String id) {
		Objects.requireNonNull(spec, "spec");
		Objects.requireNonNull(id, "id");
		AsyncBucketProxy bucket = sharedBucket(spec, id);
		if (bucket == null) {
			return fallbackAvailable(spec, id);
		}
		return guarded(bucket::getAvailableTokens).handle((units, error) -> {
			if (error == null) {
				return CompletableFuture.completedFuture(units);
			}
			lost(error);
			return fallbackAvailable(spec, id);
		}).thenCompose(f -> f);
	}

	private CompletableFuture<Long> fallbackAvailable(BucketSpec spec, String id) {
		return fallbackMode == Mode.FALLBACK_CLOSED ? CompletableFuture.completedFuture(0L)
				: local.available(alignedShare(spec, id), id);
	}

	/** A write to a shared bucket, or to the local share while in FALLBACK_OPEN (nothing while closed). */
	private CompletableFuture<Void> update(BucketSpec spec, String id, long units,
			Function<AsyncBucketProxy, CompletableFuture<Void>> remote, Runnable fallback) {
		Objects.requireNonNull(spec, "spec");
		Objects.requireNonNull(id, "id");
		if (units < 0) {
			return CompletableFuture.failedFuture(new IllegalArgumentException("units must be >= 0, was " + units));
		}
		if (units == 0) {
			return CompletableFuture.completedFuture(null);
		}
		AsyncBucketProxy bucket = sharedBucket(spec, id);
		if (bucket == null) {
			return runFallback(fallback);
		}
		return guarded(() -> remote.apply(bucket)).handle((ok, error) -> {
			if (error == null) {
				return CompletableFuture.<Void>completedFuture(null);
			}
			lost(error);
			return runFallback(fallback);
		}).thenCompose(f -> f);
	}

	private CompletableFuture<Void> runFallback(Runnable fallback) {
		if (fallbackMode == Mode.FALLBACK_OPEN) {
			try {
				fallback.run();
			}
			catch (RuntimeException e) {
				return CompletableFuture.failedFuture(e);
			}
		}
		return CompletableFuture.completedFuture(null);
	}

	/**
	 * The call's future, failed instead of thrown when Bucket4j throws before returning one, and failed
	 * when the whole operation (a compare-and-swap may take several round trips, and Lettuce re-sends a
	 * command that was in flight when the connection broke) has not answered within the command timeout.
	 */
	private <T> CompletableFuture<T> guarded(Supplier<CompletableFuture<T>> call) {
		CompletableFuture<T> future;
		try {
			future = call.get();
		}
		catch (RuntimeException e) {
			return CompletableFuture.failedFuture(e);
		}
		// a copy, so the deadline never completes Bucket4j's own future
		return future.copy().orTimeout(deadlineMillis, TimeUnit.MILLISECONDS);
	}

	/** @return the shared bucket, or {@code null} while the store is not {@link Mode#SHARED} */
	private AsyncBucketProxy sharedBucket(BucketSpec spec, String id) {
		AsyncProxyManager<String> pm = proxies;
		if (mode != Mode.SHARED || pm == null) {
			return null;
		}
		String key = keyPrefix + spec.name() + ':' + id;
		Remote remote = remotes.get(key);
		if (remote == null || !remote.spec.equals(spec)) {
			remote = remotes.compute(key, (k, old) -> old != null && old.spec.equals(spec) ? old
					: new Remote(spec, newBucket(pm, k, spec)));
		}
		return remote.bucket;
	}

	private AsyncBucketProxy newBucket(AsyncProxyManager<String> pm, String key, BucketSpec spec) {
		BucketConfiguration configuration = Bucket4jSpecs.configuration(spec);
		// the version is when this instance first met the spec: a newer spec (a redeploy) replaces the
		// limits stored in Redis, keeping the fill in proportion, and an instance still on an older spec
		// does not move them back
		long version = versions.computeIfAbsent(spec, s -> nextVersion());
		return pm.builder()
				// requests for one key that arrive while a command for it is in flight go to Redis as one
				// batch: without it, concurrent compare-and-swaps on a hot key retry each other
				.withOptimization(Optimizations.batching())
				.withImplicitConfigurationReplacement(version, TokensInheritanceStrategy.PROPORTIONALLY)
				.build(key, () -> CompletableFuture.completedFuture(configuration));
	}

	/** Last version handed out in this JVM: versions only grow, even for two specs met in one microsecond. */
	private static final java.util.concurrent.atomic.AtomicLong LAST_VERSION = new java.util.concurrent.atomic.AtomicLong();

	/** @return the wall clock in microseconds, above every version handed out before in this JVM */
	private static long nextVersion() {
		Instant now = Instant.now();
		long micros = now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000L;
		return LAST_VERSION.updateAndGet(last -> Math.max(last + 1, micros));
	}

	// ---------------------------------------------------------------- modes

	/** A command failed or the connection was lost: from SHARED to the fallback mode. */
	private void lost(Throwable error) {
		Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
		String reason = cause instanceof TimeoutException
				? "no answer within the command timeout of " + endpoint.settings().commandTimeout()
				: cause.getClass().getSimpleName() + ": " + cause.getMessage();
		lost(reason);
	}

	private void lost(String reason) {
		if (closed) {
			return;
		}
		if (MODE.compareAndSet(this, Mode.SHARED, fallbackMode)) {
			fallbacks++;
			fallbackReason = reason;
			changed(Mode.SHARED, fallbackMode, reason);
			startProbing();
		}
	}

	/** Redis answered: back to SHARED. */
	private void regained() {
		if (closed) {
			return;
		}
		if (MODE.compareAndSet(this, fallbackMode, Mode.SHARED)) {
			stopProbing();
			changed(fallbackMode, Mode.SHARED, firstShared.isDone() ? "redis answered again" : "connected to redis");
			firstShared.complete(null);
		}
	}

	private void changed(Mode from, Mode to, String reason) {
		safely(() -> metrics.storeModeChanged(name, from, to));
		if (!listeners.isEmpty()) {
			StoreModeChange change = new StoreModeChange(name, from, to, reason, Instant.now());
			for (StoreModeListener l : listeners) {
				safely(() -> l.onModeChange(change));
			}
		}
	}

	private synchronized void startProbing() {
		if (probing == null && !closed) {
			Duration every = endpoint.settings().probeInterval();
			probing = Flux.interval(every, every, scheduler).subscribe(tick -> probe());
		}
	}

	private synchronized void stopProbing() {
		Disposable p = probing;
		probing = null;
		if (p != null) {
			p.dispose();
		}
	}

	/** Connects when there is no connection yet, else pings; one probe at a time. */
	private void probe() {
		if (closed || mode == Mode.SHARED || !probeInFlight.compareAndSet(false, true)) {
			return;
		}
		CompletableFuture<?> attempt;
		synchronized (probeOrClose) {
			if (closed) {
				probeInFlight.set(false);
				return;
			}
			StatefulRedisConnection<String, byte[]> c = connection;
			attempt = c == null ? endpoint.connect().thenAccept(this::install) : c.async().ping().toCompletableFuture();
		}
		attempt.whenComplete((ok, error) -> {
			probeInFlight.set(false);
			if (error == null) {
				regained();
			}
			else if (fallbackReason.startsWith("not connected")) {
				fallbackReason = "not connected yet: " + error.getMessage();
			}
		});
	}

	private void install(StatefulRedisConnection<String, byte[]> c) {
		if (closed) {
			c.closeAsync();
			return;
		}
		this.proxies = Bucket4jLettuce.casBasedBuilder(c.async())
				.expirationAfterWrite(ExpirationAfterWriteStrategy.basedOnTimeForRefillingBucketUpToMax(Duration.ofSeconds(10)))
				.build()
				.asAsync();
		this.connection = c;
	}

	/** Lettuce tells of a lost or re-established connection before any command fails. */
	private final class ConnectionWatch implements RedisConnectionStateListener {

		@Override
		public void onRedisDisconnected(RedisChannelHandler<?, ?> handler) {
			if (handler == connection) {
				lost("connection to redis lost");
			}
		}

		@Override
		public void onRedisConnected(RedisChannelHandler<?, ?> handler, SocketAddress address) {
			if (handler == connection) {
				probe();
			}
		}
	}

	private static void safely(Runnable callback) {
		try {
			callback.run();
		}
		catch (Throwable t) {
			// a throwing listener or metrics implementation must not break the store
		}
	}

	/**
	 * Stops probing and closes the store's connection (not the {@link RedisEndpoint}). Afterwards the
	 * store stays in its fallback mode.
	 */
	@Override
	public void close() {
		synchronized (probeOrClose) {
			// from here no probe writes on the connection: one handing its ping over has done so
			closed = true;
		}
		stopProbing();
		endpoint.client().removeListener(connectionWatch);
		MODE.set(this, fallbackMode);
		StatefulRedisConnection<String, byte[]> c = connection;
		Runnable closeConnection = c == null ? () -> { } : c::closeAsync;
		if (ownScheduler) {
			// Lettuce's close takes its endpoint lock, on the caller's thread: on the store's own thread
			// instead, so a lock Lettuce never releases keeps that thread and never the caller's
			try {
				scheduler.schedule(() -> {
					try {
						closeConnection.run();
					}
					finally {
						scheduler.dispose();
					}
				});
				return;
			}
			catch (RejectedExecutionException alreadyDisposed) {
				// closed before: the connection is closed here
			}
		}
		closeConnection.run();
	}

	@Override
	public String toString() {
		return "RedisBucketStore{" + name + ", " + mode + ", instances=" + instances + "}";
	}

	/** Builds a {@link RedisBucketStore}; each setter checks its value. */
	public static final class Builder {

		private final RedisEndpoint endpoint;
		private String name = "budgets";
		private int instances = 1;
		private Fallback fallback = Fallback.OPEN;
		private final List<StoreModeListener> listeners = new ArrayList<>();
		private RedisMetrics metrics = RedisMetrics.NOOP;
		/** {@code null}: the store's own probe thread. */
		private Scheduler scheduler;
		private LongSupplier localClock;

		private Builder(RedisEndpoint endpoint) {
			this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
		}

		/** @param name the store's name, for metrics and events; non-blank */
		public Builder name(String name) {
			Objects.requireNonNull(name, "name");
			if (name.isBlank()) {
				throw new IllegalArgumentException("name must not be blank, was '" + name + "'");
			}
			this.name = name;
			return this;
		}

		/**
		 * @param instances how many instances share the budgets, {@code >= 1}; the local fallback of each
		 * holds {@code 1/instances} of every budget
		 */
		public Builder instances(int instances) {
			if (instances < 1) {
				throw new IllegalArgumentException("instances must be >= 1, was " + instances);
			}
			this.instances = instances;
			return this;
		}

		/** @param fallback what to do while Redis is down (default {@link Fallback#OPEN}) */
		public Builder fallback(Fallback fallback) {
			this.fallback = Objects.requireNonNull(fallback, "fallback");
			return this;
		}

		/** @param listener told of each mode change; must not block */
		public Builder listener(StoreModeListener listener) {
			listeners.add(Objects.requireNonNull(listener, "listener"));
			return this;
		}

		/** @param metrics where the mode gauge and the fallback counter go */
		public Builder metrics(RedisMetrics metrics) {
			this.metrics = Objects.requireNonNull(metrics, "metrics");
			return this;
		}

		/**
		 * @param scheduler runs the probe timer and its pings while Redis is down (default: a daemon
		 *        thread of the store's own, which also closes the connection when the store closes)
		 */
		public Builder scheduler(Scheduler scheduler) {
			this.scheduler = Objects.requireNonNull(scheduler, "scheduler");
			return this;
		}

		/** @param nanoClock the clock of the local fallback buckets (default {@code System.nanoTime()}) */
		public Builder localClock(LongSupplier nanoClock) {
			this.localClock = Objects.requireNonNull(nanoClock, "localClock");
			return this;
		}

		/**
		 * Builds the store and starts connecting, asynchronously: it answers from its fallback until
		 * Redis is reached ({@link RedisBucketStore#shared()}).
		 *
		 * @return the store
		 * @throws IllegalStateException when the endpoint is closed
		 */
		public RedisBucketStore build() {
			if (endpoint.isClosed()) {
				throw new IllegalStateException("endpoint " + endpoint + " is closed");
			}
			return new RedisBucketStore(this).start();
		}
	}
}
