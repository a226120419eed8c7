package dev.aiguard.demo;

import java.lang.reflect.RecordComponent;
import java.time.Clock;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.boot.autoconfigure.AiGuardEndpoint;
import dev.aiguard.boot.autoconfigure.AiGuardLoadView;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerNodeSnapshot;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.breaker.BreakerSnapshot;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.test.mock.MockModelServer;
import org.jspecify.annotations.Nullable;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * {@code GET /api/guard}: a JSON snapshot for the live panel — the chat policy's endpoint breaker
 * (state, rates and waits: when an OPEN breaker lets the next request probe), the breaker tree it
 * sits in (each level's state and counts), per-lane occupancy, the load governor's level,
 * score and forecast, the budgets (per tenant and provider key: what is left, the store's mode,
 * throttled waits, refusals, the mock's 429s), answer counters, the last
 * requests, and where the mock listens and what it has seen.
 */
final class GuardStatusHandler {

	private static final RecordComponent[] STATS = MockModelServer.Stats.class.getRecordComponents();

	private final CircuitBreaker breaker;
	private final Clock wallClock;
	private final PriorityLanes lanes;
	private final GuardStats stats;
	private final ModelUpstream upstream;
	private final AnswerClient defaultClient;
	@Nullable
	private final LoadGovernor governor;
	@Nullable
	private final Double capacity;
	@Nullable
	private final BreakerTree tree;
	private final BudgetStatus budgets;

	/**
	 * @param wallClock for the epoch time of {@code openUntil}
	 * @param governor the policy's load governor, or {@code null}
	 * @param capacity its capacity in requests per second ({@code aiguard.load.capacity}), or {@code null}
	 * @param tree the breaker tree ({@code aiguard.breaker-tree}), or {@code null}
	 * @param budgets the chat policy's budgets, for the {@code budgets} section
	 */
	GuardStatusHandler(CircuitBreaker breaker, Clock wallClock, PriorityLanes lanes, GuardStats stats,
			ModelUpstream upstream, AnswerClient defaultClient, @Nullable LoadGovernor governor,
			@Nullable Double capacity, @Nullable BreakerTree tree, BudgetStatus budgets) {
		this.tree = tree;
		this.budgets = budgets;
		this.breaker = breaker;
		this.wallClock = wallClock;
		this.lanes = lanes;
		this.stats = stats;
		this.upstream = upstream;
		this.defaultClient = defaultClient;
		this.governor = governor;
		this.capacity = capacity;
	}

	Mono<ServerResponse> status(ServerRequest request) {
		return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(snapshot());
	}

	Map<String, Object> snapshot() {
		Map<String, Object> body = new LinkedHashMap<>();
		body.put("upstream", upstream.describe());
		Map<String, Object> clients = new LinkedHashMap<>();
		clients.put("default", defaultClient.id());
		clients.put("available", Arrays.stream(AnswerClient.values()).map(AnswerClient::id).toList());
		body.put("client", clients);
		body.put("breaker", breaker());
		body.put("breakerTree", tree == null ? null : node(tree.snapshot()));
		body.put("lanes", lanes());
		body.put("load", load());
		body.put("budgets", budgets.snapshot());
		Map<String, Object> counters = new LinkedHashMap<>();
		counters.put("requests", stats.requests());
		counters.put("attempts", stats.attempts());
		counters.put("tokens", stats.tokens());
		counters.put("outcomes", stats.outcomes());
		counters.put("attemptOutcomes", stats.attemptOutcomes());
		counters.put("sources", stats.sources());
		counters.put("clients", stats.clients());
		body.put("counters", counters);
		body.put("recent", stats.recent());
		body.put("mock", mock(upstream.mock()));
		return body;
	}

	private Map<String, Object> breaker() {
		BreakerSnapshot window = breaker.snapshot();
		Map<String, Object> b = new LinkedHashMap<>();
		b.put("name", breaker.name());
		b.put("state", breaker.state().name());
		b.put("failureRate", window.failureRate());
		b.put("failureRateThreshold", breaker.config().failureRateThreshold());
		b.put("minimumCalls", breaker.config().minimumCalls());
		b.put("slowCallRate", window.slowCallRate());
		b.put("calls", window.calls());
		b.put("failures", window.failures());
		b.put("stalls", window.stalls());
		b.put("incomplete", window.incomplete());
		b.put("rejected", breaker.rejectedCalls());
		BreakerWaits.View wait = BreakerWaits.of(breaker, wallClock);
		b.put("openUntil", wait.openUntil());
		b.put("retryInMs", wait.retryInMs());
		b.put("openWaitMs", wait.openWaitMs());
		b.put("nextOpenWaitMs", wait.nextOpenWaitMs());
		BreakerConfig config = breaker.config();
		Map<String, Object> backoff = new LinkedHashMap<>();
		backoff.put("initialMs", config.openWait().toMillis());
		backoff.put("multiplier", config.openWaitMultiplier());
		backoff.put("maxMs", config.maxOpenWait().toMillis());
		backoff.put("jitter", config.openWaitJitter());
		b.put("openWaitBackoff", backoff);
		return b;
	}

	/**
	 * A node of the breaker tree and its subtree, what the page's nested list shows: state, calls
	 * and failure rate in its window, and the calls it refused.
	 */
	private static Map<String, Object> node(BreakerNodeSnapshot node) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("name", node.name());
		m.put("breaker", node.breakerName());
		m.put("level", node.level().name());
		m.put("state", node.state().name());
		m.put("calls", node.calls());
		m.put("failureRate", node.failureRate());
		m.put("rejectedCalls", node.rejectedCalls());
		m.put("children", node.children().stream().map(GuardStatusHandler::node).toList());
		return m;
	}

	private Map<String, Object> lanes() {
		return AiGuardEndpoint.laneView(lanes);
	}

	/** The governor's state as the Actuator endpoint shows it, and its capacity; {@code null} without a governor. */
	@Nullable
	private Map<String, Object> load() {
		LoadGovernor g = governor;
		if (g == null) {
			return null;
		}
		Map<String, Object> load = AiGuardLoadView.of(g);
		load.put("capacity", capacity);
		return load;
	}

	/** The mock's address (what a real client would be pointed at) and its counters; {@code null} without a mock. */
	@Nullable
	private static Map<String, Object> mock(@Nullable MockModelServer mock) {
		if (mock == null || !mock.isRunning()) {
			return null;
		}
		String baseUrl;
		try {
			baseUrl = mock.baseUrl();
		}
		catch (IllegalStateException stoppedMeanwhile) {
			return null;
		}
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("baseUrl", baseUrl);
		// every counter the mock keeps, under its own name, as when the record itself was the body
		MockModelServer.Stats stats = mock.stats();
		for (RecordComponent counter : STATS) {
			try {
				m.put(counter.getName(), counter.getAccessor().invoke(stats));
			}
			catch (ReflectiveOperationException e) {
				throw new IllegalStateException("cannot read the mock's counter " + counter.getName(), e);
			}
		}
		return m;
	}
}
