package dev.aiguard.breaker;

/**
 * The last {@code size} calls. Each call takes a sequence number and owns slot
 * {@code seq mod size}; the slot packs {@code seq << 5 | flags}, so a writer that lost the CPU for a
 * whole lap never overwrites a newer call that was written (its record is dropped as late). The
 * totals move by the difference between the new and the replaced flags: a full window of successes
 * touches none.
 *
 * <p>A plain success whose slot already holds a plain success writes nothing at all: the slot keeps
 * the older sequence number, and the totals are already right. Recording it is one atomic add on the
 * sequence. The one thing this gives up: a writer that lost the CPU for a whole lap may then
 * replace such an unwritten success with its own call (the window still holds exactly
 * {@code size} calls, and slots and totals still agree).
 */
final class CountWindow extends SlidingWindow {

	private static final int FLAG_BITS = 5;
	private static final long FLAG_MASK = (1L << FLAG_BITS) - 1;
	/** The sequence sits alone in the middle of a padded array: no other field shares its cache line. */
	private static final int SEQ = 8;

	private final int size;
	private final long[] slots;
	private final long[] seq = new long[2 * SEQ + 1];

	CountWindow(int size) {
		this.size = size;
		this.slots = new long[size];
	}

	@Override
	boolean record(long nowNanos, int flags) {
		return write((long) LONGS.getAndAdd(seq, SEQ, 1L) + 1, flags);
	}

	@Override
	boolean recordSuccesses(long nowNanos, long calls) {
		if (calls <= 0) {
			return calls == 0;
		}
		long last = (long) LONGS.getAndAdd(seq, SEQ, calls) + calls;
		// of a run longer than the window only the last lap stays: the earlier calls' slots are its own
		for (long s = Math.max(last - calls + 1, last - size + 1); s <= last; s++) {
			write(s, CALL_BIT);
		}
		return true;
	}

	/** Writes call number {@code s} into its slot. */
	private boolean write(long s, int flags) {
		int slot = (int) ((s - 1) % size);
		for (;;) {
			long old = (long) LONGS.getAcquire(slots, slot);
			if ((old >>> FLAG_BITS) > s) {
				return false;
			}
			if (flags == CALL_BIT && (old & FLAG_MASK) == CALL_BIT) {
				return true; // a success replacing a success: nothing changes
			}
			if (LONGS.compareAndSet(slots, slot, old, (s << FLAG_BITS) | flags)) {
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
		// additions before subtractions, calls added first and taken away last: a reader racing this
		// never sees a rate above the true one
		for (int k = 0; k < WIDTH; k++) {
			int bit = 1 << k;
			if ((changed & newFlags & bit) != 0) {
				addTotal(k, 1L);
			}
		}
		for (int k = WIDTH - 1; k >= 0; k--) {
			int bit = 1 << k;
			if ((changed & oldFlags & bit) != 0) {
				addTotal(k, -1L);
			}
		}
	}

	@Override
	long rawTotal(int counter) {
		return (long) LONGS.getVolatile(totals, counter);
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
