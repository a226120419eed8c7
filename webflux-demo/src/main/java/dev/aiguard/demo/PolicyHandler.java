package dev.aiguard.demo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

import dev.aiguard.GuardControl;
import dev.aiguard.GuardPolicy;
import dev.aiguard.PolicyChange;
import dev.aiguard.PolicyChangeRefusedException;
import dev.aiguard.PriorityOverrides;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Priority;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import org.jspecify.annotations.Nullable;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code GET / PUT /api/policy}: a few settings of the library client's live policy, and its audit
 * trail. {@code PUT} changes the settings its body names and keeps the others; a priority named
 * with an object gets exactly those overrides ({@code null} clears them). The actor is the body's
 * {@code actor}, else the {@code X-Actor} header. The whole new policy is checked before anything
 * changes: a bad value is a 400 naming the field, and the policy in force stays.
 *
 * <pre>
 * PUT /api/policy
 * {"actor": "alice", "firstTokenTimeoutMs": 3000, "idleTimeoutMs": 2000, "maxAttempts": 2,
 *  "priorities": {"P0": {"firstTokenTimeoutMs": 1500, "maxAttempts": 3}, "P2": {"maxAttempts": 1, "laneConcurrency": 1}}}
 * </pre>
 */
final class PolicyHandler {

	static final List<String> FIELDS = List.of("actor", "firstTokenTimeoutMs", "idleTimeoutMs", "maxAttempts",
			"priorities");
	static final List<String> PRIORITY_FIELDS = List.of("firstTokenTimeoutMs", "idleTimeoutMs", "maxAttempts",
			"countedByBreaker", "laneConcurrency");
	/** How many of the latest changes {@code GET} returns. */
	static final int TRAIL = 20;

	private static final int MAX_BODY_BYTES = 16 * 1024;

	private final GuardControl<ChatChunk> control;
	private final JsonMapper json;

	PolicyHandler(GuardControl<ChatChunk> control, JsonMapper json) {
		this.control = control;
		this.json = json;
	}

	Mono<ServerResponse> get(ServerRequest request) {
		return ok(view());
	}

	Mono<ServerResponse> put(ServerRequest request) {
		String header = request.headers().firstHeader("X-Actor");
		return RequestBodies.text(request, MAX_BODY_BYTES)
			.map(body -> apply(body, header))
			.flatMap(change -> ok(view()))
			.onErrorResume(BadRequestException.class, ErrorResponses::of);
	}

	/**
	 * @return the change now in force
	 * @throws BadRequestException naming the field when the body is malformed or the new policy invalid;
	 *         the policy in force is then unchanged
	 */
	PolicyChange apply(String body, @Nullable String actorHeader) {
		ObjectNode f = object(body, "the request body", FIELDS);
		String actor = f.hasNonNull("actor") ? text(f, "actor") : actorHeader;
		if (actor == null || actor.isBlank()) {
			throw BadRequestException.of("invalid_policy", "actor must be given (the body's actor or the X-Actor header)");
		}
		UnaryOperator<GuardPolicy.Builder> change = changeOf(f);
		try {
			return control.update(actor, change);
		}
		catch (PolicyChangeRefusedException refused) {
			throw BadRequestException.of("invalid_policy", refused.getMessage());
		}
		catch (IllegalArgumentException badActor) {
			throw BadRequestException.of("invalid_policy", badActor.getMessage());
		}
	}

	/** The body as a change of the builder: parsed once, so it is a pure function of the policy it is given. */
	private UnaryOperator<GuardPolicy.Builder> changeOf(ObjectNode f) {
		Duration firstToken = millis(f, "firstTokenTimeoutMs");
		Duration idle = millis(f, "idleTimeoutMs");
		Integer attempts = whole(f, "maxAttempts");
		Map<Priority, UnaryOperator<PriorityOverrides>> priorities = new LinkedHashMap<>();
		if (f.has("priorities")) {
			JsonNode node = f.get("priorities");
			if (!node.isObject()) {
				throw BadRequestException.of("invalid_policy", "priorities must be an object of P0, P1, P2, was " + node);
			}
			for (String name : node.propertyNames()) {
				Priority p;
				try {
					p = Priority.parse(name);
				}
				catch (IllegalArgumentException e) {
					throw BadRequestException.of("invalid_policy", "priorities." + name + ": " + e.getMessage());
				}
				priorities.put(p, overridesOf("priorities." + p.name(), node.get(name)));
			}
		}
		return b -> {
			if (firstToken != null) {
				b.adjustStall(s -> s.firstTokenTimeout(firstToken));
			}
			if (idle != null) {
				b.adjustStall(s -> s.idleTimeout(idle));
			}
			if (attempts != null) {
				b.adjustRetry(r -> r.maxAttempts(attempts));
			}
			priorities.forEach(b::forPriority);
			return b;
		};
	}

