package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The last {@code size} time buckets of {@code bucketNanos} each, in a ring of the next power of two
 * slots so that epoch {@code e} (= time / bucketNanos) lives in slot {@code e & mask} (no division on
 * the record path). When the head moves on, the buckets leaving the window are emptied.
 *
 * <p>Every counter cell carries its own epoch: {@code (epoch - origin) << 24 | count}. A record CASes
 * the cell from its epoch's value to value + 1, or, when the cell still holds an older epoch, from
 * that stale value straight to {@code (epoch, 1)}; whoever wins a CAS that drops counts subtracts
 * exactly those counts from the running total. So eviction and recording cannot lose each other's
 * work, and totals always equal the sum of the cells. A record whose cell already moved to a newer
 * epoch, or whose epoch is older than the window (a clock that stepped back, a thread descheduled
 * for a whole window), is dropped. Counts saturate at 16 777 215 per cell.
 */
final class TimeWindow extends SlidingWindow {

	private static final int COUNT_BITS = 24;
	private static final long COUNT_MASK = (1L << COUNT_BITS) - 1;
	private static final long MAX_RELATIVE_EPOCH = (1L << (63 - COUNT_BITS)) - 1;
	private static final long NONE = Long.MIN_VALUE;
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
	private final long bucketNanos;
	/** Epochs before this one are dropped; relative epochs start at 0 here. */
	private final long origin;
	private final long[] cells;

	/** The newest epoch recorded or read; older than {@code head - size + 1} is out of the window. */
	private volatile long head = NONE;

	TimeWindow(int size, long bucketNanos, long nowNanos) {
		this.size = size;
		int ring = Integer.highestOneBit(Math.max(1, size - 1)) << 1;
		this.mask = ring - 1;
		this.bucketNanos = bucketNanos;
		this.origin = Math.floorDiv(nowNanos, bucketNanos) - size;
		this.cells = new long[ring * WIDTH];
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

	@Override
	boolean record(long nowNanos, int flags) {
		long h = head;
		long e = epochOf(nowNanos, h);
		long relative = e - origin;
		if (relative < 0 || relative > MAX_RELATIVE_EPOCH) {
			return false;
		}
		if (e > h) {
			advance(h, e);
		}
		else if (e <= h - size) {
			return false;
		}
		int base = ((int) e & mask) * WIDTH;
		boolean counted = false;
		for (int k = 0; k < WIDTH; k++) {
			if ((flags & (1 << k)) != 0) {
				counted |= increment(base + k, k, relative);
			}
		}
		return counted;
	}

	private boolean increment(int cell, int counter, long relative) {
		long tagged = relative << COUNT_BITS;
		for (;;) {
			long v = (long) LONGS.getVolatile(cells, cell);
			long tag = v >>> COUNT_BITS;
			if (tag == relative) {
				if ((v & COUNT_MASK) == COUNT_MASK) {
					return false; // saturated
				}
				if (LONGS.compareAndSet(cells, cell, v, v + 1)) {
					addTotal(counter, 1);
					return true;
				}
			}
			else if (tag < relative) {
				if (LONGS.compareAndSet(cells, cell, v, tagged | 1)) {
					addTotal(counter, 1 - (v & COUNT_MASK));
					return true;
				}
			}
			else {
				return false; // the cell already holds a newer epoch: this record is late
			}
		}
	}

	/** Empties the cells of {@code slot} that hold epoch {@code relative} or an older one. */
	private void evictUpTo(int slot, long relative) {
		int base = slot * WIDTH;
		for (int k = 0; k < WIDTH; k++) {
			for (;;) {
				long v = (long) LONGS.getVolatile(cells, base + k);
				long count = v & COUNT_MASK;
				if (count == 0 || (v >>> COUNT_BITS) > relative) {
					break;
				}
				if (LONGS.compareAndSet(cells, base + k, v, v & ~COUNT_MASK)) {
					addTotal(k, -count);
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
		// this thread moved head from h to e: it empties the buckets that left the window
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
		if (e > h && e - origin <= MAX_RELATIVE_EPOCH) {
			advance(h, e);
		}
	}

	@Override
	void reset() {
		for (int cell = 0; cell < cells.length; cell++) {
			for (;;) {
				long v = (long) LONGS.getVolatile(cells, cell);
				long count = v & COUNT_MASK;
				if (count == 0) {
					break;
				}
				if (LONGS.compareAndSet(cells, cell, v, v & ~COUNT_MASK)) {
					addTotal(cell % WIDTH, -count);
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
		return config.windowType() == BreakerConfig.WindowType.TIME_BASED && config.windowSize() == size
				&& config.bucketLength().toNanos() == bucketNanos;
	}

	@Override
	long slotSum(int counter) {
		long sum = 0;
		for (int slot = 0; slot <= mask; slot++) {
			sum += (long) LONGS.getVolatile(cells, slot * WIDTH + counter) & COUNT_MASK;
		}
		return sum;
	}
}
