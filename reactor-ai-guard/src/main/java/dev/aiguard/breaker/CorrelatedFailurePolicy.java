package dev.aiguard.breaker;

import java.util.List;

import dev.aiguard.core.Outcome;

import org.jspecify.annotations.Nullable;

/**
 * The trip rule of a parent level in a {@link BreakerTree}: it follows its children's own judgements,
 * never the calls it counts itself, so a parent trips only where its children say they fail. A child
 * (see {@link CircuitBreaker#judgementAt(long)}) is
 * <ul>
 * <li><em>failing</em> while OPEN (its wait running), or CLOSED with its own trip policy's pressure at
 * its trip limit (a trip that waits out its dwell or delay);</li>
 * <li><em>probing</em> while HALF_OPEN or OPEN with its wait over: failing for a trip, not yet judged
 * for a re-close;</li>
 * <li><em>healthy</em> while CLOSED with calls in its window and its pressure below the limit;</li>
 * <li><em>idle</em> without calls in its window, and while FORCED_OPEN or DISABLED (an operator's
 * state says nothing about health): not counted at all.</li>
 * </ul>
 * The parent trips when at least {@code childrenToTrip} children are failing and they are at least
 * {@code shareToTrip} of the children with traffic (failing, probing or healthy); a parent with fewer
 * children never trips (its children's own breakers already refuse their calls). The pressure is the smaller of the two ratios, so it reaches 1 exactly when both hold.
 * No pooled rate enters: calls spread over children that each stay below their own threshold never
 * trip the parent. Judged after each failed or slow call the parent records (the children settle
 * first, so their state already shows that call). Built by the tree for its parents; not public.
 */
final class CorrelatedFailurePolicy implements TripPolicy {

	private final List<BreakerNode> children;
	private final int childrenToTrip;
	private final double shareToTrip;

	CorrelatedFailurePolicy(List<BreakerNode> children, int childrenToTrip, double shareToTrip) {
		this.children = children;
		this.childrenToTrip = childrenToTrip;
		this.shareToTrip = shareToTrip;
	}

	@Override
	public Evaluator newEvaluator() {
		return new Judge();
	}

	/** The parent's evaluator; the parent's HALF_OPEN asks it whether its children still hold it open. */
	final class Judge implements Evaluator {

		@Override
		public boolean onCall(WindowCounts window, BreakerConfig config, Outcome outcome, long timeToFirstTokenNanos,
				boolean slow, long nowNanos) {
			// a child's judgement moves on its failed and slow calls, and each of them passes the parent
			return outcome != Outcome.SUCCESS || slow;
		}

		@Override
		public double pressure(WindowCounts window, BreakerConfig config, long nowNanos) {
			return CorrelatedFailurePolicy.this.pressure(nowNanos);
		}

		/**
		 * @return why the children keep a parent with healthy probes from closing, or {@code null} when
		 *         they do not: the share is still reached by children that are failing and not yet probing
		 */
		@Nullable String holdsOpen(long nowNanos) {
			return CorrelatedFailurePolicy.this.holdsOpen(nowNanos);
		}
	}

	/** The trip pressure now: probing children count as failing. */
	double pressure(long nowNanos) {
		long counts = count(nowNanos);
		return pressure(failing(counts) + probing(counts), withTraffic(counts));
	}

	/** @return why the parent may not close yet, or {@code null}: only children failing without probing count */
	@Nullable String holdsOpen(long nowNanos) {
		long counts = count(nowNanos);
		int failing = failing(counts);
		int traffic = withTraffic(counts);
		return pressure(failing, traffic) >= 1
				? failing + " of " + traffic + " children with traffic are still failing" : null;
	}

	private double pressure(int failing, int withTraffic) {
		if (failing == 0) {
			return 0;
		}
		return Math.min((double) failing / childrenToTrip, (double) failing / withTraffic / shareToTrip);
	}

	/** Judges every child once; packs failing, probing and healthy counts (21 bits each) in a long. */
	private long count(long nowNanos) {
		long counts = 0;
		for (int i = 0, n = children.size(); i < n; i++) {
			switch (children.get(i).breaker().judgementAt(nowNanos)) {
				case CircuitBreaker.FAILING -> counts += 1L;
				case CircuitBreaker.PROBING -> counts += 1L << 21;
				case CircuitBreaker.HEALTHY -> counts += 1L << 42;
				default -> {
				}
			}
		}
		return counts;
	}

	private static final long MASK = (1L << 21) - 1;

	private static int failing(long counts) {
		return (int) (counts & MASK);
	}

	private static int probing(long counts) {
		return (int) (counts >>> 21 & MASK);
	}

	private static int withTraffic(long counts) {
		return failing(counts) + probing(counts) + (int) (counts >>> 42 & MASK);
	}

	int childrenToTrip() {
		return childrenToTrip;
	}

	double shareToTrip() {
		return shareToTrip;
	}

	@Override
	public String toString() {
		return "correlatedFailure(at least " + childrenToTrip + " of " + children.size()
				+ " children failing, and at least " + shareToTrip + " of those with traffic)";
	}
}
