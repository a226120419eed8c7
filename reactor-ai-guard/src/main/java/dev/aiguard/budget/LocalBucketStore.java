package dev.aiguard.budget;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import io.github.bucket4j.Bucket;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.ConsumptionProbe;
import io.github.bucket4j.TimeMeter;
import io.github.bucket4j.TokensInheritanceStrategy;
import io.github.bucket4j.local.LocalBucket;
import io.github.bucket4j.local.SynchronizationStrategy;

/**
 * The in-process {@link BucketStore}: one lock-free Bucket4j bucket per spec name and id, created on
 * first use. Mode {@link BucketStore.Mode#LOCAL}; its {@link #immediate()} path answers on the
 * calling thread without allocating (after a bucket's first use), and the futures are completed
 * before they are returned. Needs {@code com.bucket4j:bucket4j_jdk17-core} on the class path.
 *
 * <pre>{@code
 * BucketStore store = LocalBucketStore.create();                       // System.nanoTime()
 * BucketStore test  = LocalBucketStore.create(() -> scheduler.now(TimeUnit.NANOSECONDS));
 * }</pre>
 *
 * <p>Like a shared breaker, a store is shared by the policies that use it and keeps its own clock:
 * give it the virtual scheduler's clock in tests. Buckets are kept until {@link #clear()}; a
 * service with an unbounded set of tenant ids should bound it at its edge.
 */
public final class LocalBucketStore implements BucketStore {

	/** The buckets of one spec name, and the configuration they are moved to. */
	private static final class Shelf {
		final ConcurrentHashMap<String, Slot> buckets = new ConcurrentHashMap<>();
		volatile BucketSpec spec;
		volatile BucketConfiguration configuration;

		Shelf(BucketSpec spec) {
			this.spec = spec;
			this.configuration = Bucket4jSpecs.configuration(spec);
		}
	}

	/** One bucket and the spec it was last configured with. */
	private static final class Slot {
		final LocalBucket bucket;
		volatile BucketSpec spec;

		Slot(LocalBucket bucket, BucketSpec spec) {
			this.bucket = bucket;
			this.spec = spec;
		}
	}

	private final ConcurrentHashMap<String, Shelf> shelves = new ConcurrentHashMap<>();
	private final TimeMeter time;
	private final Now now = new Now();

	private LocalBucketStore(TimeMeter time) {
		this.time = time;
	}

	/** @return a store on {@code System.nanoTime()} */
	public static LocalBucketStore create() {
		return new LocalBucketStore(TimeMeter.SYSTEM_NANOTIME);
	}

	/**
	 * @param nanoClock a monotonic clock in nanoseconds, e.g. {@code () -> scheduler.now(NANOSECONDS)}
	 * @return a store whose buckets refill on that clock
	 */
	public static LocalBucketStore create(LongSupplier nanoClock) {
		Objects.requireNonNull(nanoClock, "nanoClock");
		return new LocalBucketStore(new TimeMeter() {
			@Override
			public long currentTimeNanos() {
				return nanoClock.getAsLong();
			}

			@Override
			public boolean isWallClockBased() {
				return false;
			}
		});
	}

	@Override
	public Mode mode() {
		return Mode.LOCAL;
	}

	@Override
	public Immediate immediate() {
		return now;
	}

	/** Forgets every bucket: the next use of a key starts full. */
	public void clear() {
		shelves.clear();
	}

	private Bucket bucket(BucketSpec spec, String id) {
		Shelf shelf = shelves.get(spec.name());
		if (shelf == null) {
			shelf = shelves.computeIfAbsent(spec.name(), n -> new Shelf(spec));
		}
		if (shelf.spec != spec && !shelf.spec.equals(spec)) {
			synchronized (shelf) {
				if (!shelf.spec.equals(spec)) {
					shelf.configuration = Bucket4jSpecs.configuration(spec);
					shelf.spec = spec;
				}
			}
		}
		Slot slot = shelf.buckets.get(id);
		if (slot == null) {
			Shelf s = shelf;
			slot = shelf.buckets.computeIfAbsent(id, i -> new Slot(newBucket(s.configuration), s.spec));
		}
		BucketSpec current = shelf.spec;
		if (slot.spec != current) {
			// a changed configuration reaches each bucket on its next use, its fill kept in proportion
			synchronized (slot) {
				if (slot.spec != current) {
					slot.bucket.replaceConfiguration(shelf.configuration, TokensInheritanceStrategy.PROPORTIONALLY);
					slot.spec = current;
				}
			}
		}
		return slot.bucket;
	}

