package dev.aiguard.fallback;

import java.time.Duration;

import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;

/**
 * Bounds of the in-memory {@link ResponseCache#caffeine(ResponseCacheSpec) response cache}.
 * Immutable and copy-on-write: every setter returns a new spec.
 *
 * <pre>{@code
 * ResponseCache<ChatChunk> cache = ResponseCache.caffeine(ResponseCacheSpec.defaults()
 *     .maximumEntries(50_000)
 *     .timeToLive(Duration.ofHours(1))
 *     .maxChunksPerEntry(2_000));
 * }</pre>
 *
 * Defaults: 10 000 entries, 10 minutes to live after being stored, 4 096 chunks per entry, the
 * system clock.
 */
public final class ResponseCacheSpec {

	private static final ResponseCacheSpec DEFAULTS =
			new ResponseCacheSpec(10_000L, Duration.ofMinutes(10), 4_096, null);

	private final long maximumEntries;
	private final Duration timeToLive;
	private final int maxChunksPerEntry;
	@Nullable
	private final Scheduler clock;

	private ResponseCacheSpec(long maximumEntries, Duration timeToLive, int maxChunksPerEntry,
			@Nullable Scheduler clock) {
		this.maximumEntries = maximumEntries;
		this.timeToLive = timeToLive;
		this.maxChunksPerEntry = maxChunksPerEntry;
		this.clock = clock;
	}

	/** @return the default bounds */
	public static ResponseCacheSpec defaults() {
		return DEFAULTS;
	}

	/**
	 * @param entries the most answers kept; beyond it the least valuable are evicted
	 * @throws IllegalArgumentException when not positive
	 */
	public ResponseCacheSpec maximumEntries(long entries) {
		if (entries <= 0L) {
			throw new IllegalArgumentException("maximumEntries must be > 0, was " + entries);
		}
		return new ResponseCacheSpec(entries, timeToLive, maxChunksPerEntry, clock);
	}

	/**
	 * @param ttl how long an answer is replayed after it was stored
	 * @throws IllegalArgumentException when {@code null}, zero or negative
	 */
	public ResponseCacheSpec timeToLive(Duration ttl) {
		if (ttl == null || ttl.isZero() || ttl.isNegative()) {
			throw new IllegalArgumentException("timeToLive must be > 0, was " + ttl);
		}
		return new ResponseCacheSpec(maximumEntries, ttl, maxChunksPerEntry, clock);
	}

	/**
	 * @param chunks the most chunks one answer may have to be stored; longer answers are not stored
	 * @throws IllegalArgumentException when not positive
	 */
	public ResponseCacheSpec maxChunksPerEntry(int chunks) {
		if (chunks <= 0) {
			throw new IllegalArgumentException("maxChunksPerEntry must be > 0, was " + chunks);
		}
		return new ResponseCacheSpec(maximumEntries, timeToLive, chunks, clock);
	}

	/**
	 * @param scheduler whose {@code now()} times entries (a virtual-time scheduler in tests)
	 * @throws IllegalArgumentException when {@code null}
	 */
	public ResponseCacheSpec clock(Scheduler scheduler) {
		if (scheduler == null) {
			throw new IllegalArgumentException("clock must not be null");
		}
		return new ResponseCacheSpec(maximumEntries, timeToLive, maxChunksPerEntry, scheduler);
	}

	public long maximumEntries() {
		return maximumEntries;
	}

	public Duration timeToLive() {
		return timeToLive;
	}

	public int maxChunksPerEntry() {
		return maxChunksPerEntry;
	}

	/** @return the injected clock, or {@code null} for the system clock */
	@Nullable
	public Scheduler clock() {
		return clock;
	}

	@Override
	public String toString() {
		return "ResponseCacheSpec{maximumEntries=" + maximumEntries + ", timeToLive=" + timeToLive
				+ ", maxChunksPerEntry=" + maxChunksPerEntry + (clock == null ? "" : ", clock=" + clock) + '}';
	}
}
