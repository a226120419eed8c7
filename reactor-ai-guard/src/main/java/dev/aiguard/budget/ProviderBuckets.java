package dev.aiguard.budget;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.budget.BudgetGate.ProviderTurn;
import dev.aiguard.core.Priority;
import dev.aiguard.provider.RateLimitListener;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.provider.RateLimits;
import org.jspecify.annotations.Nullable;

/**
 * The provider key's buckets (requests and tokens per minute): an attempt's turn taken or reserved
 * before it is sent, a reservation given back, and the provider's own word (rate-limit headers, a
 * {@code 429}) bringing the buckets down or pausing them.
 */
final class ProviderBuckets {

	private final BudgetParts parts;
	/** The key, set whenever the spec limits it ({@link BudgetSpec#check()}); the buckets exist only with it. */
	@Nullable
	private final String key;
	@Nullable
	final BucketSpec requests;
	@Nullable
	final BucketSpec tokens;
	private final RateLimitListener headers = this::heard;
	/** What a shared store last said the key's buckets hold, for the gauges. */
	private final ConcurrentHashMap<String, long[]> lastSeen = new ConcurrentHashMap<>();

	ProviderBuckets(BudgetParts parts) {
		this.parts = parts;
		this.key = parts.spec.providerKey();
		ProviderLimits p = parts.spec.provider();
		this.requests = key != null && p.requestsPerMinute() > 0
				? BucketSpec.of("provider.requests", p.requestsPerMinute(), Duration.ofMinutes(1)) : null;
		this.tokens = key != null && p.tokensPerMinute() > 0
				? BucketSpec.of("provider.tokens", p.tokensPerMinute(), Duration.ofMinutes(1)) : null;
		String k = key;
		if (parts.store != null && k != null) {
			gauge(k, BudgetGate.REQUESTS, requests);
			gauge(k, BudgetGate.TOKENS, tokens);
		}
	}

	private void gauge(String id, String limit, @Nullable BucketSpec bucket) {
		if (bucket == null) {
			return;
		}
		LongSupplier remaining;
		BucketStore.Immediate sync = parts.now;
		if (sync != null) {
			remaining = () -> sync.available(bucket, id);
		}
		else {
			long[] seen = lastSeen.computeIfAbsent(bucket.name() + '/' + id, k -> new long[] { bucket.capacity() });
			remaining = () -> seen[0];
		}
		parts.metrics.budgetRemaining(parts.policy, "provider", id, limit, remaining);
	}

	private void saw(BucketSpec bucket, String id, long remaining) {
		long[] seen = lastSeen.get(bucket.name() + '/' + id);
		if (seen != null) {
			seen[0] = remaining;
		}
	}

	boolean limited() {
		return parts.store != null && (requests != null || tokens != null);
	}

	RateLimitListener headerListener() {
		return headers;
	}

	void take(long promptTokens, long maxWaitNanos, ProviderTurn to) {
		String k = key;
		if (k == null) {
			to.providerAnswered(0L); // no key, no buckets: the attempt goes now
			return;
		}
		long units = BudgetGate.providerUnits(promptTokens);
		long maxWait = Math.max(0L, maxWaitNanos);
		BucketStore.Immediate sync = parts.now;
		if (sync != null) {
			long r = requests == null ? 0L : reserveNow(sync, requests, k, 1L, maxWait);
			if (r < 0L) {
				to.providerAnswered(r);
				return;
			}
			long t = tokens == null ? 0L : reserveNow(sync, tokens, k, units, maxWait);
			if (t < 0L) {
				BudgetParts.giveBack(sync, requests, k, 1L);
				to.providerAnswered(t);
				return;
			}
			to.providerAnswered(Math.max(r, t));
			return;
		}
		reserveLater(requests, k, 1L, maxWait).whenComplete((r, error) -> {
			if (error != null || r == null) {
				to.providerAnswered(Take.packRefused(Long.MAX_VALUE));
				return;
			}
			if (!r.taken()) {
				to.providerAnswered(r.packReservation());
				return;
			}
			reserveLater(tokens, k, units, maxWait).whenComplete((t, error2) -> {
				if (error2 != null || t == null || !t.taken()) {
					BucketSpec taken = requests;
					if (taken != null) {
						parts.shared().giveBack(taken, k, 1L);
					}
					to.providerAnswered(t == null ? Take.packRefused(Long.MAX_VALUE) : t.packReservation());
					return;
				}
				to.providerAnswered(Math.max(r.nanosToWait(), t.nanosToWait()));
			});
		});
	}

	/**
	 * The bucket's units now when it holds them (remembering what is left for the gauge), else a
	 * reservation.
	 *
	 * @return the reservation, packed ({@link Take#packReservation()})
	 */
	private long reserveNow(BucketStore.Immediate sync, BucketSpec bucket, String id, long units, long maxWait) {
		long taken = sync.tryTake(bucket, id, units);
		if (Take.isTaken(taken)) {
			saw(bucket, id, Take.remaining(taken));
			return 0L;
		}
		long reserved = sync.reserve(bucket, id, units, maxWait);
		if (reserved >= 0L) {
			saw(bucket, id, 0L);
		}
		return reserved;
	}

