package dev.aiguard.boot.autoconfigure;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

import dev.aiguard.GuardPolicy;
import dev.aiguard.budget.BudgetGate;
import dev.aiguard.budget.TenantSummary;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerNodeSnapshot;
import dev.aiguard.breaker.BreakerSnapshot;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.core.Priority;
import dev.aiguard.stall.StallSpec;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.audit.AuditEvent;
import org.springframework.boot.actuate.audit.AuditEventRepository;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * The {@code aiguard} Actuator endpoint. Reading it ({@code GET /actuator/aiguard}) shows every
 * policy, breaker (state, rates, window, when the next probe may go) and lane (capacity, in flight,
 * queued), the breaker tree when one is configured ({@code breakerTree}: each node's level, state,
 * rates and children), the load governor's level and inputs, and the most recent reports. {@code GET /actuator/aiguard/{breaker}} shows one breaker.
 * {@code POST /actuator/aiguard/{breaker}} with {@code {"state": "forced-open" | "disabled" | "closed"}}
 * moves a breaker by hand and records an audit event {@value #AUDIT_TYPE} when the application has
 * an {@link AuditEventRepository}; {@code POST /actuator/aiguard/lanes/{priority}} with
 * {@code {"capacity": n}} resizes a lane while it runs (admitted streams keep their permits) and
 * records {@value #LANE_AUDIT_TYPE}. Like every Actuator endpoint it is reachable over HTTP only
 * once exposed ({@code management.endpoints.web.exposure.include=aiguard}); secure the write
 * operations as any other.
 */
@Endpoint(id = "aiguard")
public class AiGuardEndpoint {

	/** The audit event type of a breaker moved through the endpoint. */
	public static final String AUDIT_TYPE = "AIGUARD_BREAKER_CHANGED";

	/** The audit event type of a lane resized through the endpoint. */
	public static final String LANE_AUDIT_TYPE = "AIGUARD_LANE_RESIZED";

	private final AiGuardRegistry registry;
	private final RecentReports reports;
	@Nullable
	private final AuditEventRepository audit;

	/**
	 * @param registry what the endpoint shows and changes
	 * @param reports the recent reports it lists
	 * @param audit where breaker changes are recorded, or {@code null}
	 */
	public AiGuardEndpoint(AiGuardRegistry registry, RecentReports reports, @Nullable AuditEventRepository audit) {
		this.registry = registry;
		this.reports = reports;
		this.audit = audit;
	}

	/** @return policies, breakers, lanes, the load governor's state ({@link AiGuardLoadView}) and recent reports */
	@ReadOperation
	public Map<String, Object> guard() {
		Map<String, Object> body = new LinkedHashMap<>();
		Map<String, Object> policies = new LinkedHashMap<>();
		registry.guards().forEach((name, guard) -> policies.put(name, policy(guard.policy())));
		body.put("policies", policies);
		Map<String, Object> breakers = new LinkedHashMap<>();
		registry.breakers().forEach((name, breaker) -> breakers.put(name, breaker(breaker)));
		body.put("breakers", breakers);
		registry.breakerTree().ifPresent(tree -> body.put("breakerTree", node(tree.snapshot())));
		body.put("lanes", registry.lanes().map(AiGuardEndpoint::lanes).orElse(null));
		body.put("load", registry.load().map(AiGuardLoadView::of).orElse(null));
		body.put("reports", reports.newestFirst());
		return body;
	}

	/**
	 * A node of the breaker tree and its subtree: name, level, state, window rates, refusals, children.
	 *
	 * @param node the node as it was read
	 * @return the node as the read view shows it
	 */
	static Map<String, Object> node(BreakerNodeSnapshot node) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("name", node.name());
		m.put("breaker", node.breakerName());
		m.put("level", node.level().name());
		m.put("state", node.state().name());
		m.put("calls", node.calls());
		m.put("failureRate", node.failureRate());
		m.put("slowCallRate", node.slowCallRate());
		m.put("rejectedCalls", node.rejectedCalls());
		m.put("children", node.children().stream().map(AiGuardEndpoint::node).toList());
		return m;
	}

	/** @return one breaker, or {@code null} (404) when there is none of that name */
	@ReadOperation
	public @Nullable Map<String, Object> breaker(@Selector String name) {
		return registry.breaker(name).map(AiGuardEndpoint::breaker).orElse(null);
	}

	/**
	 * Moves a breaker by hand.
	 *
	 * @param name the breaker
	 * @param state {@code forced-open} (refuse every call), {@code disabled} (permit every call,
	 *        record nothing) or {@code closed} (back to normal with an empty window)
	 * @return the breaker after the change, or {@code null} (404) when there is none of that name
	 * @throws IllegalArgumentException (400) for another state
	 */
	@WriteOperation
	public @Nullable Map<String, Object> changeBreaker(SecurityContext securityContext, @Selector String name,
			String state) {
		CircuitBreaker breaker = registry.breaker(name).orElse(null);
		if (breaker == null) {
			return null;
		}
		String before = breaker.state().name();
		switch (state.trim().toLowerCase(Locale.ROOT)) {
			case "forced-open", "forced_open" -> breaker.transitionToForcedOpen();
			case "disabled" -> breaker.transitionToDisabled();
			case "closed" -> breaker.transitionToClosed();
			default -> throw new IllegalArgumentException(
					"state must be forced-open, disabled or closed, was '" + state + "'");
		}
		Map<String, Object> data = new LinkedHashMap<>();
		data.put("breaker", name);
		data.put("from", before);
		data.put("to", breaker.state().name());
		audit(securityContext, AUDIT_TYPE, data);
		return breaker(breaker);
	}

	/**
	 * Resizes one of the shared lanes while it runs: streams already admitted keep their permits,
	 * a smaller lane admits again once enough of them finished, a larger one admits its waiters at
	 * once. The change lasts until the next resize (a load governor attached to the lanes resizes
	 * them at its next change of level).
	 *
	 * @param section {@code lanes}
	 * @param priority the lane ({@code P0}, {@code P1}, {@code P2})
	 * @param capacity its new number of permits, 0 or more
	 * @return the lanes after the change, or {@code null} (404) when there are no lanes or the
	 *         section is not {@code lanes}
	 * @throws IllegalArgumentException (400) for an unknown priority or a negative capacity
	 */
	@WriteOperation
	public @Nullable Map<String, Object> resizeLane(SecurityContext securityContext, @Selector String section,
			@Selector String priority, int capacity) {
		PriorityLanes lanes = registry.lanes().orElse(null);
		if (lanes == null || !"lanes".equals(section)) {
			return null;
		}
		Priority lane;
		try {
			lane = Priority.valueOf(priority.trim().toUpperCase(Locale.ROOT));
		}
		catch (IllegalArgumentException unknown) {
			throw new IllegalArgumentException("priority must be P0, P1 or P2, was '" + priority + "'");
		}
		int before = lanes.concurrency(lane);
		lanes.resize(lane, capacity);
		Map<String, Object> data = new LinkedHashMap<>();
		data.put("lanes", lanes.name());
		data.put("priority", lane.name());
		data.put("from", before);
		data.put("to", capacity);
		audit(securityContext, LANE_AUDIT_TYPE, data);
		return lanes(lanes);
	}

	private void audit(SecurityContext securityContext, String type, Map<String, Object> data) {
		if (audit != null) {
			String principal = securityContext.getPrincipal() == null ? "anonymous"
					: securityContext.getPrincipal().getName();
			audit.add(new AuditEvent(principal, type, data));
		}
	}

	private static Map<String, Object> policy(GuardPolicy p) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("defaultPriority", p.defaultPriority().name());
		m.put("breaker", p.breaker() == null ? null : p.breaker().name());
		m.put("lanes", p.lanes() == null ? null : p.lanes().name());
		StallSpec s = p.stall();
		Map<String, Object> stall = new LinkedHashMap<>();
		stall.put("firstTokenTimeout", text(s.firstTokenTimeout()));
		stall.put("idleTimeout", text(s.idleTimeout()));
		stall.put("maxDuration", text(s.maxDuration()));
		stall.put("requireTerminal", s.requireTerminal());
		m.put("stall", stall);
		m.put("maxAttempts", p.retry().maxAttempts());
		m.put("truncation", p.truncation() != null);
		BudgetGate gate = p.budgetGate();
		if (gate != null) {
			m.put("budget", budget(gate.summary(TOP_TENANTS)));
		}
		return m;
	}

	/** The most drained tenants a policy's view lists: the count of tenants says how many there are. */
	static final int TOP_TENANTS = 10;

	/**
	 * @return the policy's tenants summarised: how many it holds, its cap, and the {@value #TOP_TENANTS}
	 *         with the least left, so the view stays small whatever the number of tenants
	 */
	static Map<String, Object> budget(TenantSummary summary) {
		Map<String, Object> b = new LinkedHashMap<>();
		b.put("tenants", summary.tenants());
		b.put("maxTenants", summary.maxTenants());
		b.put("mostDrained", summary.mostDrained().stream().map(t -> {
			Map<String, Object> one = new LinkedHashMap<>();
			one.put("id", t.id());
			Map<String, Object> limits = new LinkedHashMap<>();
			t.limits().forEach(l -> limits.put(l.limit(), Map.of("capacity", l.capacity(), "remaining", l.remaining())));
			one.put("limits", limits);
			return one;
		}).toList());
		return b;
	}

	private static Map<String, Object> breaker(CircuitBreaker breaker) {
		BreakerSnapshot window = breaker.snapshot();
		Map<String, Object> b = new LinkedHashMap<>();
		b.put("state", breaker.state().name());
		b.put("failureRate", window.failureRate());
		b.put("slowCallRate", window.slowCallRate());
		b.put("failureRateThreshold", breaker.config().failureRateThreshold());
		b.put("calls", window.calls());
		b.put("failures", window.failures());
		b.put("slowCalls", window.slowCalls());
		b.put("stalls", window.stalls());
		b.put("incomplete", window.incomplete());
		b.put("rejected", breaker.rejectedCalls());
		b.put("probeInMs", breaker.untilProbe().map(Duration::toMillis).orElse(null));
		b.put("lastOpenWaitMs", breaker.lastOpenWait().toMillis());
		return b;
	}

	private static Map<String, Object> lanes(PriorityLanes lanes) {
		Map<String, Object> all = new LinkedHashMap<>();
		all.put("name", lanes.name());
		all.putAll(laneView(lanes));
		return all;
	}

	/**
	 * @param lanes the lanes to show
	 * @return per priority name ({@code P0}…): capacity now, capacity as built, in flight,
	 *         borrowed, queued — as this endpoint shows them, for views of one's own
	 */
	public static Map<String, Object> laneView(PriorityLanes lanes) {
		Map<String, Object> all = new LinkedHashMap<>();
		for (Priority p : Priority.values()) {
			Map<String, Object> lane = new LinkedHashMap<>();
			lane.put("capacity", lanes.concurrency(p));
			lane.put("builtCapacity", lanes.spec(p).concurrency());
			lane.put("inFlight", lanes.inFlight(p));
			lane.put("borrowed", lanes.borrowedInFlight(p));
			lane.put("queued", lanes.queued(p));
			all.put(p.name(), lane);
		}
		return all;
	}

	private static @Nullable String text(@Nullable Duration d) {
		return d == null ? null : d.toString();
	}
}
