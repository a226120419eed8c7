package dev.aiguard.redis;

import java.net.SocketAddress;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import io.github.bucket4j.ConsumptionProbe;
import io.github.bucket4j.distributed.AsyncBucketProxy;
import io.github.bucket4j.distributed.proxy.AsyncProxyManager;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionStateListener;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;

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
 * disconnected — is answered by the fallback (it is never answered twice). The store itself moves to
 * its fallback mode at once on a lost connection (as soon as Lettuce notices, before any request
 * fails) or an error reply, and on timeouts only when
 * {@link RedisSettings#fallbackAfterTimeouts()} operations in a row went unanswered over at least
 * one command timeout: one stall that times out the operations in flight together moves nothing. In
 * {@link Mode#FALLBACK_OPEN} each budget is a local in-process bucket holding {@code 1/instances} of
 * the shared one, so the instances together stay near the shared budget; a bucket this instance used
 * while shared starts its fallback from this instance's part of what Redis last said was left, not
 * full; in
 * {@link Mode#FALLBACK_CLOSED} every {@link #tryTake} fails with
 * {@link SharedStoreUnavailableException}. Every {@link RedisSettings#probeInterval()} the store asks
 * Redis whether it is back (a ping on a connection of its own, never the commands' one), and returns to
 * {@link Mode#SHARED} after {@link RedisSettings#sharedAfterProbes()} answers in a row. A restarted
 * Redis that kept no data hands out full buckets again. Each change is told to the
 * {@link StoreModeListener}s and to {@link RedisMetrics} before {@link #mode()} shows it.
 */
public final class RedisBucketStore implements BucketStore, AutoCloseable {

	/** What a store does while Redis cannot be reached. */
	public enum Fallback {
		/** Admit from a local bucket holding {@code 1/instances} of each shared budget. */
		OPEN,
		/** Refuse every {@link BucketStore#tryTake}. */
		CLOSED
	}

	/**
	 * The mode, and the mode a change decided on while its listeners are told ({@code next}, else
	 * {@code null}): {@link #mode()} shows a new mode only after the listeners and meters have heard of
	 * it, and one compare-and-swap on this decides each change.
	 */
	private record Phase(Mode mode, Mode next) {
	}

	private static final AtomicReferenceFieldUpdater<RedisBucketStore, Phase> PHASE = AtomicReferenceFieldUpdater
			.newUpdater(RedisBucketStore.class, Phase.class, "phase");

	private final RedisEndpoint endpoint;
	private final String name;
	private final int instances;
	private final Mode fallbackMode;
	private final String keyPrefix;
	private final List<StoreModeListener> listeners;
	private final RedisMetrics metrics;
	private final StoreConnections links;
	private final FallbackRule rule;
	private final LocalShares local;
	private final SharedBuckets buckets = new SharedBuckets();
	/** Counts the falls from SHARED to the fallback. */
	private volatile long fallbacks;
	private final CompletableFuture<Void> firstShared = new CompletableFuture<>();
	private final long deadlineMillis;
	/** The most one probe may take: connecting (the connect timeout) and the handshake's first answer. */
	private final long probeBoundMillis;
	private final AtomicBoolean probeInFlight = new AtomicBoolean();
	private final RedisConnectionStateListener connectionWatch = new ConnectionWatch();

	private volatile Phase phase;
	private volatile String fallbackReason = "not connected yet";
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
		this.links = new StoreConnections(endpoint, name, b.scheduler);
		RedisSettings settings = endpoint.settings();
		this.rule = new FallbackRule(settings.fallbackAfterTimeouts(), settings.commandTimeout().toNanos(),
				settings.sharedAfterProbes());
		this.local = new LocalShares(instances,
				b.localClock == null ? LocalBucketStore.create() : LocalBucketStore.create(b.localClock));
		this.phase = new Phase(fallbackMode, null);
		this.deadlineMillis = Math.max(1, settings.commandTimeout().toMillis());
		this.probeBoundMillis = settings.connectTimeout().plus(settings.commandTimeout()).toMillis();
	}

	/** @return a builder for a store on {@code endpoint} */
	public static Builder builder(RedisEndpoint endpoint) {
		return new Builder(endpoint);
	}

	private RedisBucketStore start() {
		safely(() -> metrics.storeRegistered(name, this::mode));
		endpoint.client().addListener(connectionWatch);
		startProbing();
		probe(); // no connection yet: this connects (nothing is written on a connection from this thread)
		return this;
	}

	// ---------------------------------------------------------------- reading

	@Override
	public Mode mode() {
		return phase.mode;
	}

	/** @return the store's name (the metrics' {@code store} tag) */
	public String name() {
		return name;
	}

	/** @return the Bucket4j proxies held (bounded by {@code SharedBuckets.MAX_PROXIES}); for tests */
	int proxies() {
		return buckets.size();
	}

	/** @return the last shared readings held (bounded by {@code LocalShares.MAX_READINGS}); for tests */
	int readings() {
		return local.readings();
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
		return local.share(spec);
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
				local.saw(spec, id, probe.getRemainingTokens());
				return CompletableFuture.completedFuture(take(probe));
			}
			failed(error);
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
		return local.store().tryTake(local.aligned(spec, id, fallbacks), id, units);
	}

	/**
	 * Takes the units when the shared bucket holds them (the answer says what is left, as
	 * {@link #tryTake} would), else reserves in Redis with Bucket4j's
	 * reserve-and-calculate-time-to-sleep command, one compare-and-swap: the instances' requests queue
	 * in the order Redis saw them. Both steps together are one operation with one deadline, the
	 * command timeout: a caller that needs "now, or a place in the line" asks once and waits at most
	 * that long. While Redis is down the local share reserves the same way (fail-open) or the
	 * reservation fails (fail-closed).
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
			return tryTake(spec, id, units);
		}
		AsyncBucketProxy bucket = sharedBucket(spec, id);
		if (bucket == null) {
			return fallbackReserve(spec, id, units, maxWaitNanos);
		}
		return guarded(() -> bucket.tryConsumeAndReturnRemaining(units).thenCompose(probe -> {
			if (probe.isConsumed()) {
				local.saw(spec, id, probe.getRemainingTokens());
				return CompletableFuture.completedFuture(take(probe));
			}
			WaitHeard heard = new WaitHeard();
			return bucket.asScheduler().tryConsume(units, maxWaitNanos, heard).thenCompose(reserved -> reserved
					? CompletableFuture.completedFuture(reservedShared(spec, id, heard.nanos))
					: bucket.estimateAbilityToConsume(units).thenApply(e -> Take.ofRefused(e.getNanosToWaitForRefill())));
		})).handle((take, error) -> {
			if (error == null) {
				return CompletableFuture.completedFuture(take);
			}
			failed(error);
			return fallbackReserve(spec, id, units, maxWaitNanos);
		}).thenCompose(f -> f);
	}

	private Take reservedShared(BucketSpec spec, String id, long nanos) {
		if (nanos > 0L) {
			local.saw(spec, id, 0L); // queueing: the shared bucket is in debt
		}
		return Take.ofReserved(nanos);
	}

	private CompletableFuture<Take> fallbackReserve(BucketSpec spec, String id, long units, long maxWaitNanos) {
		if (fallbackMode == Mode.FALLBACK_CLOSED) {
			return CompletableFuture.failedFuture(new SharedStoreUnavailableException(name, fallbackReason));
		}
		return local.store().reserve(local.aligned(spec, id, fallbacks), id, units, maxWaitNanos);
	}

	@Override
	public CompletableFuture<Void> takeRegardless(BucketSpec spec, String id, long units) {
		return update(spec, id, units, b -> b.consumeIgnoringRateLimits(units).thenApply(x -> null),
				() -> local.store().takeRegardless(local.share(spec), id, units));
	}

	@Override
	public CompletableFuture<Void> giveBack(BucketSpec spec, String id, long units) {
		return update(spec, id, units, b -> b.addTokens(units),
				() -> local.store().giveBack(local.share(spec), id, units));
	}

	@Override
	public CompletableFuture<Void> pause(BucketSpec spec, String id, Duration duration) {
		Objects.requireNonNull(duration, "duration");
		if (duration.isNegative() || duration.isZero()) {
			return CompletableFuture.completedFuture(null);
		}
		// the local share is paused as well: should Redis go down now, the fallback honours the pause too
		local.store().pause(local.share(spec), id, duration);
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
			failed(error);
			return fallbackAvailable(spec, id);
		}).thenCompose(f -> f);
	}

	private CompletableFuture<Long> fallbackAvailable(BucketSpec spec, String id) {
		return fallbackMode == Mode.FALLBACK_CLOSED ? CompletableFuture.completedFuture(0L)
				: local.store().available(local.aligned(spec, id, fallbacks), id);
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
			failed(error);
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
		if (!links.enter()) {
			return CompletableFuture.failedFuture(new IllegalStateException("the store is closed"));
		}
		CompletableFuture<T> future;
		try {
			future = call.get();
		}
		catch (RuntimeException e) {
			links.exit();
			return CompletableFuture.failedFuture(e);
		}
		// counted out when Bucket4j's own future ends (its commands are done with the connection), not at
		// the deadline; the deadline is on a copy, so it never completes Bucket4j's future, and it is timed
		// on the store's worker (StoreConnections.deadline says why not orTimeout)
		future.whenComplete((v, e) -> links.exit());
		return links.deadline(future, deadlineMillis).whenComplete((v, e) -> {
			if (e == null) {
				rule.answered();
			}
		});
	}

	/** @return the shared bucket, or {@code null} while the store is not {@link Mode#SHARED} */
	private AsyncBucketProxy sharedBucket(BucketSpec spec, String id) {
		AsyncProxyManager<String> pm = links.proxies();
		if (phase.mode != Mode.SHARED || pm == null) {
			return null;
		}
		return buckets.get(pm, keyPrefix + spec.name() + ':' + id, spec);
	}

	// ---------------------------------------------------------------- modes

	/**
	 * An operation failed. A timeout counts towards the fall-back rule ({@link FallbackRule}); any other
	 * failure (the connection lost, commands refused while disconnected, an error reply) moves the
	 * store to its fallback at once.
	 */
	private void failed(Throwable error) {
		Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
		if (timedOut(cause)) {
			if (rule.timedOut(links.nowNanos())) {
				lost(rule.timeoutsInARow() + " operations in a row without an answer within the command timeout of "
						+ endpoint.settings().commandTimeout());
			}
			return;
		}
		lost(cause.getClass().getSimpleName() + ": " + cause.getMessage());
	}

	/** @return whether {@code error} or one of its causes is a timeout (ours, or Lettuce's, however wrapped) */
	private static boolean timedOut(Throwable error) {
		for (Throwable t = error; t != null; t = t.getCause() == t ? null : t.getCause()) {
			if (t instanceof TimeoutException || t instanceof RedisCommandTimeoutException) {
				return true;
			}
		}
		return false;
	}

	/** Redis counts as down: from SHARED to the fallback mode. */
	private void lost(String reason) {
		if (move(Mode.SHARED, fallbackMode, reason)) {
			startProbing();
		}
	}

	/**
	 * Moves from {@code from} to {@code to} unless another change is being told or the mode is another:
	 * the listeners and meters hear of it first, then {@link #mode()} shows it.
	 *
	 * @return whether this call made the change
	 */
	private boolean move(Mode from, Mode to, String reason) {
		Phase now = phase;
		if (closed || now.next != null || now.mode != from) {
			return false;
		}
		Phase moving = new Phase(from, to);
		if (!PHASE.compareAndSet(this, now, moving)) {
			return false;
		}
		rule.reset();
		if (to != Mode.SHARED) {
			fallbacks++;
			fallbackReason = reason;
		}
		changed(from, to, reason);
		// close() may have set the fallback meanwhile: it wins
		PHASE.compareAndSet(this, moving, new Phase(to, null));
		return true;
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

	/**
	 * Schedules the next probe one probe interval from now, replacing one already scheduled: probes
	 * follow each other at least an interval apart, whatever woke one up early (a reconnection), so
	 * {@code sharedAfterProbes} answers in a row span at least that many intervals less one.
	 */
	private synchronized void startProbing() {
		Disposable previous = probing;
		probing = closed || phase.mode == Mode.SHARED ? null
				: links.after(endpoint.settings().probeInterval(), this::probe);
		if (previous != null) {
			previous.dispose();
		}
	}

	private synchronized void stopProbing() {
		Disposable p = probing;
		probing = null;
		if (p != null) {
			p.dispose();
		}
	}

	/**
	 * Connects when there is no connection yet, else pings on the probe connection; one probe at a
	 * time, on the worker only (but for the first, which only connects). Back to SHARED once enough
	 * pings in a row were answered.
	 */
	private void probe() {
		if (closed || phase.mode == Mode.SHARED) {
			return;
		}
		if (!probeInFlight.compareAndSet(false, true)) {
			startProbing(); // the one in flight may end late: the next is due all the same
			return;
		}
		CompletableFuture<Void> attempt;
		try {
			attempt = links.probe();
		}
		catch (RuntimeException e) {
			attempt = CompletableFuture.failedFuture(e);
		}
		// a connect or a ping Lettuce never completes must not stop the probing
		links.deadline(attempt, probeBoundMillis).whenComplete((ok, error) -> {
			probeInFlight.set(false);
			if (error != null) {
				rule.probeFailed();
				if (fallbackReason.startsWith("not connected")) {
					fallbackReason = "not connected yet: " + error.getMessage();
				}
			}
			else {
				boolean first = !firstShared.isDone();
				if (rule.probeAnswered(first)) {
					String why = first ? "connected to redis" : "redis answered " + rule.probesInARow() + " pings in a row";
					if (move(fallbackMode, Mode.SHARED, why)) {
						firstShared.complete(null);
					}
				}
			}
			startProbing(); // the next one, unless shared or closed
		});
	}

	/** Lettuce tells of a lost or re-established connection before any command fails. */
	private final class ConnectionWatch implements RedisConnectionStateListener {

		@Override
		public void onRedisDisconnected(RedisChannelHandler<?, ?> handler) {
			if (links.owns(handler)) {
				rule.probeFailed(); // answers before the loss do not count towards the return
				lost("connection to redis lost");
			}
		}

		@Override
		public void onRedisConnected(RedisChannelHandler<?, ?> handler, SocketAddress address) {
			if (links.owns(handler)) {
				links.onWorker(RedisBucketStore.this::probe);
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
	 * Stops probing and closes the store's connections (not the {@link RedisEndpoint}); returns at once.
	 * Afterwards the store stays in its fallback mode. New operations answer from the fallback from
	 * here on; the connections close on the store's worker once the operations in flight have finished
	 * (at most twice the command timeout), and then the worker's thread ends.
	 */
	@Override
	public void close() {
		closed = true;
		stopProbing();
		endpoint.client().removeListener(connectionWatch);
		PHASE.set(this, new Phase(fallbackMode, null));
		links.close();
	}

	/** @return completed once the store's connections are closed and its worker has ended (for tests) */
	CompletableFuture<Void> terminated() {
		return links.terminated();
	}

	@Override
	public String toString() {
		return "RedisBucketStore{" + name + ", " + phase.mode + ", instances=" + instances + "}";
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
		 * @param scheduler one worker of it connects, pings Redis while the store is in fallback, and
		 *        closes the connections when the store closes (default: a daemon thread of the store's
		 *        own, {@code aiguard-redis-probe-<name>}, which ends once the store is closed)
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
