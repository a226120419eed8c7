package dev.aiguard.budget;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.LongSupplier;

import io.github.bucket4j.Bucket;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.ConsumptionProbe;
import io.github.bucket4j.TimeMeter;
import io.github.bucket4j.TokensInheritanceStrategy;
import io.github.bucket4j.UninterruptibleBlockingStrategy;
import io.github.bucket4j.local.LocalBucket;
import io.github.bucket4j.local.SynchronizationStrategy;
import org.jspecify.annotations.Nullable;

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
 * give it the virtual scheduler's clock in tests. A bucket is kept until {@link #clear()} or until
 * its user lets it go ({@link BucketStore.Immediate#forget}): the budget gate does so for tenants it
 * has not seen for a while once their buckets are full again, so a full bucket that is dropped
 * loses nothing (a new one starts full).
 */
public final class LocalBucketStore implements BucketStore {

	/**
	 * One bucket and the spec it was last configured with. A slot leaves its shelf in two steps
	 * ({@link #forget}): {@code LIVE -> RETIRING} (then the bucket is checked), {@code RETIRING ->
	 * GONE} (then it is removed). Every operation reads the state after it touched the bucket: a
	 * {@code RETIRING} slot is taken back to {@code LIVE} (the operation counts, the slot stays), a
	 * {@code GONE} one makes the operation start again on the slot that replaces it. One CAS on the
	 * state decides, so no take lands on a bucket that is then thrown away.
	 */
	private static final class Slot {
		static final int LIVE = 0;
		static final int RETIRING = 1;
		static final int GONE = 2;
		static final AtomicIntegerFieldUpdater<Slot> STATE = AtomicIntegerFieldUpdater.newUpdater(Slot.class, "state");

		final LocalBucket bucket;
		volatile BucketSpec spec;
		volatile int state;

		Slot(LocalBucket bucket, BucketSpec spec) {
			this.bucket = bucket;
			this.spec = spec;
		}

		/** @return whether what was just done to the bucket counts: the slot is (again) live */
		boolean kept() {
			int s = state;
			return s == LIVE || s == RETIRING && (STATE.compareAndSet(this, RETIRING, LIVE) || state == LIVE);
		}
	}

	/** Spec name, then id: the id's bucket. */
	private final ConcurrentHashMap<String, ConcurrentHashMap<String, Slot>> shelves = new ConcurrentHashMap<>();
	private final TimeMeter time;
	private final Now now = new Now();
	/** Counts {@link #clear()}s. */
	private final AtomicInteger generation = new AtomicInteger();

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
		generation.incrementAndGet(); // resolved buckets look theirs up again
	}

	private Slot slot(BucketSpec spec, String id) {
		ConcurrentHashMap<String, Slot> shelf = shelves.get(spec.name());
		if (shelf == null) {
			shelf = shelves.computeIfAbsent(spec.name(), n -> new ConcurrentHashMap<>());
		}
		Slot slot = shelf.get(id);
		while (slot == null || slot.state == Slot.GONE) {
			if (slot != null) {
				shelf.remove(id, slot); // helps a forget() that has not removed it yet
			}
			slot = shelf.computeIfAbsent(id, i -> new Slot(newBucket(Bucket4jSpecs.configuration(spec)), spec));
		}
		BucketSpec current = slot.spec;
		if (current != spec) {
			reconfigure(slot, spec);
		}
		return slot;
	}

	/** A bucket looked up once, and again after {@link #clear()} or when another spec moved it. */
	private final class Bound implements Immediate.Resolved {
		final BucketSpec spec;
		final String id;
		private volatile @Nullable Binding binding;

		Bound(BucketSpec spec, String id) {
			this.spec = spec;
			this.id = id;
		}

		@Override
		public long tryTake(long units) {
			checkUnits(units, 1);
			while (true) {
				Slot s = slot();
				long packed = take(s.bucket, units);
				if (s.kept()) {
					return packed;
				}
			}
		}

		@Override
		public boolean tryTakeQuietly(long units) {
			checkUnits(units, 1);
			while (true) {
				Slot s = slot();
				boolean taken = s.bucket.tryConsume(units);
				if (s.kept()) {
					return taken;
				}
			}
		}

		private Slot slot() {
			int g = generation.get(); // read before any lookup: a clear() after it makes the next take look again
			Binding b = binding;
			if (b == null || b.generation != g || b.slot.spec != spec || b.slot.state == Slot.GONE) {
				b = new Binding(LocalBucketStore.this.slot(spec, id), g);
				binding = b;
			}
			return b.slot;
		}
	}

	private record Binding(Slot slot, int generation) {
	}

	/** Takes {@code units}, packed with what is left or how long to wait (see {@link Take}). */
	private static long take(Bucket bucket, long units) {
		ConsumptionProbe probe = bucket.tryConsumeAndReturnRemaining(units);
		return probe.isConsumed() ? Take.packTaken(probe.getRemainingTokens())
				: Take.packRefused(probe.getNanosToWaitForRefill());
	}

	/** A spec other than the bucket's (another instance, maybe other limits): the bucket moves to it, its fill kept in proportion. */
	private static void reconfigure(Slot slot, BucketSpec spec) {
		synchronized (slot) {
			BucketSpec current = slot.spec;
			if (current != spec && !current.equals(spec)) {
				slot.bucket.replaceConfiguration(Bucket4jSpecs.configuration(spec), TokensInheritanceStrategy.PROPORTIONALLY);
			}
			slot.spec = spec;
		}
	}

	private LocalBucket newBucket(BucketConfiguration configuration) {
		var builder = Bucket.builder().withCustomTimePrecision(time)
				.withSynchronizationStrategy(SynchronizationStrategy.LOCK_FREE);
		for (var bandwidth : configuration.getBandwidths()) {
			builder.addLimit(bandwidth);
		}
		return builder.build();
	}

	/**
	 * Hears the wait of a reservation instead of parking for it: Bucket4j's blocking
	 * {@code tryConsume} reserves atomically and then asks its strategy to sleep; the guard waits on
	 * its own timer instead. One per thread, so a reservation allocates nothing.
	 */
	private static final class WaitHeard implements UninterruptibleBlockingStrategy {
		long nanos;

		@Override
		public void parkUninterruptibly(long nanosToPark) {
			nanos = nanosToPark;
		}
	}

	private static final ThreadLocal<WaitHeard> WAIT_HEARD = ThreadLocal.withInitial(WaitHeard::new);

	/** The synchronous operations, on the calling thread. */
	private final class Now implements Immediate {

		@Override
		public long reserve(BucketSpec spec, String id, long units, long maxWaitNanos) {
			checkUnits(units, 1);
			if (maxWaitNanos < 0) {
				throw new IllegalArgumentException("maxWaitNanos must be >= 0, was " + maxWaitNanos);
			}
			if (units > spec.capacity()) {
				return Take.packRefused(Long.MAX_VALUE); // more than the bucket ever holds: never
			}
			if (maxWaitNanos == 0) {
				long taken = tryTake(spec, id, units);
				return Take.isTaken(taken) ? 0L : taken;
			}
			WaitHeard heard = WAIT_HEARD.get();
			while (true) {
				Slot s = slot(spec, id);
				heard.nanos = 0L;
				long packed = s.bucket.asBlocking().tryConsumeUninterruptibly(units, maxWaitNanos, heard) ? heard.nanos
						: Take.packRefused(s.bucket.estimateAbilityToConsume(units).getNanosToWaitForRefill());
				if (s.kept()) {
					return packed;
				}
			}
		}

		@Override
		public long tryTake(BucketSpec spec, String id, long units) {
			checkUnits(units, 1);
			while (true) {
				Slot s = slot(spec, id);
				long packed = take(s.bucket, units);
				if (s.kept()) {
					return packed;
				}
			}
		}

		@Override
		public void takeRegardless(BucketSpec spec, String id, long units) {
			if (checkUnits(units, 0) > 0) {
				Slot s;
				do {
					s = slot(spec, id);
					s.bucket.consumeIgnoringRateLimits(units);
				}
				while (!s.kept());
			}
		}

		@Override
		public void giveBack(BucketSpec spec, String id, long units) {
			if (checkUnits(units, 0) > 0) {
				Slot s;
				do {
					s = slot(spec, id);
					s.bucket.addTokens(units);
				}
				while (!s.kept());
			}
		}

		@Override
		public void pause(BucketSpec spec, String id, Duration duration) {
			Objects.requireNonNull(duration, "duration");
			Slot s;
			do {
				s = slot(spec, id);
				// hold -refilledIn(duration) afterwards: the bucket is back to zero when the pause ends
				long units = s.bucket.getAvailableTokens() + spec.refilledIn(duration);
				if (units > 0) {
					s.bucket.consumeIgnoringRateLimits(units);
				}
			}
			while (!s.kept());
		}

		@Override
		public boolean forget(BucketSpec spec, String id, boolean evenIfDrained) {
			ConcurrentHashMap<String, Slot> shelf = shelves.get(spec.name());
			if (shelf == null) {
				return true;
			}
			Slot s = shelf.get(id);
			if (s == null) {
				return true;
			}
			if (!Slot.STATE.compareAndSet(s, Slot.LIVE, Slot.RETIRING)) {
				return s.state == Slot.GONE;
			}
			// checked after RETIRING: an operation before this check left the bucket short (or it refilled
			// since, and then dropping it loses nothing); one after it finds RETIRING and keeps the slot
			if (!evenIfDrained && s.bucket.getAvailableTokens() < s.spec.capacity()) {
				Slot.STATE.compareAndSet(s, Slot.RETIRING, Slot.LIVE);
				return false;
			}
			if (!Slot.STATE.compareAndSet(s, Slot.RETIRING, Slot.GONE)) {
				return false; // an operation took it back: it is in use
			}
			shelf.remove(id, s);
			return true;
		}

		@Override
		public int size() {
			int n = 0;
			for (ConcurrentHashMap<String, Slot> shelf : shelves.values()) {
				n += shelf.size();
			}
			return n;
		}

		@Override
		public long available(BucketSpec spec, String id) {
			// a bucket never used (or let go when full) holds its capacity; a read makes none, so a gauge
			// sampled after its tenant was let go leaves nothing behind
			ConcurrentHashMap<String, Slot> shelf = shelves.get(spec.name());
			Slot s = shelf == null ? null : shelf.get(id);
			if (s == null || s.state == Slot.GONE) {
				return spec.capacity();
			}
			return slot(spec, id).bucket.getAvailableTokens();
		}

		@Override
		public Resolved resolve(BucketSpec spec, String id) {
			return new Bound(Objects.requireNonNull(spec, "spec"), Objects.requireNonNull(id, "id"));
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
	public CompletableFuture<Take> reserve(BucketSpec spec, String id, long units, long maxWaitNanos) {
		try {
			return CompletableFuture.completedFuture(Take.unpackReservation(now.reserve(spec, id, units, maxWaitNanos)));
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
		return "LocalBucketStore" + shelves.keySet();
	}
}
