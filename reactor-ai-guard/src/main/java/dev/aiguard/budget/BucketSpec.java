package dev.aiguard.budget;

import java.time.Duration;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The configuration of one kind of bucket, carried with every call to a {@link BucketStore}: a
 * store creates the bucket of a key on first use from it. Immutable; {@code equals} compares the
 * limits and the name, so a store can tell when a key's configuration changed.
 *
 * <pre>{@code
 * BucketSpec perMinute = BucketSpec.of("tenant.requests", 600, Duration.ofMinutes(1));   // greedy refill
 * BucketSpec perDay    = BucketSpec.of("tenant.cost", 50_000_000, Duration.ofDays(1)).intervally();
 * }</pre>
 *
 * <p>A bucket holds at most {@link #capacity()} units and starts full. A greedy bucket refills
 * continuously, {@code capacity} units spread evenly over {@link #period()}; an interval bucket
 * refills all {@code capacity} units at once at the end of each period.
 */
public final class BucketSpec {

	private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

	/** How a bucket refills. */
	public enum Refill {
		/** Continuously: one unit every {@code period / capacity}. */
		GREEDY,
		/** All at once, {@code capacity} units at the end of every period. */
		INTERVALLY
	}

	private final String name;
	private final long capacity;
	private final Duration period;
	private final Refill refill;

	private BucketSpec(String name, long capacity, Duration period, Refill refill) {
		this.name = name;
		this.capacity = capacity;
		this.period = period;
		this.refill = refill;
	}

	/**
	 * A greedily refilled bucket.
	 *
	 * @param name what the bucket counts, 1–64 letters, digits, '.', '_' or '-' (a store uses it in the
	 * bucket's key, beside the id)
	 * @param capacity the most units it holds, {@code > 0}
	 * @param period the time in which it refills {@code capacity} units, {@code > 0}
	 * @throws IllegalArgumentException naming the field and the value
	 */
	public static BucketSpec of(String name, long capacity, Duration period) {
		Objects.requireNonNull(name, "name");
		Objects.requireNonNull(period, "period");
		if (!NAME.matcher(name).matches()) {
			throw new IllegalArgumentException(
					"bucket name must be 1-64 letters, digits, '.', '_' or '-', was '" + name + "'");
		}
		if (capacity <= 0) {
			throw new IllegalArgumentException("bucket " + name + ": capacity must be > 0, was " + capacity);
		}
		if (period.isNegative() || period.isZero()) {
			throw new IllegalArgumentException("bucket " + name + ": period must be > 0, was " + period);
		}
		return new BucketSpec(name, capacity, period, Refill.GREEDY);
	}

	/** @return this spec refilled all at once at the end of each period */
	public BucketSpec intervally() {
		return new BucketSpec(name, capacity, period, Refill.INTERVALLY);
	}

	/** @return this spec refilled continuously */
	public BucketSpec greedy() {
		return new BucketSpec(name, capacity, period, Refill.GREEDY);
	}

	/** @return what the bucket counts; part of a store's key */
	public String name() {
		return name;
	}

	/** @return the most units the bucket holds; it starts full */
	public long capacity() {
		return capacity;
	}

	/** @return the time in which {@link #capacity()} units come back */
	public Duration period() {
		return period;
	}

	/** @return how the bucket refills */
	public Refill refill() {
		return refill;
	}

	/**
	 * The units this bucket gains in {@code duration}, counting from a refill boundary for an
	 * interval bucket. A store pauses a key by taking this much more than it holds
	 * ({@link BucketStore#pause}).
	 *
	 * @return units refilled in {@code duration}, saturated at {@code Long.MAX_VALUE}
	 */
	public long refilledIn(Duration duration) {
		if (duration.isNegative() || duration.isZero()) {
			return 0;
		}
		double periods = duration.toNanos() / (double) period.toNanos();
		double units = refill == Refill.GREEDY ? Math.ceil(periods * capacity) : Math.ceil(periods) * capacity;
		return units >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) units;
	}

	@Override
	public boolean equals(Object o) {
		if (this == o) {
			return true;
		}
		if (!(o instanceof BucketSpec)) {
			return false;
		}
		BucketSpec other = (BucketSpec) o;
		return capacity == other.capacity && name.equals(other.name) && period.equals(other.period)
				&& refill == other.refill;
	}

	@Override
	public int hashCode() {
		return Objects.hash(name, capacity, period, refill);
	}

	@Override
	public String toString() {
		return name + "(" + capacity + " per " + period + (refill == Refill.GREEDY ? ", greedy)" : ", intervally)");
	}
}
