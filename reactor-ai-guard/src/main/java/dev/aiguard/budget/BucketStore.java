package dev.aiguard.budget;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import org.jspecify.annotations.Nullable;

/**
 * Where budget buckets live. A bucket is named by a {@link BucketSpec} (what it counts, its limits)
 * and an id (a tenant, a provider key); the store creates it, full, the first time the pair is
 * used, from the spec passed with the call. When a later call carries a spec of the same name with
 * other limits, the store moves the bucket to them, keeping its fill in proportion.
 *
 * <p>Every operation is asynchronous ({@link CompletableFuture}) so a store can sit on a network
 * (Bucket4j's {@code AsyncBucketProxy} on Redis); the futures must never be completed by blocking
 * a Reactor thread. A store that answers without I/O — {@link LocalBucketStore} — also offers a
 * synchronous path, {@link #immediate()}, which the guard uses instead of the futures.
 *
 * <pre>{@code
 * BucketStore store = LocalBucketStore.create();
 * BucketSpec rpm = BucketSpec.of("tenant.requests", 60, Duration.ofMinutes(1));
 * store.tryTake(rpm, "acme", 1).thenAccept(take -> {
 *     if (!take.taken()) {
 *         retryIn(Duration.ofNanos(take.nanosToWait()));
 *     }
 * });
 * }</pre>
 *
 * <p>A store that cannot reach its buckets decides what to answer and says so in {@link #mode()}:
 * {@link Mode#FALLBACK_OPEN} answers as if every bucket had room (or from a local copy),
 * {@link Mode#FALLBACK_CLOSED} refuses. A future completed exceptionally is treated by the guard as
 * a refusal without a known wait.
 */
public interface BucketStore {

	/** Where the buckets currently are; the guard exposes it as a gauge. */
	enum Mode {
		/** In this process. */
		LOCAL,
		/** In a store shared by every instance (Redis). */
		SHARED,
		/** The shared store is unreachable; requests are admitted (from a local view, or unchecked). */
		FALLBACK_OPEN,
		/** The shared store is unreachable; requests are refused. */
		FALLBACK_CLOSED
	}

	/** @return where the buckets currently are */
	Mode mode();

	/**
	 * Takes {@code units} when the bucket holds them, else takes nothing and says how long until it
	 * will.
	 *
	 * @param units {@code >= 1}
	 * @return the outcome, never completed with {@code null}
	 */
	CompletableFuture<Take> tryTake(BucketSpec spec, String id, long units);

	/**
	 * Reserves {@code units} for use after a wait, when that wait is at most {@code maxWaitNanos}:
	 * the bucket goes into debt by what it lacks, so requests that reserve queue in the order they
	 * reserved, across every instance sharing the bucket, and none is woken only to find the units
	 * taken by another. When the wait would be longer nothing is reserved.
	 *
	 * <p>When the bucket holds the units now they are taken as {@link #tryTake} takes them: reserved
	 * with no wait, and {@link Take#remaining()} says what is left. The guard asks this once for
	 * "now, or a place in the line", so a store on a network answers both within one deadline.
	 *
	 * <p>The default answers from {@link #tryTake}: the units when the bucket holds them, else
	 * nothing and the wait (the caller asks again after it, without a place in a queue).
	 *
	 * @param units {@code >= 1}
	 * @param maxWaitNanos {@code >= 0}, the longest the caller would wait
	 * @return reserved ({@link Take#taken()}) with the wait before the units may be used (with what is
	 *         left when the wait is {@code 0}), or not reserved with the wait until the bucket would hold
	 *         them; never completed with {@code null}
	 */
	default CompletableFuture<Take> reserve(BucketSpec spec, String id, long units, long maxWaitNanos) {
		return tryTake(spec, id, units);
	}

	/**
	 * Takes {@code units} whether the bucket holds them or not; what it lacks becomes a debt that
	 * later refills pay first. For usage known only afterwards (the tokens an answer used) and for
	 * corrections from a provider's rate-limit headers.
	 *
	 * @param units {@code >= 0}; {@code 0} does nothing
	 */
	CompletableFuture<Void> takeRegardless(BucketSpec spec, String id, long units);

	/**
	 * Puts {@code units} back (a request refused after it took them, an estimate that was too
	 * high), never above the capacity.
	 *
	 * @param units {@code >= 0}; {@code 0} does nothing
	 */
	CompletableFuture<Void> giveBack(BucketSpec spec, String id, long units);

