package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;

/**
 * The last {@code size} time buckets of {@code bucketNanos} each, in a ring of the next power of two
 * slots (at least 64) so that epoch {@code e} (= time / bucketNanos) lives in slot {@code e & mask}
 * (no division on the record path).
 *
 * <p>Every counter cell carries its own epoch and a <em>sealed</em> bit next to its count:
 * {@code lap << 29 | sealed << 28 | count}, where the lap {@code (epoch - origin) / ring + 1} is all
 * that tells apart the epochs sharing a slot; a cell of 0 is empty. With 35 bits of lap and at least
 * 64 slots, even 1 ms buckets last for decades. The newest bucket
 * (the head) is <em>live</em>: its cells are not in the running totals, a reader adds them on the fly.
 * So recording a plain success in the head bucket is one CAS on one cell and nothing else. When the
 * head moves on, the thread that moved it <em>seals</em> the old head's cells (a CAS sets the bit;
 * its winner adds exactly the count it sealed to the totals), then empties the buckets that left the
 * window (a CAS to 0; its winner subtracts what was sealed). A record that arrives in a sealed bucket
 * (a late one, still inside the window) adds to the cell and to the total.
 *
 * <p>Why nothing is lost: every change of a cell is a CAS from the value the thread read, so a count
 * is sealed together with everything added before the seal, and an add after it sees the bit and
 * pays its own total. The only cell a sealing thread can miss is one opened for the head epoch just
 * after it looked; the thread that opened it re-reads the head and seals it itself. A record whose
 * epoch is older than the window, or whose cell already holds a newer epoch (a clock that stepped
 * back, a thread descheduled for a whole window), is dropped. Counts saturate at 268 435 455 per cell
 * and bucket.
 */
final class TimeWindow extends SlidingWindow {

	private static final int COUNT_BITS = 28;
	static final long COUNT_MASK = (1L << COUNT_BITS) - 1;
	private static final long SEALED = 1L << COUNT_BITS;
	private static final int TAG_SHIFT = COUNT_BITS + 1;
	/** The highest lap a tag can carry (the tag is lap + 1; 0 marks an empty cell). */
	private static final long MAX_LAP = (-1L >>> TAG_SHIFT) - 1;
	private static final int MIN_RING_BITS = 6;
	private static final long NONE = Long.MIN_VALUE;
	/** Cells start and end one cache line away from the array's length, which every access reads. */
	private static final int PAD = 8;
	private static final VarHandle HEAD;

	static {
		try {
			HEAD = MethodHandles.lookup().findVarHandle(TimeWindow.class, "head", long.class);
		}
		catch (ReflectiveOperationException e) {
			throw new ExceptionInInitializerError(e);
		}
	}

	private final int size;
	private final int mask;
	/** log2 of the ring: a relative epoch's lap is {@code relative >>> ringBits}. */
	private final int ringBits;
	private final long maxRelativeEpoch;
	private final long bucketNanos;
	/** Epochs before this one are dropped; relative epochs start at 0 here. */
	private final long origin;
	private final long[] cells;

	/** The newest epoch recorded or read; older than {@code head - size + 1} is out of the window. */
	private volatile long head = NONE;

	TimeWindow(int size, long bucketNanos, long nowNanos) {
		this.size = size;
		this.ringBits = Math.max(MIN_RING_BITS, 32 - Integer.numberOfLeadingZeros(Math.max(1, size - 1)));
		int ring = 1 << ringBits;
		this.mask = ring - 1;
		this.maxRelativeEpoch = ((MAX_LAP + 1) << ringBits) - 1;
		this.bucketNanos = bucketNanos;
		this.origin = Math.floorDiv(nowNanos, bucketNanos) - size;
		this.cells = new long[PAD + ring * WIDTH + PAD];
	}

	/** The tag and seal bits of a live (unsealed) cell of {@code relative}, with a count of 0. */
	private long liveHeader(long relative) {
		return tagOf(relative) << TAG_SHIFT;
	}

	/** The tag of the epochs of {@code relative}'s lap around the ring (0 is kept for empty cells). */
	private long tagOf(long relative) {
		return (relative >>> ringBits) + 1;
	}

