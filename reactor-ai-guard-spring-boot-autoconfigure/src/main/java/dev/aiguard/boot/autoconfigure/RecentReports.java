package dev.aiguard.boot.autoconfigure;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;

import dev.aiguard.GuardReport;

/**
 * The last {@code capacity} guard reports of every policy, newest first, for the {@code aiguard}
 * Actuator endpoint. A report listener: it copies what a view needs (never prompt or answer text,
 * which reports do not carry; error messages are reduced to their class) into a fixed ring, with one
 * atomic increment and one array write per report.
 */
public final class RecentReports implements Consumer<GuardReport> {

	private final AtomicReferenceArray<Map<String, Object>> ring;
	private final AtomicLong written = new AtomicLong();

	/**
	 * @param capacity reports kept, 1 to 10 000
	 * @throws IllegalArgumentException when out of range
	 */
	public RecentReports(int capacity) {
		if (capacity < 1 || capacity > 10_000) {
			throw new IllegalArgumentException("capacity must be between 1 and 10000, was " + capacity);
		}
		this.ring = new AtomicReferenceArray<>(capacity);
	}

	@Override
	public void accept(GuardReport report) {
		Map<String, Object> summary = new LinkedHashMap<>();
		summary.put("at", Instant.now().toString());
		summary.put("policy", report.policy());
		summary.put("priority", report.priority().name());
		summary.put("outcome", report.outcome().name());
		summary.put("source", report.source().name());
		summary.put("attempts", report.attempts().size());
		summary.put("tokens", report.tokens());
		summary.put("timeToFirstTokenMs", millis(report.timeToFirstToken()));
		summary.put("durationMs", millis(report.duration()));
		summary.put("finishReason", report.finishReason());
		summary.put("outputTruncated", report.outputTruncated());
		summary.put("error", report.error() == null ? null : report.error().getClass().getName());
		long slot = written.getAndIncrement();
		ring.set((int) (slot % ring.length()), summary);
	}

	/** @return the kept reports, newest first */
	public List<Map<String, Object>> newestFirst() {
		long end = written.get();
		int n = (int) Math.min(end, ring.length());
		List<Map<String, Object>> out = new ArrayList<>(n);
		for (long i = end - 1; i >= end - n; i--) {
			Map<String, Object> r = ring.get((int) (i % ring.length()));
			if (r != null) {
				out.add(r);
			}
		}
		return out;
	}

	private static Long millis(Duration d) {
		return d == null ? null : d.toMillis();
	}
}