	private UnaryOperator<PriorityOverrides> overridesOf(String at, JsonNode node) {
		if (node.isNull()) {
			return p -> PriorityOverrides.none();
		}
		ObjectNode f = object(node, at, PRIORITY_FIELDS);
		Duration firstToken = millis(f, "firstTokenTimeoutMs");
		Duration idle = millis(f, "idleTimeoutMs");
		Integer attempts = whole(f, "maxAttempts");
		Boolean counted = f.has("countedByBreaker") ? bool(f, "countedByBreaker") : null;
		Integer lane = whole(f, "laneConcurrency");
		return ignored -> {
			PriorityOverrides o = PriorityOverrides.none();
			if (firstToken != null) {
				o = o.firstTokenTimeout(firstToken);
			}
			if (idle != null) {
				o = o.idleTimeout(idle);
			}
			if (attempts != null) {
				// a priority's retry rules start from the policy's defaults; only the count is the page's
				o = o.retry(RetryRules.defaults().maxAttempts(attempts));
			}
			if (counted != null) {
				o = o.countedByBreaker(counted);
			}
			if (lane != null) {
				o = o.laneConcurrency(lane);
			}
			return o;
		};
	}

	private ObjectNode object(String body, String what, List<String> fields) {
		JsonNode root;
		try {
			root = json.readTree(body.isBlank() ? "{}" : body);
		}
		catch (JacksonException e) {
			throw BadRequestException.of("malformed_json", "the request body is not valid JSON: " + e.getOriginalMessage());
		}
		return object(root, what, fields);
	}

	private static ObjectNode object(@Nullable JsonNode node, String what, List<String> fields) {
		if (node == null || !node.isObject()) {
			throw BadRequestException.of("malformed_json", what + " must be a JSON object");
		}
		for (String name : node.propertyNames()) {
			if (!fields.contains(name)) {
				throw BadRequestException.of("unknown_field",
						"unknown field '" + name + "' in " + what + "; expected " + String.join(", ", fields));
			}
		}
		return (ObjectNode) node;
	}

	@Nullable
	private static Duration millis(ObjectNode f, String name) {
		Integer ms = whole(f, name);
		return ms == null ? null : Duration.ofMillis(ms);
	}

	@Nullable
	private static Integer whole(ObjectNode f, String name) {
		if (!f.hasNonNull(name)) {
			return null;
		}
		JsonNode n = f.get(name);
		if (!n.isIntegralNumber() || !n.canConvertToInt()) {
			throw BadRequestException.of("invalid_policy", name + " must be a whole number, was " + n);
		}
		return n.intValue();
	}

	private static boolean bool(ObjectNode f, String name) {
		JsonNode n = f.get(name);
		if (!n.isBoolean()) {
			throw BadRequestException.of("invalid_policy", name + " must be true or false, was " + n);
		}
		return n.booleanValue();
	}

	private static String text(ObjectNode f, String name) {
		JsonNode n = f.get(name);
		if (!n.isString()) {
			throw BadRequestException.of("invalid_policy", name + " must be a string, was " + n);
		}
		return n.asString();
	}

	/** The settings the page shows, the policy's whole description, and the latest changes, newest first. */
	Map<String, Object> view() {
		GuardPolicy policy = control.policy();
		Map<String, Object> body = new LinkedHashMap<>();
		body.put("policy", policy.name());
		body.put("version", control.version());
		body.put("firstTokenTimeoutMs", millisOf(policy.stall().firstTokenTimeout()));
		body.put("idleTimeoutMs", millisOf(policy.stall().idleTimeout()));
		body.put("maxAttempts", policy.retry().maxAttempts());
		Map<String, Object> priorities = new LinkedHashMap<>();
		for (Priority p : Priority.values()) {
			StallSpec stall = policy.stall(p);
			Map<String, Object> in = new LinkedHashMap<>();
			in.put("firstTokenTimeoutMs", millisOf(stall.firstTokenTimeout()));
			in.put("idleTimeoutMs", millisOf(stall.idleTimeout()));
			in.put("maxAttempts", policy.retry(p).maxAttempts());
			in.put("countedByBreaker", policy.countedByBreaker(p));
			int lane = policy.overrides(p).laneConcurrency();
			in.put("laneConcurrency", lane < 0 ? null : lane);
			in.put("overridden", !policy.overrides(p).isEmpty());
			priorities.put(p.name(), in);
		}
		body.put("priorities", priorities);
		body.put("settings", policy.describe());
		List<PolicyChange> history = control.history();
		List<Map<String, Object>> trail = new ArrayList<>();
		for (int i = history.size() - 1; i >= 0 && trail.size() < TRAIL; i--) {
			PolicyChange c = history.get(i);
			Map<String, Object> entry = new LinkedHashMap<>();
			entry.put("version", c.version());
			entry.put("actor", c.actor());
			entry.put("at", c.at().toString());
			entry.put("changes", c.settings().stream().map(s -> Map.of("setting", s.name(), "before", s.before(),
					"after", s.after())).toList());
			trail.add(entry);
		}
		body.put("audit", trail);
		return body;
	}

	@Nullable
	private static Long millisOf(@Nullable Duration d) {
		return d == null ? null : d.toMillis();
	}

	private Mono<ServerResponse> ok(Map<String, Object> body) {
		return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(json.writeValueAsString(body));
	}
}
