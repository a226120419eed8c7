package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A ring of {@code size} time buckets of {@code bucketNanos} each. Slot {@code i} holds epoch
 * {@code e} (= time / bucketNanos) when {@code e mod size == i}; its tag says which epoch it holds.
 *
 * <p>A record for epoch {@code e} lands in its own slot when that slot holds {@code e}; a stale slot
 * is claimed by emptying it and then moving its tag forward by CAS (tags only grow). A record older
 * than the window, or whose slot already moved to a newer epoch, is dropped: that is how a clock
 * that steps backwards is absorbed without corrupting anything. One rare race is accepted: a record
 * landing in a slot at the instant a second claimer, descheduled mid-claim, empties it is dropped
 * with the evicted counts (slots and totals still agree).
 */
final class TimeWindow extends SlidingWindow {

	private static final long EMPTY = Long.MIN_VALUE;
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
	private final long bucketNanos;
	private final long[] counts;
	private final long[] tags;

	/** The newest epoch seen; buckets older than {@code head - size + 1} are out of the window. */
	private volatile long head = EMPTY;

	TimeWindow(int size, long bucketNanos) {
		this.size = size;
		this.bucketNanos = bucketNanos;
		this.counts = new long[size * WIDTH];
		this.tags = new long[size];
		java.util.Arrays.fill(tags, EMPTY);
	}

	private long epochOf(long nowNanos, long h) {
		// fast path: most records fall in the newest bucket, no division needed
		if (h != EMPTY) {
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
		if (e > h) {
			advance(h, e);
		}
		else if (e <= h - size) {
			return false;
		}
		int slot = Math.floorMod(e, size);
		for (;;) {
			long tag = (long) LONGS.getAcquire(tags, slot);
			if (tag == e) {
				add(slot, flags);
				return true;
			}
			if (tag > e) {
				return false;
			}
			claim(slot, tag, e);
		}
	}

	private void add(int slot, int flags) {
		int base = slot * WIDTH;
		for (int k = 0; k < WIDTH; k++) {
			if ((flags & (1 << k)) != 0) {
				LONGS.getAndAdd(counts, base + k, 1L);
				addTotal(k, 1L);
			}
		}
	}

	private void claim(int slot, long tag, long epoch) {
		evict(slot);
		LONGS.compareAndSet(tags, slot, tag, epoch);
	}

	private void evict(int slot) {
		int base = slot * WIDTH;
		for (int k = 0; k < WIDTH; k++) {
			long v = (long) LONGS.getAndSet(counts, base + k, 0L);
			if (v != 0) {
				addTotal(k, -v);
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
		// this thread moved head from h to e: it empties the slots of the epochs in between
		long from = (h == EMPTY || e - h >= size) ? e - size + 1 : h + 1;
		for (long epoch = from; epoch <= e; epoch++) {
			int slot = Math.floorMod(epoch, size);
			long tag = (long) LONGS.getAcquire(tags, slot);
			if (tag < epoch) {
				claim(slot, tag, epoch);
			}
		}
	}

	@Override
	void advanceTo(long nowNanos) {
		long h = head;
		if (h == EMPTY) {
			return;
		}
		long e = epochOf(nowNanos, h);
		if (e > h) {
			advance(h, e);
		}
	}

	@Override
	void reset() {
		for (int slot = 0; slot < size; slot++) {
			evict(slot);
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
		for (int slot = 0; slot < size; slot++) {
			sum += (long) LONGS.getVolatile(counts, slot * WIDTH + counter);
		}
		return sum;
	}
}
