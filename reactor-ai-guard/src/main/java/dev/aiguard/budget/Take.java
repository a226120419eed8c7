package dev.aiguard.budget;

/**
 * The outcome of {@link BucketStore#tryTake}: the units were taken and this many remain, or nothing
 * was taken and the units will be there in {@link #nanosToWait()}. For {@link BucketStore#reserve}
 * it says whether the units were reserved and, either way, the wait: until they may be used when
 * reserved, until they would be there when not.
 *
 * <p>The synchronous path ({@link BucketStore.Immediate#tryTake}) packs the same outcome in one
 * {@code long} so that a check allocates nothing: a value {@code >= 0} means taken, with that many
 * units remaining; a negative value {@code v} means refused, with {@code -1 - v} nanoseconds to wait.
 *
 * @param taken whether the units were taken
 * @param remaining units left after taking ({@code 0} when refused)
 * @param nanosToWait when refused, the wait until the bucket holds the units ({@code Long.MAX_VALUE}:
 * never, more than its capacity); when taken, the wait before the units may be used ({@code 0} but
 * for a reservation that queued)
 */
public record Take(boolean taken, long remaining, long nanosToWait) {

	/**
	 * @throws IllegalArgumentException when {@code remaining} or {@code nanosToWait} is negative
	 */
	public Take {
		if (remaining < 0) {
			throw new IllegalArgumentException("remaining must be >= 0, was " + remaining);
		}
		if (nanosToWait < 0) {
			throw new IllegalArgumentException("nanosToWait must be >= 0, was " + nanosToWait);
		}
	}

	/** @return units taken, {@code remaining} left */
	public static Take ofTaken(long remaining) {
		return new Take(true, remaining, 0);
	}

	/** @return units reserved, usable once {@code nanosToWait} has passed */
	public static Take ofReserved(long nanosToWait) {
		return new Take(true, 0, nanosToWait);
	}

	/** @return nothing taken, the units available in {@code nanosToWait} */
	public static Take ofRefused(long nanosToWait) {
		return new Take(false, 0, nanosToWait);
	}

	/** @return this outcome packed in a long, as {@link BucketStore.Immediate#tryTake} returns it */
	public long pack() {
		return taken ? packTaken(remaining) : packRefused(nanosToWait);
	}

	/**
	 * @return this reservation packed in a long, as {@link BucketStore.Immediate#reserve} returns it:
	 *         {@code >= 0} reserved, usable after that many nanoseconds; negative refused, as
	 *         {@link #packRefused}
	 */
	public long packReservation() {
		return taken ? nanosToWait : packRefused(nanosToWait);
	}

	/** @return the reservation packed from a long by {@link #packReservation()} */
	public static Take unpackReservation(long packed) {
		return packed >= 0 ? ofReserved(packed) : ofRefused(nanosToWait(packed));
	}

	/** @return the outcome packed from a long */
	public static Take unpack(long packed) {
		return isTaken(packed) ? ofTaken(packed) : ofRefused(nanosToWait(packed));
	}

	/** @return "taken, {@code remaining} left", packed */
	public static long packTaken(long remaining) {
		return Math.max(0, remaining);
	}

	/** @return "refused, wait {@code nanosToWait}", packed */
	public static long packRefused(long nanosToWait) {
		return -1 - Math.max(0, nanosToWait);
	}

	/** @return whether a packed outcome took its units */
	public static boolean isTaken(long packed) {
		return packed >= 0;
	}

	/** @return the units left after a packed outcome that took its units, else {@code 0} */
	public static long remaining(long packed) {
		return packed >= 0 ? packed : 0;
	}

	/** @return the wait of a packed refusal, else {@code 0} */
	public static long nanosToWait(long packed) {
		return packed >= 0 ? 0 : -1 - packed;
	}
}
