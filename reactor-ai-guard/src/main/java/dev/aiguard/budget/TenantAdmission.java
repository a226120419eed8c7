package dev.aiguard.budget;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.budget.BudgetGate.Admission;
import dev.aiguard.budget.BudgetGate.TenantBudget;
import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;

/**
 * A tenant's admission: a request, the prompt's tokens and the prompt's cost taken from the tenant's
 * buckets one after another, each leaving the reserve of more urgent priorities; a refusal gives back
 * what the buckets before it took. On a store that answers at once this allocates nothing unless a
 * take falls into a reserve; on a store with futures each bucket is asked when the one before answered.
 */
final class TenantAdmission {

	/** A take that did not say what is left: only {@link Take#isTaken} is read from it. */
	private static final long TAKEN_QUIETLY = Take.packTaken(0L);

	private final BudgetParts parts;

	TenantAdmission(BudgetParts parts) {
		this.parts = parts;
	}

	void take(TenantBudget tenant, Priority priority, long promptTokens, long promptCostNanos, Admission to) {
		long tokenUnits = Math.max(1L, promptTokens);
		long costUnits = Math.max(1L, BudgetGate.costUnits(promptCostNanos));
		long[] floors = tenant.floors[priority.ordinal()];
		BucketStore.Immediate sync = parts.now;
		if (sync == null) {
			new AsyncAdmission(tenant, priority, new long[] { 1L, tokenUnits, costUnits }, floors, to).step(0);
			return;
		}
		// with a store that answers at once every bucket the tenant has was resolved when it was added
		long r = take(sync, tenant.requestsAt, tenant.requests, tenant.id, 1L, floors[0]);
		if (!Take.isTaken(r)) {
			to.budgetRefused(refusal(tenant, priority, 0, r));
			return;
		}
		long t = take(sync, tenant.tokensAt, tenant.tokens, tenant.id, tokenUnits, floors[1]);
		if (!Take.isTaken(t)) {
			BudgetParts.giveBack(sync, tenant.requests, tenant.id, 1L);
			to.budgetRefused(refusal(tenant, priority, 1, t));
			return;
		}
		long c = take(sync, tenant.costAt, tenant.cost, tenant.id, costUnits, floors[2]);
		if (!Take.isTaken(c)) {
			BudgetParts.giveBack(sync, tenant.requests, tenant.id, 1L);
			BudgetParts.giveBack(sync, tenant.tokens, tenant.id, tokenUnits);
			to.budgetRefused(refusal(tenant, priority, 2, c));
			return;
		}
		to.budgetAdmitted(tenant.tokens == null ? 0L : tokenUnits, tenant.cost == null ? 0L : costUnits);
	}

	/**
	 * Takes {@code units} from the resolved bucket {@code at} unless that would leave less than
	 * {@code floor}; packed. Without a floor it takes quietly, and only a refusal asks for the wait.
	 * A tenant without this bucket ({@code at} absent) takes nothing and is let through.
	 */
	private static long take(BucketStore.Immediate sync, BucketStore.Immediate.@Nullable Resolved at,
			@Nullable BucketSpec bucket, String id, long units, long floor) {
		if (at == null || bucket == null) {
			return 0L;
		}
		if (floor <= 0L) {
			// refused: ask again with the wait (the bucket may have refilled since, then it takes)
			return at.tryTakeQuietly(units) ? TAKEN_QUIETLY : at.tryTake(units);
		}
		long packed = at.tryTake(units);
		if (Take.isTaken(packed) && Take.remaining(packed) >= floor) {
			return packed; // the give-back below is built only when it may be needed
		}
		return keepFloor(packed, bucket, units, floor, () -> sync.giveBack(bucket, id, units));
	}

	private static long keepFloor(long packed, BucketSpec bucket, long units, long floor, Runnable giveBack) {
		if (floor <= 0L) {
			return packed;
		}
		if (Take.isTaken(packed)) {
			long remaining = Take.remaining(packed);
			if (remaining >= floor) {
				return packed;
			}
			giveBack.run();
			return Take.packRefused(refillNanos(bucket, floor - remaining));
		}
		long wait = Take.nanosToWait(packed);
		return Take.packRefused(wait == Long.MAX_VALUE ? wait : saturatedAdd(wait, refillNanos(bucket, floor)));
	}

