package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The last {@code size} calls. Each call takes a sequence number and owns slot
 * {@code seq mod size}; the slot packs {@code (seq + 1) << 5 | flags}, so a writer that lost the CPU
 * for a whole lap never overwrites a newer call (its record is dropped as late). The totals move by
 * the difference between the new and the replaced flags: a full window of successes touches none.
 */
final class CountWindow extends SlidingWindow {

	private static final int FLAG_BITS = 5;
	private static final long FLAG_MASK = (1L << FLAG_BITS) - 1;
	private static final VarHandle SEQ;

	static {
		try {
			SEQ = MethodHandles.lookup().findVarHandle(CountWindow.class, "seq", long.class);
		}
		catch (ReflectiveOperationException e) {
			throw new ExceptionInInitializerError(e);
		}
	}

	private final int size;
	private final long[] slots;

	@SuppressWarnings("unused") // through SEQ
	private volatile long seq;

	CountWindow(int size) {
		this.size = size;
		this.slots = new long[size];
	}

	@Override
	boolean record(long nowNanos, int flags) {
		long s = (long) SEQ.getAndAdd(this, 1L) + 1;
		int slot = (int) ((s - 1) % size);
		long packed = (s << FLAG_BITS) | flags;
		for (;;) {
			long old = (long) LONGS.getAcquire(slots, slot);
			if ((old >>> FLAG_BITS) > s) {
				return false;
			}
			if (LONGS.compareAndSet(slots, slot, old, packed)) {
				adjust((int) (old & FLAG_MASK), flags);
				return true;
			}
		}
	}

	private void adjust(int oldFlags, int newFlags) {
		int changed = oldFlags ^ newFlags;
		if (changed == 0) {
			return;
		}
		for (int k = 0; k < WIDTH; k++) {
			int bit = 1 << k;
			if ((changed & bit) != 0) {
				addTotal(k, (newFlags & bit) != 0 ? 1L : -1L);
			}
		}
	}

	@Override
	void advanceTo(long nowNanos) {
		// nothing ages by time
	}

	@Override
	void reset() {
		for (int slot = 0; slot < size; slot++) {
			for (;;) {
				long old = (long) LONGS.getAcquire(slots, slot);
				long cleared = old & ~FLAG_MASK; // keep the sequence, drop the call
				if (old == cleared || LONGS.compareAndSet(slots, slot, old, cleared)) {
					adjust((int) (old & FLAG_MASK), 0);
					break;
				}
			}
		}
	}

	@Override
	boolean timeBased() {
		return false;
	}

	@Override
	boolean sameShape(BreakerConfig config) {
		return config.windowType() == BreakerConfig.WindowType.COUNT_BASED && config.windowSize() == size;
	}

	@Override
	long slotSum(int counter) {
		long sum = 0;
		for (int slot = 0; slot < size; slot++) {
			sum += ((long) LONGS.getVolatile(slots, slot) >>> counter) & 1L;
		}
		return sum;
	}
}
