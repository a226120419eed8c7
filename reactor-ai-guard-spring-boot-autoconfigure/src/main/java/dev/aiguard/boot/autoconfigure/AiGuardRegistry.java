package dev.aiguard.boot.autoconfigure;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

import dev.aiguard.AiGuard;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.load.LoadGovernor;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.DisposableBean;

/**
 * The guards, breakers, lanes and load governor built from {@code aiguard.*}, by name. Each guard is also a bean
 * of its own (named after its policy), so most code injects the guard and never sees this; the
 * registry is for code that looks guards up at runtime and for management views.
 *
 * <pre>{@code
 * AiGuard<ChatChunk> chat = registry.guard("chat");
 * BreakerState state = registry.breaker("openai").orElseThrow().state();
 * }</pre>
 */
public final class AiGuardRegistry implements DisposableBean {

	private final Map<String, AiGuard<ChatChunk>> guards;
	private final Map<String, CircuitBreaker> breakers;
	@Nullable
	private final PriorityLanes lanes;
	@Nullable
	private final LoadGovernor load;
	@Nullable
	private final BreakerTree tree;

	AiGuardRegistry(Map<String, AiGuard<ChatChunk>> guards, Map<String, CircuitBreaker> breakers,
			@Nullable PriorityLanes lanes, @Nullable LoadGovernor load) {
		this(guards, breakers, lanes, load, null);
	}

	AiGuardRegistry(Map<String, AiGuard<ChatChunk>> guards, Map<String, CircuitBreaker> breakers,
			@Nullable PriorityLanes lanes, @Nullable LoadGovernor load, @Nullable BreakerTree tree) {
		this.guards = Collections.unmodifiableMap(new LinkedHashMap<>(guards));
		this.breakers = Collections.unmodifiableMap(new LinkedHashMap<>(breakers));
		this.lanes = lanes;
		this.load = load;
		this.tree = tree;
	}

	/** @return the breaker tree {@code aiguard.breaker-tree} describes, if it lists a provider */
	public Optional<BreakerTree> breakerTree() {
		return Optional.ofNullable(tree);
	}

	/**
	 * @return the guard of the policy {@code aiguard.policies.<name>}
	 * @throws IllegalArgumentException naming the known policies when there is none of that name
	 */
	public AiGuard<ChatChunk> guard(String name) {
		AiGuard<ChatChunk> guard = guards.get(name);
		if (guard == null) {
			throw new IllegalArgumentException("no guard policy '" + name + "' under aiguard.policies (known: "
					+ guards.keySet() + ")");
		}
		return guard;
	}

	/** @return every guard by policy name, in configuration order */
	public Map<String, AiGuard<ChatChunk>> guards() {
		return guards;
	}

	/** @return the breaker {@code aiguard.breakers.<name>}, if configured */
	public Optional<CircuitBreaker> breaker(String name) {
		return Optional.ofNullable(breakers.get(name));
	}

	/** @return every breaker by name, in configuration order (a breaker tree's are in {@link #breakerTree()}) */
	public Map<String, CircuitBreaker> breakers() {
		return breakers;
	}

	/** @return the shared lanes, if any lane is configured */
	public Optional<PriorityLanes> lanes() {
		return Optional.ofNullable(lanes);
	}

	/**
	 * @return the load governor the policies pass (the context's {@code LoadGovernor} bean), if
	 *         there is one; its bean, not the registry, starts and disposes it
	 */
	public Optional<LoadGovernor> load() {
		return Optional.ofNullable(load);
	}

	/** Disposes the lanes' schedulers when the context closes. */
	@Override
	public void destroy() {
		if (lanes != null) {
			lanes.dispose();
		}
	}
}
