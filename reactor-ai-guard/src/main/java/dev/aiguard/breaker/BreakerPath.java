package dev.aiguard.breaker;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Objects;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import org.jspecify.annotations.Nullable;

/**
 * One model endpoint's way through a {@link BreakerTree}: system → provider → endpoint. A call takes
 * one permit per level, top-down; when a level refuses, the permits already taken are handed back
 * in reverse order (a HALF_OPEN probe slot comes back, nothing is counted), so a call an OPEN
 * endpoint refuses never counts at its provider or the system. The composite permit is settled
 * exactly once, and settles each level's permit once with the same outcome, endpoint first.
 *
 * <pre>{@code
 * BreakerPath gpt = tree.path("openai", "gpt-4o");
 * GuardPolicy policy = GuardPolicy.builder("chat").breaker(gpt).build();
 *
 * // or by hand
 * BreakerPermit permit = gpt.tryAcquire(Priority.P0);   // null = some level refused
 * if (permit != null) {
 *     // ... exactly once:
 *     permit.record(Outcome.SUCCESS, ttftNanos);
 * }
 * }</pre>
 *
 * <p>Cost: a CLOSED path allocates its three level permits and one composite permit per call.
 */
public final class BreakerPath implements BreakerGate {

	private final BreakerTree tree;
	private final BreakerNode system;
	private final BreakerNode provider;
	private final BreakerNode endpoint;
	private final String name;

	BreakerPath(BreakerTree tree, BreakerNode system, BreakerNode provider, BreakerNode endpoint) {
		this.tree = tree;
		this.system = system;
		this.provider = provider;
		this.endpoint = endpoint;
		this.name = endpoint.breaker().name();
	}

	/** @return the tree the path belongs to */
	public BreakerTree tree() {
		return tree;
	}

	/** @return the root */
	public BreakerNode system() {
		return system;
	}

	/** @return the provider node */
	public BreakerNode provider() {
		return provider;
	}

	/** @return the endpoint node */
	public BreakerNode endpoint() {
		return endpoint;
	}

	/** @return {@code tree/provider/endpoint}, the endpoint breaker's name */
	@Override
	public String name() {
		return name;
	}

	/**
	 * Asks every level for one call at {@code priority}, top-down.
	 *
	 * @return the composite permit, or {@code null} when a level refused (its refusal is counted and
	 *         reported by that level's breaker; the levels above it counted nothing)
	 */
	@Nullable
	public BreakerPermit tryAcquire(Priority priority) {
		Objects.requireNonNull(priority, "priority");
		BreakerPermit s = system.breaker().tryAcquire(priority);
		if (s == null) {
			return null;
		}
		BreakerPermit p = provider.breaker().tryAcquire(priority);
		if (p == null) {
			s.record(Outcome.REJECTED, -1L);
			return null;
		}
		BreakerPermit e = endpoint.breaker().tryAcquire(priority);
		if (e == null) {
			p.record(Outcome.REJECTED, -1L);
			s.record(Outcome.REJECTED, -1L);
			return null;
		}
		return new PathPermit(s, p, e);
	}

	/**
	 * {@inheritDoc} The exception names the breaker of the highest level that refused.
	 */
	@Override
	public BreakerPermit acquire(Priority priority) {
		Objects.requireNonNull(priority, "priority");
		CircuitBreaker sb = system.breaker();
		BreakerPermit s = sb.tryAcquire(priority);
		if (s == null) {
			throw new BreakerOpenException(sb.name(), sb.state());
		}
		CircuitBreaker pb = provider.breaker();
		BreakerPermit p = pb.tryAcquire(priority);
		if (p == null) {
			s.record(Outcome.REJECTED, -1L);
			throw new BreakerOpenException(pb.name(), pb.state());
		}
		CircuitBreaker eb = endpoint.breaker();
		BreakerPermit e = eb.tryAcquire(priority);
		if (e == null) {
			p.record(Outcome.REJECTED, -1L);
			s.record(Outcome.REJECTED, -1L);
			throw new BreakerOpenException(eb.name(), eb.state());
		}
		return new PathPermit(s, p, e);
	}

	@Override
	public boolean weighsPromptTokens() {
		return system.breaker().weighsPromptTokens() || provider.breaker().weighsPromptTokens()
				|| endpoint.breaker().weighsPromptTokens();
	}

	/**
	 * @return whether every level is CLOSED now (a call may still be refused by a ramp after a
	 *         re-close, or lose a race with a trip)
	 */
	public boolean closed() {
		return system.breaker().state() == BreakerState.CLOSED && provider.breaker().state() == BreakerState.CLOSED
				&& endpoint.breaker().state() == BreakerState.CLOSED;
	}

	@Override
	public String toString() {
		return "BreakerPath{" + name + "}";
	}

	/**
	 * One permit per level, settled together: a CAS makes the first settlement the only one, and it
	 * settles the endpoint first, then the provider, then the system, so a parent judging the call
	 * already sees the state its child moved to.
	 */
	static final class PathPermit implements BreakerPermit {

		private static final VarHandle SETTLED;

		static {
			try {
				SETTLED = MethodHandles.lookup().findVarHandle(PathPermit.class, "settled", int.class);
			}
			catch (ReflectiveOperationException e) {
				throw new ExceptionInInitializerError(e);
			}
		}

		private final BreakerPermit system;
		private final BreakerPermit provider;
		private final BreakerPermit endpoint;
		@SuppressWarnings("unused")
		private volatile int settled;

		PathPermit(BreakerPermit system, BreakerPermit provider, BreakerPermit endpoint) {
			this.system = system;
			this.provider = provider;
			this.endpoint = endpoint;
		}

		@Override
		public BreakerPermit promptTokens(int tokens) {
			endpoint.promptTokens(tokens);
			provider.promptTokens(tokens);
			system.promptTokens(tokens);
			return this;
		}

		@Override
		public void record(Outcome outcome, long timeToFirstTokenNanos) {
			Objects.requireNonNull(outcome, "outcome");
			if (SETTLED.compareAndSet(this, 0, 1)) {
				endpoint.record(outcome, timeToFirstTokenNanos);
				provider.record(outcome, timeToFirstTokenNanos);
				system.record(outcome, timeToFirstTokenNanos);
			}
		}

		@Override
		public void record(Outcome outcome, long timeToFirstTokenNanos, long nowNanos) {
			Objects.requireNonNull(outcome, "outcome");
			if (SETTLED.compareAndSet(this, 0, 1)) {
				endpoint.record(outcome, timeToFirstTokenNanos, nowNanos);
				provider.record(outcome, timeToFirstTokenNanos, nowNanos);
				system.record(outcome, timeToFirstTokenNanos, nowNanos);
			}
		}
	}
}
