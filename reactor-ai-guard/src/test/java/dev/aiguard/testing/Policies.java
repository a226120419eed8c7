package dev.aiguard.testing;

import dev.aiguard.GuardPolicy;
import dev.aiguard.metrics.GuardMetrics;
import reactor.core.scheduler.Scheduler;

/**
 * The policy builders tests start from: named, delivering their reports to a {@link Reports},
 * optionally recording metrics and running every deadline on a virtual-time scheduler. A test
 * adds what it is about (retry, lanes, breaker, fallback) to the builder it gets.
 *
 * <pre>{@code
 * final Reports reports = new Reports();
 * final RecordingMetrics metrics = new RecordingMetrics();
 *
 * StepVerifier.withVirtualTime(() -> upstream.transform(AiGuard.of(
 *         Policies.onVirtualTime("it-retry", VirtualTimeScheduler.get(), reports, metrics)
 *             .retry(RetryRules.backoff(3, Duration.ofMillis(100)))
 *             .build())))
 * }</pre>
 */
public final class Policies {

	private Policies() {
	}

	/** @return a builder named {@code name} whose reports go to {@code reports} */
	public static GuardPolicy.Builder reporting(String name, Reports reports) {
		return GuardPolicy.builder(name).onReport(reports);
	}

	/** @return a builder named {@code name} whose reports go to {@code reports} and meters to {@code metrics} */
	public static GuardPolicy.Builder recording(String name, Reports reports, GuardMetrics metrics) {
		return reporting(name, reports).metrics(metrics);
	}

	/**
	 * @param timer a virtual-time scheduler (or a {@link TrackingScheduler}): every deadline,
	 * backoff and clock reading of the guard follows it
	 * @return a builder named {@code name} on {@code timer}, whose reports go to {@code reports}
	 */
	public static GuardPolicy.Builder onVirtualTime(String name, Scheduler timer, Reports reports) {
		return reporting(name, reports).timer(timer);
	}

	/** @return as {@link #onVirtualTime(String, Scheduler, Reports)}, meters recorded in {@code metrics} */
	public static GuardPolicy.Builder onVirtualTime(String name, Scheduler timer, Reports reports,
			GuardMetrics metrics) {
		return recording(name, reports, metrics).timer(timer);
	}
}
