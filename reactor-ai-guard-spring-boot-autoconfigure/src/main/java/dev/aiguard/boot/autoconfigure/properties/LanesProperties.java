package dev.aiguard.boot.autoconfigure.properties;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;

/**
 * The shared priority lanes, {@code aiguard.lanes}: none, or all three of p0, p1 and p2.
 *
 * <pre>
 * aiguard:
 *   lanes:
 *     p0: { concurrency: 8 }
 *     p1: { concurrency: 4 }
 *     p2: { concurrency: 2, max-queue-wait: 5s }
 * </pre>
 */
public class LanesProperties {

	/** The lanes' name in metrics. Default: {@code lanes}. */
	private String name = "lanes";

	/** The interactive lane. */
	@Nullable
	private Lane p0;

	/** The assistive lane. */
	@Nullable
	private Lane p1;

	/** The batch lane. */
	@Nullable
	private Lane p2;

	public String getName() {
		return name;
	}

	public void setName(String name) {
		this.name = name;
	}

	public @Nullable Lane getP0() {
		return p0;
	}

	public void setP0(@Nullable Lane p0) {
		this.p0 = p0;
	}

	public @Nullable Lane getP1() {
		return p1;
	}

	public void setP1(@Nullable Lane p1) {
		this.p1 = p1;
	}

	public @Nullable Lane getP2() {
		return p2;
	}

	public void setP2(@Nullable Lane p2) {
		this.p2 = p2;
	}

	/** @return the configured lanes by priority, most urgent first */
	public Map<Priority, Lane> configured() {
		Map<Priority, Lane> lanes = new LinkedHashMap<>();
		if (p0 != null) {
			lanes.put(Priority.P0, p0);
		}
		if (p1 != null) {
			lanes.put(Priority.P1, p1);
		}
		if (p2 != null) {
			lanes.put(Priority.P2, p2);
		}
		return lanes;
	}

	/** One lane; an unset setting takes {@code LaneSpec.of(concurrency)}'s value. */
	public static class Lane {

		/** Streams of this lane in flight at once (0: the lane only borrows). */
		private int concurrency = 1;

		/** Requests waiting at most. Default: 256. */
		@Nullable
		private Integer maxQueueSize;

		/** Longest wait in the queue before rejection. Default: 30s. */
		@Nullable
		private Duration maxQueueWait;

		/** Whether this lane may use idle permits of less urgent lanes. Default: true. */
		@Nullable
		private Boolean borrowFromLower;

		/** Permits that only this lane's own requests may use. Default: 0. */
		@Nullable
		private Integer reservedForOwn;

		/** A request waiting this long is promoted one priority; unset: never. */
		@Nullable
		private Duration agingAfter;

		public int getConcurrency() {
			return concurrency;
		}

		public void setConcurrency(int concurrency) {
			this.concurrency = concurrency;
		}

		public @Nullable Integer getMaxQueueSize() {
			return maxQueueSize;
		}

		public void setMaxQueueSize(@Nullable Integer maxQueueSize) {
			this.maxQueueSize = maxQueueSize;
		}

		public @Nullable Duration getMaxQueueWait() {
			return maxQueueWait;
		}

		public void setMaxQueueWait(@Nullable Duration maxQueueWait) {
			this.maxQueueWait = maxQueueWait;
		}

		public @Nullable Boolean getBorrowFromLower() {
			return borrowFromLower;
		}

		public void setBorrowFromLower(@Nullable Boolean borrowFromLower) {
			this.borrowFromLower = borrowFromLower;
		}

		public @Nullable Integer getReservedForOwn() {
			return reservedForOwn;
		}

		public void setReservedForOwn(@Nullable Integer reservedForOwn) {
			this.reservedForOwn = reservedForOwn;
		}

		public @Nullable Duration getAgingAfter() {
			return agingAfter;
		}

		public void setAgingAfter(@Nullable Duration agingAfter) {
			this.agingAfter = agingAfter;
		}
	}
}