	private LocalBucket newBucket(BucketConfiguration configuration) {
		var builder = Bucket.builder().withCustomTimePrecision(time)
				.withSynchronizationStrategy(SynchronizationStrategy.LOCK_FREE);
		for (var bandwidth : configuration.getBandwidths()) {
			builder.addLimit(bandwidth);
		}
		return builder.build();
	}

	/** The synchronous operations, on the calling thread. */
	private final class Now implements Immediate {

		@Override
		public long tryTake(BucketSpec spec, String id, long units) {
			ConsumptionProbe probe = bucket(spec, id).tryConsumeAndReturnRemaining(checkUnits(units, 1));
			return probe.isConsumed() ? Take.packTaken(probe.getRemainingTokens())
					: Take.packRefused(probe.getNanosToWaitForRefill());
		}

		@Override
		public void takeRegardless(BucketSpec spec, String id, long units) {
			if (checkUnits(units, 0) > 0) {
				bucket(spec, id).consumeIgnoringRateLimits(units);
			}
		}

		@Override
		public void giveBack(BucketSpec spec, String id, long units) {
			if (checkUnits(units, 0) > 0) {
				bucket(spec, id).addTokens(units);
			}
		}

		@Override
		public void pause(BucketSpec spec, String id, Duration duration) {
			Objects.requireNonNull(duration, "duration");
			Bucket bucket = bucket(spec, id);
			// hold -refilledIn(duration) afterwards: the bucket is back to zero when the pause ends
			long units = bucket.getAvailableTokens() + spec.refilledIn(duration);
			if (units > 0) {
				bucket.consumeIgnoringRateLimits(units);
			}
		}

		@Override
		public long available(BucketSpec spec, String id) {
			return bucket(spec, id).getAvailableTokens();
		}
	}

	// ---- the same answers as futures, completed before they are returned

	@Override
	public CompletableFuture<Take> tryTake(BucketSpec spec, String id, long units) {
		try {
			return CompletableFuture.completedFuture(Take.unpack(now.tryTake(spec, id, units)));
		}
		catch (RuntimeException e) {
			return CompletableFuture.failedFuture(e);
		}
	}

	@Override
	public CompletableFuture<Void> takeRegardless(BucketSpec spec, String id, long units) {
		return run(() -> now.takeRegardless(spec, id, units));
	}

	@Override
	public CompletableFuture<Void> giveBack(BucketSpec spec, String id, long units) {
		return run(() -> now.giveBack(spec, id, units));
	}

	@Override
	public CompletableFuture<Void> pause(BucketSpec spec, String id, Duration duration) {
		return run(() -> now.pause(spec, id, duration));
	}

	@Override
	public CompletableFuture<Long> available(BucketSpec spec, String id) {
		try {
			return CompletableFuture.completedFuture(now.available(spec, id));
		}
		catch (RuntimeException e) {
			return CompletableFuture.failedFuture(e);
		}
	}

	private static CompletableFuture<Void> run(Runnable operation) {
		try {
			operation.run();
			return CompletableFuture.completedFuture(null);
		}
		catch (RuntimeException e) {
			return CompletableFuture.failedFuture(e);
		}
	}

	private static long checkUnits(long units, long min) {
		if (units < min) {
			throw new IllegalArgumentException("units must be >= " + min + ", was " + units);
		}
		return units;
	}

	@Override
	public String toString() {
		return "LocalBucketStore(" + shelves.size() + " bucket kinds)";
	}
}
