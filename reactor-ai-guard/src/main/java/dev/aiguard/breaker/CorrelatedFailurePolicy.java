package dev.aiguard.breaker;

import java.util.List;

import dev.aiguard.core.Outcome;

/**
 * The trip rule of a parent level in a {@link BreakerTree}: it weighs its children's evidence, not
 * raw calls, so one failing child never trips it. The pressure is the larger of
 * <ul>
 * <li>{@code failingChildren / childrenToTrip}: a child is failing while its breaker is not CLOSED
 * (OPEN, HALF_OPEN, FORCED_OPEN) or while its window holds at least its {@code minimumCalls} with a
 * failure rate at its {@code failureRateThreshold};</li>
 * <li>the failure rate of the children's windows <em>without the child whose rate is highest</em>,
 * over the parent's {@code failureRateThreshold}, once those windows hold the parent's
 * {@code minimumCalls}: an error storm spread over at least two children.</li>
 * </ul>
 * With {@code childrenToTrip ≥ 2}, one child alone reaches at most half the first; and leaving out
 * the worst child leaves children each below the threshold when only one is failing, so their joint
 * rate is below it too. Judged after each failed call the parent records (the children settle
 * first, so their state already shows that call). Built by the tree for its parents; not public.
 */
final class CorrelatedFailurePolicy implements TripPolicy {

	private final List<BreakerNode> children;
	private final int childrenToTrip;

	CorrelatedFailurePolicy(List<BreakerNode> children, int childrenToTrip) {
		this.children = children;
		this.childrenToTrip = childrenToTrip;
	}

	@Override
	public Evaluator newEvaluator() {
		return new Evaluator() {
			@Override
			public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos,
					boolean slow, long nowNanos) {
				return outcome != Outcome.SUCCESS;
			}

			@Override
			public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
				return CorrelatedFailurePolicy.this.pressure(config, nowNanos);
			}
		};
	}

	/** Reads each child's window in place: no copy, no allocation. */
	double pressure(BreakerConfig config, long nowNanos) {
		int failing = 0;
		long calls = 0;
		long failures = 0;
		long worstCalls = 0;
		long worstFailures = 0;
		double worstRate = -1;
		for (int i = 0, n = children.size(); i < n; i++) {
			CircuitBreaker child = children.get(i).breaker();
			BreakerState state = child.state();
			WindowCounts w = child.countsAt(nowNanos);
			long c = w.calls();
			long f = Math.min(w.failures(), c);
			double rate = c == 0 ? 0 : (double) f / c;
			BreakerConfig cc = child.config();
			if (state == BreakerState.OPEN || state == BreakerState.HALF_OPEN || state == BreakerState.FORCED_OPEN
					|| c >= cc.minimumCalls() && rate >= cc.failureRateThreshold()) {
				failing++;
			}
			calls += c;
			failures += f;
			if (rate > worstRate) {
				worstRate = rate;
				worstCalls = c;
				worstFailures = f;
			}
		}
		double byChildren = (double) failing / childrenToTrip;
		long restCalls = calls - worstCalls;
		double spread = 0;
		if (children.size() >= 2 && restCalls > 0 && restCalls >= config.minimumCalls()) {
			spread = (double) (failures - worstFailures) / restCalls / config.failureRateThreshold();
		}
		return Math.max(byChildren, spread);
	}

	int childrenToTrip() {
		return childrenToTrip;
	}

	@Override
	public String toString() {
		return "correlatedFailure(" + childrenToTrip + " of " + children.size() + " children, or spread)";
	}
}