	private int index(long epoch, int counter) {
		return PAD + ((int) epoch & mask) * WIDTH + counter;
	}

	private long epochOf(long nowNanos, long h) {
		// fast path: most records fall in the newest bucket, no division needed
		if (h != NONE) {
			long offset = nowNanos - h * bucketNanos;
			if (offset >= 0 && offset < bucketNanos) {
				return h;
			}
		}
		return Math.floorDiv(nowNanos, bucketNanos);
	}

	/**
	 * @return the epoch of {@code nowNanos}, the head moved on to it when it is newer; {@link #NONE}
	 * when it is out of range or older than the window
	 */
	private long admit(long nowNanos) {
		long h = head;
		long e = epochOf(nowNanos, h);
		if (e != h) {
			long relative = e - origin;
			if (relative < 0 || relative > maxRelativeEpoch) {
				return NONE;
			}
			if (e > h) {
				advance(h, e);
			}
			else if (e <= h - size) {
				return NONE;
			}
		}
		return e;
	}

	@Override
	boolean record(long nowNanos, int flags) {
		long e = admit(nowNanos);
		if (e == NONE) {
			return false;
		}
		long relative = e - origin;
		// calls first, so that a reader racing this record never sees a rate above the true one
		boolean counted = false;
		for (int k = CALLS; k < WIDTH; k++) {
			if ((flags & (1 << k)) != 0) {
				counted |= increment(e, relative, k, 1);
			}
		}
		return counted;
	}

	@Override
	boolean recordSuccesses(long nowNanos, long calls) {
		if (calls <= 0) {
			return calls == 0;
		}
		long e = admit(nowNanos);
		return e != NONE && increment(e, e - origin, CALLS, Math.min(calls, COUNT_MASK));
	}

	/** Adds {@code by} (at least 1) to a counter of epoch {@code e}; a cell saturates at {@link #COUNT_MASK}. */
	private boolean increment(long e, long relative, int counter, long by) {
		int i = index(e, counter);
		long live = liveHeader(relative);
		for (;;) {
			long v = (long) LONGS.getVolatile(cells, i);
			long header = v & ~COUNT_MASK;
			if (header == live) {
				// the hot case: the head bucket, counted by readers on the fly
				long add = Math.min(by, COUNT_MASK - (v & COUNT_MASK));
				if (add == 0) {
					return false; // saturated
				}
				if (LONGS.compareAndSet(cells, i, v, v + add)) {
					return true;
				}
			}
			else if (header == (live | SEALED)) {
				long add = Math.min(by, COUNT_MASK - (v & COUNT_MASK));
				if (add == 0) {
					return false;
				}
				if (LONGS.compareAndSet(cells, i, v, v + add)) {
					addTotal(counter, add);
					evictIfOut(e, relative);
					return true;
				}
			}
			else if ((v >>> TAG_SHIFT) < tagOf(relative)) {
				// the cell still holds an older epoch (or nothing): this record opens it
				boolean isHead = e == head;
				if (LONGS.compareAndSet(cells, i, v, isHead ? live | by : live | SEALED | by)) {
					if ((v & SEALED) != 0) {
						addTotal(counter, -(v & COUNT_MASK)); // an old sealed bucket leaves with it
					}
					if (isHead) {
						// a thread moving the head on may have looked at this cell before it was opened
						if (head != e) {
							seal(i, live, counter);
						}
					}
					else {
						addTotal(counter, by);
					}
					evictIfOut(e, relative);
					return true;
				}
			}
			else {
				return false; // the cell already holds a newer epoch: this record is late
			}
		}
	}

	/** Moves the live cell {@code i} of the bucket {@code live} into the totals, once. */
	private void seal(int i, long live, int counter) {
		for (;;) {
			long v = (long) LONGS.getVolatile(cells, i);
			if ((v & ~COUNT_MASK) != live) {
				return; // sealed already, emptied, or reused
			}
			if (LONGS.compareAndSet(cells, i, v, v | SEALED)) {
				addTotal(counter, v & COUNT_MASK);
				return;
			}
		}
	}