	private static long refillNanos(BucketSpec bucket, long units) {
		double nanos = Math.ceil(units * (double) bucket.period().toNanos() / bucket.capacity());
		return nanos >= Long.MAX_VALUE ? Long.MAX_VALUE : (long) nanos;
	}

	private static long saturatedAdd(long a, long b) {
		long s = a + b;
		return ((a ^ s) & (b ^ s)) < 0 ? Long.MAX_VALUE : s;
	}

	private AdmissionRejectedException refusal(TenantBudget tenant, Priority priority, int which, long packed) {
		String limit = BudgetGate.LIMITS[which];
		parts.metrics.budgetRejected(parts.policy, priority, "tenant", limit);
		long wait = Take.nanosToWait(packed);
		String what = which == 0 ? tenant.limits.requestsPerMinute() + " requests per minute"
				: which == 1 ? tenant.limits.tokensPerMinute() + " tokens per minute"
						: costPerDay(tenant.limits.costPerDay()) + " " + parts.spec.prices().currency() + " per day";
		double floor = parts.spec.floorFor(priority);
		return new AdmissionRejectedException(priority, AdmissionRejectedException.Reason.BUDGET,
				"tenant '" + tenant.id + "' is over its budget of " + what
						+ (floor > 0d ? " (the last " + Math.round(floor * 100) + " % is kept for more urgent priorities)" : "")
						+ (wait == Long.MAX_VALUE ? "; this request is larger than the whole budget" : ""),
				wait == Long.MAX_VALUE ? null : Duration.ofNanos(wait));
	}

	/** @return the amount, set whenever the tenant has a cost bucket to be refused by */
	private static String costPerDay(@Nullable BigDecimal amount) {
		return amount == null ? "no cost" : amount.toPlainString();
	}

	/** The same steps on a store with futures: one bucket after another, giving back on a refusal. */
	private final class AsyncAdmission {
		final TenantBudget tenant;
		final Priority priority;
		final long[] units;
		final long[] floors;
		final Admission to;

		AsyncAdmission(TenantBudget tenant, Priority priority, long[] units, long[] floors, Admission to) {
			this.tenant = tenant;
			this.priority = priority;
			this.units = units;
			this.floors = floors;
			this.to = to;
		}

		/** Asks the first bucket from {@code i} on that the tenant has; admits when there is none left. */
		void step(int i) {
			for (int at = i; at < 3; at++) {
				BucketSpec b = tenant.bucket(at);
				if (b != null) {
					ask(at, b);
					return;
				}
			}
			to.budgetAdmitted(tenant.tokens == null ? 0L : units[1], tenant.cost == null ? 0L : units[2]);
		}

		private void ask(int at, BucketSpec b) {
			BucketStore store = parts.shared();
			CompletableFuture<Take> f;
			try {
				f = store.tryTake(b, tenant.id, units[at]);
			}
			catch (RuntimeException e) {
				f = CompletableFuture.failedFuture(e);
			}
			f.whenComplete((take, error) -> {
				if (error != null || take == null) {
					undo(store, at);
					parts.metrics.budgetRejected(parts.policy, priority, "tenant", "store");
					to.budgetRefused(new AdmissionRejectedException(priority, AdmissionRejectedException.Reason.BUDGET,
							"the budget store could not answer for tenant '" + tenant.id + "': " + error));
					return;
				}
				if (take.taken()) {
					tenant.seen[at] = take.remaining();
				}
				long packed = keepFloor(take.pack(), b, units[at], floors[at],
						() -> store.giveBack(b, tenant.id, units[at]));
				if (!Take.isTaken(packed)) {
					undo(store, at);
					to.budgetRefused(refusal(tenant, priority, at, packed));
					return;
				}
				step(at + 1);
			});
		}

		/** Gives back what the buckets before {@code i} took. */
		private void undo(BucketStore store, int i) {
			for (int j = 0; j < i; j++) {
				BucketSpec b = tenant.bucket(j);
				if (b != null) {
					store.giveBack(b, tenant.id, units[j]);
				}
			}
		}
	}
}