	/**
	 * {@link #reserveNow} through the futures, as one store operation: {@link BucketStore#reserve} takes
	 * the units when the bucket holds them (saying what is left) and reserves otherwise, so a store on a
	 * network answers "now, or a place in the line" within one deadline of its own. A missing bucket is
	 * reserved at once.
	 */
	private CompletableFuture<Take> reserveLater(@Nullable BucketSpec bucket, String id, long units, long maxWait) {
		if (bucket == null) {
			return CompletableFuture.completedFuture(Take.ofReserved(0L));
		}
		CompletableFuture<Take> reservation;
		try {
			reservation = parts.shared().reserve(bucket, id, units, maxWait);
		}
		catch (RuntimeException e) {
			return CompletableFuture.failedFuture(e);
		}
		return reservation.thenApply(reserved -> {
			if (reserved.taken()) {
				saw(bucket, id, reserved.nanosToWait() == 0L ? reserved.remaining() : 0L);
			}
			return reserved;
		});
	}

	void release(long tokensReserved) {
		String k = key;
		if (k == null) {
			return; // no key, no buckets: nothing was reserved
		}
		BucketStore.Immediate sync = parts.now;
		if (sync != null) {
			BudgetParts.giveBack(sync, requests, k, 1L);
			if (tokensReserved > 0L) {
				BudgetParts.giveBack(sync, tokens, k, tokensReserved);
			}
			return;
		}
		if (requests != null) {
			parts.shared().giveBack(requests, k, 1L);
		}
		if (tokens != null && tokensReserved > 0L) {
			parts.shared().giveBack(tokens, k, tokensReserved);
		}
	}

	/**
	 * The provider said how much is left ({@code x-ratelimit-remaining-*}): a local bucket holding more
	 * is brought down to it; a window with nothing left pauses the bucket until its reset.
	 */
	private void heard(RateLimits limits) {
		String k = key;
		if (parts.store == null || k == null) {
			return;
		}
		correct(requests, k, limits.remainingRequests(), limits.resetRequests());
		correct(tokens, k, limits.remainingTokens(), limits.resetTokens());
	}

	private void correct(@Nullable BucketSpec bucket, String id, long remaining, @Nullable Duration reset) {
		if (bucket == null || remaining < 0L) {
			return;
		}
		if (remaining == 0L && reset != null && !reset.isZero()) {
			pause(bucket, id, reset);
			return;
		}
		BucketStore.Immediate sync = parts.now;
		if (sync != null) {
			long available = sync.available(bucket, id);
			if (available > remaining) {
				sync.takeRegardless(bucket, id, available - remaining);
			}
			return;
		}
		BucketStore store = parts.shared();
		store.available(bucket, id).thenAccept(available -> {
			if (available != null && available > remaining) {
				store.takeRegardless(bucket, id, available - remaining);
			}
		});
	}

	private void pause(BucketSpec bucket, String id, Duration duration) {
		BucketStore.Immediate sync = parts.now;
		if (sync != null) {
			sync.pause(bucket, id, duration);
		}
		else {
			parts.shared().pause(bucket, id, duration);
		}
	}

	/**
	 * The provider answered {@code 429}: its {@code Retry-After} pauses the key's buckets for every
	 * request using them (without one, the reset of its exhausted window does), and its rate-limit
	 * headers correct them.
	 */
	void rateLimited(RateLimitedException e) {
		String k = key;
		if (!limited() || k == null) {
			return;
		}
		RateLimits limits = e.rateLimits();
		Duration pause = e.retryAfter().orElse(null);
		if (pause == null) {
			pause = limits.remainingTokens() == 0L ? limits.resetTokens() : limits.resetRequests();
		}
		if (limits.isKnown()) {
			heard(limits);
		}
		if (pause != null && !pause.isZero() && !pause.isNegative()) {
			if (requests != null) {
				pause(requests, k, pause);
			}
			if (tokens != null) {
				pause(tokens, k, pause);
			}
		}
	}

	void throttled(Priority priority, long waitNanos) {
		parts.metrics.budgetThrottled(parts.policy, priority, String.valueOf(key), waitNanos);
	}

	AdmissionRejectedException refusal(Priority priority, long waitNanos, long allowedNanos) {
		parts.metrics.budgetRejected(parts.policy, priority, "provider", BudgetGate.REQUESTS);
		boolean never = waitNanos == Long.MAX_VALUE;
		return new AdmissionRejectedException(priority, AdmissionRejectedException.Reason.BUDGET,
				"provider key '" + key + "' has no room for this request "
						+ (never ? "(the bucket store could not answer, or the request is larger than the key's budget)"
								: "for " + Duration.ofNanos(waitNanos).toMillis() + " ms, more than the "
										+ Duration.ofNanos(allowedNanos).toMillis() + " ms it may wait"),
				never ? null : Duration.ofNanos(waitNanos));
	}
}
