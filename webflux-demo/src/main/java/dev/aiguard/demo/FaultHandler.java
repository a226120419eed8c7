package dev.aiguard.demo;

import java.util.List;

import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.ServerRequest;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;
import reactor.util.annotation.Nullable;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * {@code GET / PUT / DELETE /api/faults}: the embedded mock's fault profile. {@code PUT} replaces
 * the whole profile (fields left out take their reset values) and accepts exactly the contract's
 * fields; the new profile applies to requests that arrive afterwards.
 */
final class FaultHandler {

	/** The contract's fields, in the contract's order. */
	static final List<String> FIELDS = List.of("firstTokenDelayMs", "tokenIntervalMs", "stallAfterTokens",
			"dropAfterTokens", "errorRate", "errorStatus", "retryAfterSeconds", "contextLimitTokens", "omitTerminal");

	private static final int MAX_BODY_BYTES = 16 * 1024;

	@Nullable
	private final MockModelServer mock;
	private final JsonMapper json;

	FaultHandler(@Nullable MockModelServer mock, JsonMapper json) {
		this.mock = mock;
		this.json = json;
	}

	Mono<ServerResponse> get(ServerRequest request) {
		MockModelServer m = mock;
		return m == null ? noMock() : ok(m.faults());
	}

	Mono<ServerResponse> put(ServerRequest request) {
		MockModelServer m = mock;
		if (m == null) {
			return noMock();
		}
		return RequestBodies.text(request, MAX_BODY_BYTES)
			.map(body -> parse(body, m.defaultFaults()))
			.flatMap(profile -> {
				m.faults(profile);
				return ok(profile);
			})
			.onErrorResume(BadRequestException.class, ErrorResponses::of);
	}

	Mono<ServerResponse> reset(ServerRequest request) {
		MockModelServer m = mock;
		return m == null ? noMock() : ok(m.resetFaults());
	}

	FaultProfile parse(String body, FaultProfile base) {
		JsonNode root;
		try {
			root = json.readTree(body.isBlank() ? "{}" : body);
		}
		catch (JacksonException e) {
			throw BadRequestException.of("malformed_json", "the request body is not valid JSON: " + e.getOriginalMessage());
		}
		if (root == null || !root.isObject()) {
			throw BadRequestException.of("malformed_json", "the request body must be a JSON object");
		}
		for (String name : root.propertyNames()) {
			if (!FIELDS.contains(name)) {
				throw BadRequestException.of("unknown_field",
						"unknown fault field '" + name + "'; expected " + String.join(", ", FIELDS));
			}
		}
		try {
			return new FaultProfile(
					longField(root, "firstTokenDelayMs", base.firstTokenDelayMs()),
					longField(root, "tokenIntervalMs", base.tokenIntervalMs()),
					optionalInt(root, "stallAfterTokens"),
					optionalInt(root, "dropAfterTokens"),
					number(root, "errorRate", 0),
					(int) longField(root, "errorStatus", base.errorStatus()),
					(int) longField(root, "retryAfterSeconds", 0),
					optionalInt(root, "contextLimitTokens"),
					bool(root, "omitTerminal"));
		}
		catch (IllegalArgumentException e) {
			throw BadRequestException.of("invalid_fault", e.getMessage());
		}
	}

	private static long longField(JsonNode root, String name, long absent) {
		JsonNode n = root.get(name);
		if (n == null || n.isNull()) {
			return absent;
		}
		if (!n.isIntegralNumber() || !n.canConvertToInt()) {
			throw new IllegalArgumentException(name + " must be a whole number, was " + n);
		}
		return n.intValue();
	}

	@Nullable
	private static Integer optionalInt(JsonNode root, String name) {
		JsonNode n = root.get(name);
		return n == null || n.isNull() ? null : (int) longField(root, name, 0);
	}

	private static double number(JsonNode root, String name, double absent) {
		JsonNode n = root.get(name);
		if (n == null || n.isNull()) {
			return absent;
		}
		if (!n.isNumber()) {
			throw new IllegalArgumentException(name + " must be a number, was " + n);
		}
		return n.doubleValue();
	}

	private static boolean bool(JsonNode root, String name) {
		JsonNode n = root.get(name);
		if (n == null || n.isNull()) {
			return false;
		}
		if (!n.isBoolean()) {
			throw new IllegalArgumentException(name + " must be true or false, was " + n);
		}
		return n.booleanValue();
	}

	ObjectNode toJson(FaultProfile p) {
		return json.createObjectNode()
			.put("firstTokenDelayMs", p.firstTokenDelayMs())
			.put("tokenIntervalMs", p.tokenIntervalMs())
			.put("stallAfterTokens", p.stallAfterTokens())
			.put("dropAfterTokens", p.dropAfterTokens())
			.put("errorRate", p.errorRate())
			.put("errorStatus", p.errorStatus())
			.put("retryAfterSeconds", p.retryAfterSeconds())
			.put("contextLimitTokens", p.contextLimitTokens())
			.put("omitTerminal", p.omitTerminal());
	}

	private Mono<ServerResponse> ok(FaultProfile profile) {
		return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(json.writeValueAsString(toJson(profile)));
	}

	private static Mono<ServerResponse> noMock() {
		return ErrorResponses.of(409, "no_mock", "fault injection needs the embedded mock model; "
				+ "this instance talks to the server named by AIGUARD_BASE_URL");
	}
}
