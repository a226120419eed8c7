package dev.aiguard.breaker;

import java.util.ArrayList;
import java.util.List;

/**
 * One node of a {@link BreakerTree}: a level, a name and the {@link CircuitBreaker} that is the
 * node's state machine. Parents (system, provider) trip on their children's correlated failure;
 * endpoints trip on their own calls.
 *
 * <pre>{@code
 * BreakerNode openai = tree.provider("openai");
 * log.info("{} is {}", openai.name(), openai.breaker().state());
 * openai.children().forEach(endpoint -> log.info("  {}", endpoint.breaker().state()));
 * }</pre>
 */
public final class BreakerNode {

	private final String name;
	private final BreakerLevel level;
	private final CircuitBreaker breaker;
	private final List<BreakerNode> children;

	BreakerNode(String name, BreakerLevel level, CircuitBreaker breaker, List<BreakerNode> children) {
		this.name = name;
		this.level = level;
		this.breaker = breaker;
		this.children = List.copyOf(children);
	}

	/** @return the node's own name (the tree's name, a provider's, or an endpoint's) */
	public String name() {
		return name;
	}

	/** @return the node's level */
	public BreakerLevel level() {
		return level;
	}

	/** @return the node's breaker; its name is the node's path, {@code tree/provider/endpoint} */
	public CircuitBreaker breaker() {
		return breaker;
	}

	/** @return the nodes one level down, in the order they were declared (empty for an endpoint) */
	public List<BreakerNode> children() {
		return children;
	}

	/** @return the node and its subtree as they are now */
	public BreakerNodeSnapshot snapshot() {
		List<BreakerNodeSnapshot> kids = new ArrayList<>(children.size());
		for (BreakerNode child : children) {
			kids.add(child.snapshot());
		}
		BreakerSnapshot window = breaker.snapshot();
		return new BreakerNodeSnapshot(name, breaker.name(), level, breaker.state(), window.calls(),
				window.failureRate(), window.slowCallRate(), breaker.rejectedCalls(), kids);
	}

	@Override
	public String toString() {
		return "BreakerNode{" + breaker.name() + ", " + level + ", " + breaker.state() + "}";
	}
}