	/**
	 * Empties the bucket so that it holds nothing until {@code duration} has passed, for everyone
	 * using it: a provider's {@code 429} with {@code Retry-After}. A bucket already paused longer
	 * keeps its longer pause.
	 *
	 * @param duration {@code > 0}; a zero or negative duration does nothing
	 */
	CompletableFuture<Void> pause(BucketSpec spec, String id, Duration duration);

	/**
	 * @return the units the bucket holds now; negative while it is in debt (taken regardless, or
	 * paused); the capacity for a bucket never used
	 */
	CompletableFuture<Long> available(BucketSpec spec, String id);

	/**
	 * The synchronous path of a store that answers without I/O. The guard asks once, when a policy
	 * goes into force, and uses it for every request instead of the futures.
	 *
	 * @return the synchronous view of this store, or {@code null} when it has none
	 */
	default @Nullable Immediate immediate() {
		return null;
	}

	/**
	 * The same operations as {@link BucketStore}, answered on the calling thread, without futures
	 * and without allocating anything of their own. {@link #tryTake} packs its outcome in a
	 * {@code long} (see {@link Take#isTaken(long)}).
	 */
	interface Immediate {

		/**
		 * @return the outcome packed in a long: read it with {@link Take#isTaken(long)},
		 * {@link Take#remaining(long)} and {@link Take#nanosToWait(long)}
		 */
		long tryTake(BucketSpec spec, String id, long units);

		/**
		 * @return the reservation packed in a long (see {@link Take#packReservation()}); the default
		 *         answers from {@link #tryTake}, without queueing
		 * @see BucketStore#reserve
		 */
		default long reserve(BucketSpec spec, String id, long units, long maxWaitNanos) {
			long taken = tryTake(spec, id, units);
			return Take.isTaken(taken) ? 0L : taken;
		}

		/** @see BucketStore#takeRegardless */
		void takeRegardless(BucketSpec spec, String id, long units);

		/** @see BucketStore#giveBack */
		void giveBack(BucketSpec spec, String id, long units);

		/** @see BucketStore#pause */
		void pause(BucketSpec spec, String id, Duration duration);

		/** @see BucketStore#available */
		long available(BucketSpec spec, String id);

		/**
		 * Lets the bucket of {@code spec} and {@code id} go when that loses nothing: it is full, so a
		 * new one would start the same. An operation racing with it either lands on the bucket that
		 * is kept or on the one that replaces it, never on one thrown away.
		 *
		 * <p>The default keeps its buckets (or expires them by itself) and answers {@code true}: the
		 * caller has nothing to hold on to for it.
		 *
		 * @param evenIfDrained lets it go whatever it holds (the caller's hard cap): its next use
		 *        starts full
		 * @return whether the caller may forget the bucket: it is gone, or this store keeps no state
		 *         the caller must return to; {@code false} while it holds less than its capacity
		 */
		default boolean forget(BucketSpec spec, String id, boolean evenIfDrained) {
			return true;
		}

		/** @return the buckets this store holds, {@code -1} when it does not count them */
		default int size() {
			return -1;
		}

		/**
		 * @return the bucket of {@code spec} and {@code id}, looked up once for a caller that takes
		 *         from it on every request (the guard keeps one per tenant bucket); the default looks
		 *         it up on each take
		 */
		default Resolved resolve(BucketSpec spec, String id) {
			Immediate store = this;
			return new Resolved() {
				@Override
				public long tryTake(long units) {
					return store.tryTake(spec, id, units);
				}

				@Override
				public boolean tryTakeQuietly(long units) {
					return Take.isTaken(store.tryTake(spec, id, units));
				}
			};
		}

		/** One bucket of an {@link Immediate} store, looked up once. */
		interface Resolved {

			/**
			 * @param units {@code > 0}
			 * @return the same as {@link Immediate#tryTake} for this bucket
			 */
			long tryTake(long units);

			/**
			 * Takes {@code units} when the bucket holds them, like {@link Immediate#tryTake} but
			 * without working out what is left or how long to wait.
			 *
			 * @param units {@code > 0}
			 * @return whether the units were taken
			 */
			boolean tryTakeQuietly(long units);
		}
	}
}
