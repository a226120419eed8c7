package dev.aiguard.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

import io.github.bucket4j.ConsumptionProbe;
import io.github.bucket4j.distributed.AsyncBucketProxy;
import io.github.bucket4j.distributed.proxy.AsyncProxyManager;
import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;

import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.budget.Take;

/**
 * A {@link BucketStore} whose buckets live in Redis, so every instance of a service draws on the same
 * tenant and provider budgets. Each bucket is a Bucket4j bucket behind Bucket4j's Lettuce
 * {@link AsyncProxyManager} (compare-and-swap scripts; nothing blocks a caller's thread: every command
 * is written, and every answer heard, on the store's own worker). Keys are
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

	private final String name;
	private final int instances;
	private final String keyPrefix;
	private final StoreConnections links;
	private final StoreHealth health;
	private final FallbackAnswers fallback;
	private final SharedBuckets buckets = new SharedBuckets();
	private final long deadlineMillis;

	private RedisBucketStore(Builder b) {
		this.name = b.name;
		this.instances = b.instances;
		RedisSettings settings = b.endpoint.settings();
		this.keyPrefix = settings.keyPrefix() + "budget:";
		this.links = new StoreConnections(b.endpoint, name, b.scheduler);
		this.health = new StoreHealth(name, b.fallback == Fallback.OPEN ? Mode.FALLBACK_OPEN : Mode.FALLBACK_CLOSED,
				b.listeners, b.metrics, b.endpoint, links);
		this.fallback = new FallbackAnswers(name, new LocalShares(instances,
				b.localClock == null ? LocalBucketStore.create() : LocalBucketStore.create(b.localClock)), health);
		this.deadlineMillis = Math.max(1, settings.commandTimeout().toMillis());
	}

	/** @return a builder for a store on {@code endpoint} */
	public static Builder builder(RedisEndpoint endpoint) {
		return new Builder(endpoint);
	}

	private RedisBucketStore start() {
		health.start();
		return this;
	}

	// ---------------------------------------------------------------- reading

	@Override
	public Mode mode() {
		return health.mode();
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
		return fallback.local().readings();
	}

	/** @return the number of instances sharing the budgets; the local fallback holds 1/this of each */
	public int instances() {
		return instances;
	}

	/** @return the mode this store falls back to while Redis is down */
	public Mode fallbackMode() {
		return health.fallbackMode();
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
		return health.firstShared();
	}

	/**
	 * @return the spec the local fallback uses for {@code spec}: the same name, period and refill, and
	 *         {@code capacity / instances} units (at least one)
	 */
	public BucketSpec localShare(BucketSpec spec) {
		return fallback.local().share(spec);
	}

	// ---------------------------------------------------------------- operations

	@Override
	public CompletableFuture<Take> tryTake(BucketSpec spec, String id, long units) {
		Objects.requireNonNull(spec, "spec");
		Objects.requireNonNull(id, "id");
		if (units < 1) {
			return CompletableFuture.failedFuture(new IllegalArgumentException("units must be >= 1, was " + units));
		}
		return shared(spec, id, bucket -> bucket.tryConsumeAndReturnRemaining(units), probe -> {
			fallback.local().saw(spec, id, probe.getRemainingTokens());
			return take(probe);
		}, () -> fallback.tryTake(spec, id, units));
	}

	private static Take take(ConsumptionProbe probe) {
		return probe.isConsumed() ? Take.ofTaken(probe.getRemainingTokens())
				: Take.ofRefused(probe.getNanosToWaitForRefill());
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
		return shared(spec, id, bucket -> bucket.tryConsumeAndReturnRemaining(units).thenCompose(probe -> {
			if (probe.isConsumed()) {
				fallback.local().saw(spec, id, probe.getRemainingTokens());
				return CompletableFuture.completedFuture(take(probe));
			}
			WaitHeard heard = new WaitHeard();
			return bucket.asScheduler().tryConsume(units, maxWaitNanos, heard).thenCompose(reserved -> reserved
					? CompletableFuture.completedFuture(reservedShared(spec, id, heard.nanos))
					: bucket.estimateAbilityToConsume(units).thenApply(e -> Take.ofRefused(e.getNanosToWaitForRefill())));
		}), Function.identity(), () -> fallback.reserve(spec, id, units, maxWaitNanos));
	}

	private Take reservedShared(BucketSpec spec, String id, long nanos) {
		if (nanos > 0L) {
			fallback.local().saw(spec, id, 0L); // queueing: the shared bucket is in debt
		}
		return Take.ofReserved(nanos);
	}

	@Override
	public CompletableFuture<Void> takeRegardless(BucketSpec spec, String id, long units) {
		return update(spec, id, units, b -> b.consumeIgnoringRateLimits(units).thenApply(x -> null),
				() -> fallback.local().store().takeRegardless(fallback.local().share(spec), id, units));
	}

	@Override
	public CompletableFuture<Void> giveBack(BucketSpec spec, String id, long units) {
		return update(spec, id, units, b -> b.addTokens(units),
				() -> fallback.local().store().giveBack(fallback.local().share(spec), id, units));
	}

	@Override
	public CompletableFuture<Void> pause(BucketSpec spec, String id, Duration duration) {
		Objects.requireNonNull(duration, "duration");
		if (duration.isNegative() || duration.isZero()) {
			return CompletableFuture.completedFuture(null);
		}
		// the local share is paused as well: should Redis go down now, the fallback honours the pause too
		fallback.local().store().pause(fallback.local().share(spec), id, duration);
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
		return shared(spec, id, AsyncBucketProxy::getAvailableTokens, Function.identity(),
				() -> fallback.available(spec, id));
	}

	/** A write to a shared bucket, or to the local share while in FALLBACK_OPEN (nothing while closed). */
	private CompletableFuture<Void> update(BucketSpec spec, String id, long units,
			Function<AsyncBucketProxy, CompletableFuture<Void>> remote, Runnable local) {
		Objects.requireNonNull(spec, "spec");
		Objects.requireNonNull(id, "id");
		if (units < 0) {
			return CompletableFuture.failedFuture(new IllegalArgumentException("units must be >= 0, was " + units));
		}
		if (units == 0) {
			return CompletableFuture.completedFuture(null);
		}
		return shared(spec, id, remote, Function.identity(), () -> fallback.update(local));
	}

	/**
	 * {@code call} on the shared bucket while the store is {@link Mode#SHARED}, its result read by
	 * {@code answer} once it is in within the deadline; the fallback's answer when the store is not
	 * shared, or when the call fails (which the fall-back rule hears of). Each operation is answered
	 * once, by one of the two.
	 */
	private <T, R> CompletableFuture<R> shared(BucketSpec spec, String id,
			Function<AsyncBucketProxy, CompletableFuture<T>> call, Function<T, R> answer,
			Supplier<CompletableFuture<R>> otherwise) {
		AsyncProxyManager<String> pm = links.proxies();
		if (health.mode() != Mode.SHARED || pm == null) {
			return otherwise.get();
		}
		AsyncBucketProxy bucket = buckets.get(pm, keyPrefix + spec.name() + ':' + id, spec);
		return guarded(() -> call.apply(bucket)).handle((result, error) -> {
			if (error == null) {
				return CompletableFuture.completedFuture(answer.apply(result));
			}
			health.failed(error);
			return otherwise.get();
		}).thenCompose(f -> f);
	}

	/**
	 * The call, made on the store's worker (the only thread that writes on the command connection), and
	 * its answer: failed when Bucket4j throws, and failed when the whole operation (a compare-and-swap may
	 * take several round trips, and Lettuce re-sends a command that was in flight when the connection
	 * broke) has not answered within the command timeout.
	 */
	private <T> CompletableFuture<T> guarded(Supplier<CompletableFuture<T>> call) {
		if (!links.enter()) {
			return CompletableFuture.failedFuture(new IllegalStateException("the store is closed"));
		}
		CompletableFuture<T> future = new CompletableFuture<>();
		// counted out when Bucket4j's own future ends (its commands are done with the connection), not at
		// the deadline; the deadline is on a copy, so it never completes Bucket4j's future, and it is timed
		// on the store's worker (ConnectionWorker.deadline says why not orTimeout)
		future.whenComplete((v, e) -> links.exit());
		if (!links.write(() -> start(call, future))) {
			future.completeExceptionally(new IllegalStateException("the store's worker has ended"));
		}
		return links.deadline(future, deadlineMillis).whenComplete((v, e) -> {
			if (e == null) {
				health.answered();
			}
		});
	}

	/** Makes {@code call} (on the worker) and completes {@code into} with its answer, or with what it threw. */
	private static <T> void start(Supplier<CompletableFuture<T>> call, CompletableFuture<T> into) {
		try {
			call.get().whenComplete((v, e) -> {
				if (e != null) {
					into.completeExceptionally(e);
				}
				else {
					into.complete(v);
				}
			});
		}
		catch (RuntimeException e) {
			into.completeExceptionally(e);
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
		health.close();
		links.close();
	}

	/** @return completed once the store's connections are closed and its worker has ended (for tests) */
	CompletableFuture<Void> terminated() {
		return links.terminated();
	}

	@Override
	public String toString() {
		return "RedisBucketStore{" + name + ", " + health.mode() + ", instances=" + instances + "}";
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
		private @Nullable Scheduler scheduler;
		private @Nullable LongSupplier localClock;

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
		 * @param scheduler one worker of it connects, writes every command (and hears every answer, so
		 *        the store's answers complete there), pings Redis while the store is in fallback, and
		 *        closes the connections when the store closes; it may wait briefly for Lettuce's
		 *        connection lock, so not one of Reactor's non-blocking schedulers (default: a daemon
		 *        thread of the store's own, {@code aiguard-redis-probe-<name>}, which ends once the
		 *        store is closed)
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
