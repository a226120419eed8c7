package dev.aiguard.budget;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.function.ToLongBiFunction;

import dev.aiguard.budget.BudgetGate.TenantBudget;
import org.jspecify.annotations.Nullable;

/**
 * The tenants a gate holds, bounded: a tenant idle for {@code idleNanos} is let go once its buckets
 * are full again, and beyond {@code max} tenants a new one makes room by letting go of the longest
 * idle of a sample, whatever its buckets hold. Nothing runs on a thread of its own: a request that
 * adds a tenant, and about one in {@value #STEP_ONE_IN} of the others, does one bounded step of a
 * sweep that goes round the table ({@value #STEP} tenants), and only when no other thread is sweeping,
 * so the work per request is O(1) amortised and never waits.
 */
final class TenantTable {

	/** Tenants looked at per step of the sweep. */
	static final int STEP = 8;
	/** A request that finds its tenant steps the sweep with this odds' inverse. */
	static final int STEP_ONE_IN = 16;
	/** Tenants sampled for the longest idle when over the cap (as Redis approximates LRU). */
	static final int SAMPLE = 8;

	/** Lets a tenant's buckets go; answers whether they are gone (or the store keeps them itself). */
	interface Release {
		boolean release(TenantBudget tenant, boolean evenIfDrained);
	}

	private static final AtomicIntegerFieldUpdater<TenantTable> SWEEPING = AtomicIntegerFieldUpdater
		.newUpdater(TenantTable.class, "sweeping");

	private final ConcurrentHashMap<String, TenantBudget> tenants = new ConcurrentHashMap<>();
	private final Function<String, TenantBudget> create;
	private final Release release;
	private final LongSupplier clock;
	private final long idleNanos;
	/** A tenant's last use is written only when it moved this much: no shared write per request. */
	private final long touchNanos;
	private final int max;
	private volatile int sweeping;
	/** Where the sweep is; read and written only by the thread that holds {@link #sweeping}. */
	private @Nullable Iterator<TenantBudget> hand;

	TenantTable(Function<String, TenantBudget> create, Release release, LongSupplier clock, long idleNanos, int max) {
		this.create = create;
		this.release = release;
		this.clock = clock;
		this.idleNanos = idleNanos;
		this.touchNanos = Math.max(1L, idleNanos >> 6);
		this.max = max;
	}

	/** @return the tenant with this id, added when new; steps the sweep now and then */
	TenantBudget get(String id) {
		long now = clock.getAsLong();
		TenantBudget t = tenants.get(id);
		if (t == null) {
			t = tenants.computeIfAbsent(id, create);
			t.lastUsed = now;
			sweep(now, t);
			return t;
		}
		if (now - t.lastUsed >= touchNanos) {
			t.lastUsed = now;
		}
		if (ThreadLocalRandom.current().nextInt(STEP_ONE_IN) == 0) {
			sweep(now, t);
		}
		return t;
	}

	/**
	 * After a request touched {@code t}'s buckets: when a sweep was letting {@code t} go meanwhile,
	 * a bucket it dropped may have been made again by that touch; the tenant is held again so the
	 * bucket is not left without a holder.
	 */
	void touched(TenantBudget t) {
		if (t.lettingGo) {
			get(t.id);
		}
	}

	/** @return the tenants held now */
	int size() {
		return tenants.size();
	}

	/** The held tenants summarised ({@link BudgetGate#summary}); reads each one's buckets once. */
	TenantSummary summary(int top, ToLongBiFunction<TenantBudget, Integer> remaining) {
		// the least drained of those kept is on top of the heap, so it is the one a more drained tenant replaces
		PriorityQueue<Map.Entry<Double, TenantBudget>> kept = new PriorityQueue<>(
				(x, y) -> Double.compare(y.getKey(), x.getKey()));
		int held = 0;
		for (TenantBudget t : tenants.values()) {
			held++;
			if (top == 0 || !t.limited()) {
				continue;
			}
			double share = Double.MAX_VALUE;
			for (int i = 0; i < 3; i++) {
				BucketSpec b = t.bucket(i);
				if (b != null) {
					share = Math.min(share, remaining.applyAsLong(t, i) / (double) b.capacity());
				}
			}
			if (kept.size() < top) {
				kept.add(Map.entry(share, t));
			}
			else if (share < kept.peek().getKey()) {
				kept.poll();
				kept.add(Map.entry(share, t));
			}
		}
		List<Map.Entry<Double, TenantBudget>> least = new ArrayList<>(kept);
		least.sort(Map.Entry.comparingByKey());
		List<TenantSummary.TenantStatus> statuses = new ArrayList<>(least.size());
		for (Map.Entry<Double, TenantBudget> e : least) {
			TenantBudget t = e.getValue();
			List<TenantSummary.Limit> limits = new ArrayList<>(3);
			for (int i = 0; i < 3; i++) {
				BucketSpec b = t.bucket(i);
				if (b != null) {
					limits.add(new TenantSummary.Limit(BudgetGate.LIMITS[i], b.capacity(), remaining.applyAsLong(t, i),
							b.period().toSeconds()));
				}
			}
			statuses.add(new TenantSummary.TenantStatus(t.id, List.copyOf(limits)));
		}
		return new TenantSummary(held, max, List.copyOf(statuses));
	}

	/** Steps the sweep on behalf of a test or a caller that wants it now; {@code rounds} steps. */
	void sweepNow(int rounds) {
		long now = clock.getAsLong();
		for (int i = 0; i < rounds; i++) {
			sweep(now, null);
		}
	}

	private void sweep(long now, @Nullable TenantBudget spare) {
		if (!SWEEPING.compareAndSet(this, 0, 1)) {
			return; // another thread is at it: never wait for it
		}
		try {
			Iterator<TenantBudget> it = hand;
			for (int i = 0; i < STEP; i++) {
				if (it == null || !it.hasNext()) {
					it = tenants.values().iterator();
					if (!it.hasNext()) {
						break;
					}
				}
				TenantBudget t = it.next();
				if (t != spare && now - t.lastUsed >= idleNanos) {
					letGo(t, false);
				}
			}
			// a few rounds catch up with tenants added while another thread held the sweep
			for (int round = 0; round < 4 && tenants.size() > max; round++) {
				TenantBudget idlest = null;
				for (int i = 0; i < SAMPLE; i++) {
					if (it == null || !it.hasNext()) {
						it = tenants.values().iterator();
						if (!it.hasNext()) {
							break;
						}
					}
					TenantBudget t = it.next();
					if (t != spare && (idlest == null || t.lastUsed - idlest.lastUsed < 0)) {
						idlest = t;
					}
				}
				if (idlest == null || !letGo(idlest, true)) {
					break;
				}
			}
			hand = it;
		}
		finally {
			sweeping = 0;
		}
	}

	/**
	 * Marks {@code t} as going and takes it out before its buckets are let go, so a request that
	 * touches them meanwhile either is seen by the release (the store keeps a bucket in use) or
	 * sees the mark and no tenant ({@link #touched}) and adds the tenant again. A tenant whose
	 * buckets are not full goes back in.
	 */
	private boolean letGo(TenantBudget t, boolean evenIfDrained) {
		t.lettingGo = true;
		if (!tenants.remove(t.id, t)) {
			return false;
		}
		if (!release.release(t, evenIfDrained)) {
			t.lettingGo = false;
			tenants.putIfAbsent(t.id, t); // a tenant added meanwhile holds the same buckets
			return false;
		}
		return true;
	}
}