	/** A late record whose bucket slid out of the window meanwhile is taken out again. */
	private void evictIfOut(long e, long relative) {
		if (e <= head - size) {
			evictUpTo((int) e & mask, relative);
		}
	}

	/** Empties the cells of {@code slot} that hold epoch {@code relative} or an older one. */
	private void evictUpTo(int slot, long relative) {
		int base = PAD + slot * WIDTH;
		// this slot holds the relative epochs first + lap × ring; evict the laps up to relative
		long first = (slot - origin) & mask;
		if (relative < first) {
			return;
		}
		long newestTag = ((relative - first) >>> ringBits) + 1;
		// calls last, so that a reader racing the eviction never sees a rate above the true one
		for (int k = WIDTH - 1; k >= 0; k--) {
			for (;;) {
				long v = (long) LONGS.getVolatile(cells, base + k);
				long tag = v >>> TAG_SHIFT;
				if (tag == 0 || tag > newestTag) {
					break;
				}
				if (LONGS.compareAndSet(cells, base + k, v, 0L)) {
					if ((v & SEALED) != 0) {
						addTotal(k, -(v & COUNT_MASK));
					}
					break;
				}
			}
		}
	}

	private void advance(long h, long e) {
		while (!HEAD.compareAndSet(this, h, e)) {
			h = head;
			if (h >= e) {
				return;
			}
		}
		// this thread moved head from h to e: it closes h, then empties the buckets that left the window
		if (h != NONE) {
			long live = liveHeader(h - origin);
			for (int k = 0; k < WIDTH; k++) {
				seal(index(h, k), live, k);
			}
		}
		long newest = e - size; // the newest epoch now out of the window
		if (h == NONE || e - h >= mask + 1) {
			long relative = newest - origin;
			if (relative >= 0) {
				for (int slot = 0; slot <= mask; slot++) {
					evictUpTo(slot, relative);
				}
			}
			return;
		}
		for (long epoch = h - size + 1; epoch <= newest; epoch++) {
			long relative = epoch - origin;
			if (relative >= 0) {
				evictUpTo((int) epoch & mask, relative);
			}
		}
	}

	@Override
	void advanceTo(long nowNanos) {
		long h = head;
		long e = epochOf(nowNanos, h);
		if (e > h && e - origin <= maxRelativeEpoch) {
			advance(h, e);
		}
	}

	@Override
	long rawTotal(int counter) {
		// the closed buckets first, then the live one: a seal racing this read can hide the live
		// bucket for an instant, never count it twice
		long closed = (long) LONGS.getVolatile(totals, counter);
		long h = head;
		if (h == NONE) {
			return closed;
		}
		long v = (long) LONGS.getVolatile(cells, index(h, counter));
		return (v & ~COUNT_MASK) == liveHeader(h - origin) ? closed + (v & COUNT_MASK) : closed;
	}

	@Override
	void reset() {
		for (int cell = PAD; cell < cells.length - PAD; cell++) {
			for (;;) {
				long v = (long) LONGS.getVolatile(cells, cell);
				long count = v & COUNT_MASK;
				if (count == 0) {
					break;
				}
				if (LONGS.compareAndSet(cells, cell, v, v & ~COUNT_MASK)) {
					if ((v & SEALED) != 0) {
						addTotal((cell - PAD) % WIDTH, -count);
					}
					break;
				}
			}
		}
	}

	@Override
	boolean timeBased() {
		return true;
	}

	@Override
	boolean sameShape(BreakerConfig config) {
		Duration bucket = config.bucketLength();
		return config.windowType() == BreakerConfig.WindowType.TIME_BASED && config.windowSize() == size
				&& bucket != null && bucket.toNanos() == bucketNanos;
	}

	/** Tests only: sets the count of the live cell of {@code counter} in the head bucket. */
	void setHeadCount(int counter, long count) {
		long h = head;
		int i = index(h, counter);
		LONGS.setVolatile(cells, i, liveHeader(h - origin) | count);
	}

	@Override
	long slotSum(int counter) {
		long sum = 0;
		for (int slot = 0; slot <= mask; slot++) {
			sum += (long) LONGS.getVolatile(cells, PAD + slot * WIDTH + counter) & COUNT_MASK;
		}
		return sum;
	}
}
