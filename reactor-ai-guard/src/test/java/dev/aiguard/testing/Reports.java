package dev.aiguard.testing;

import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import dev.aiguard.GuardReport;

/**
 * The reports a guard delivered, in the order they arrived: give it to the policy as a report
 * listener and assert on it as on any list. Thread-safe, because a report is delivered on
 * whichever thread ended the stream.
 *
 * <pre>{@code
 * Reports reports = new Reports();
 * AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("chat").onReport(reports).build());
 * // ... run a request
 * assertThat(reports).singleElement().extracting(GuardReport::outcome).isEqualTo(Outcome.SUCCESS);
 * }</pre>
 */
public final class Reports extends CopyOnWriteArrayList<GuardReport> implements Consumer<GuardReport> {

	private static final long serialVersionUID = 1L;

	@Override
	public void accept(GuardReport report) {
		add(report);
	}

	/** @return the report that arrived last; fails when there is none */
	public GuardReport last() {
		if (isEmpty()) {
			throw new AssertionError("no report was delivered");
		}
		return get(size() - 1);
	}
}
