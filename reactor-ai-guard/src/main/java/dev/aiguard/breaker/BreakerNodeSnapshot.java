package dev.aiguard.breaker;

import java.util.List;

/**
 * A node of a {@link BreakerTree} as it was at one moment, with its subtree: what a dashboard or a
 * health view shows.
 *
 * <pre>{@code
 * BreakerNodeSnapshot root = tree.snapshot();
 * for (BreakerNodeSnapshot provider : root.children()) {
 *     log.info("{} {} ({} calls, {} failing)", provider.name(), provider.state(), provider.calls(),
 *         provider.failureRate());
 * }
 * }</pre>
 *
 * @param name the node's own name
 * @param breakerName its breaker's name, the path {@code tree/provider/endpoint}
 * @param level its level
 * @param state its breaker's state
 * @param calls calls in its breaker's window
 * @param failureRate its window's failure rate, a fraction
 * @param slowCallRate its window's slow-call rate, a fraction
 * @param rejectedCalls calls its breaker refused since it was built
 * @param children the nodes one level down
 */
public record BreakerNodeSnapshot(String name, String breakerName, BreakerLevel level, BreakerState state, long calls,
		double failureRate, double slowCallRate, long rejectedCalls, List<BreakerNodeSnapshot> children) {

	public BreakerNodeSnapshot {
		children = List.copyOf(children);
	}
}
