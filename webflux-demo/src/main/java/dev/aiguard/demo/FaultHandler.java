package dev.aiguard.demo;

import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.LoadPressure;
import dev.aiguard.test.mock.MockModelServer;
import dev.aiguard.test.mock.ProviderRateLimit;
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
 * {@code GET / PUT / PATCH / DELETE /api/faults}: the embedded mock's fault profile. {@code PUT}
 * replaces the whole profile (fields left out take their reset values); {@code PATCH} changes the
 * fields it names and keeps the others ({@code null} puts a field back to its reset value). Both
 * accept exactly the contract's fields and check every value before anything changes. Each change
 * is applied to the profile in force at that moment, never to a copy read earlier
 * ({@link MockModelServer#updateFaults}, atomic), so concurrent partial changes all land; the new
 * profile applies to requests that arrive afterwards.
 */
final class FaultHandler {

	/** The contract's fields, in the contract's order. */
	static final List<String> FIELDS = List.of("firstTokenDelayMs", "tokenIntervalMs", "stallAfterTokens",
			"dropAfterTokens", "errorRate", "errorStatus", "retryAfterSeconds", "contextLimitTokens", "omitTerminal",
			"loadPressureCapacity", "emptyAnswer", "finishReason", "loopingAnswer", "failingModels", "providerRateLimit");

	/**
	 * The provider rate limit the switch turns on: 2 requests and 20 000 tokens per 4 s window, so a
	 * few questions in a row meet it. The guard reads the mock's {@code x-ratelimit-*} headers and
	 * waits for the window's reset instead of meeting its 429.
	 */
	static final ProviderRateLimit PROVIDER_RATE_LIMIT = new ProviderRateLimit(2, 20_000, Duration.ofSeconds(4));

	/**
	 * How the mock suffers past {@code loadPressureCapacity} concurrent requests: each capacity's
	 * worth of excess adds three first-token delays and 20 % refusals (529, {@code Retry-After: 1}),
	 * at most 30 %, so the guard's retries and the breaker keep up and the load governor sees a slow,
	 * flaky model rather than a dead one.
	 */
	static LoadPressure pressure(int capacity) {
		return LoadPressure.of(capacity).slowdown(3).errors(0.2, 0.3, 529, 1);
	}

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
		return change(request, false);
	}

	Mono<ServerResponse> patch(ServerRequest request) {
		return change(request, true);
	}

	Mono<ServerResponse> reset(ServerRequest request) {
		MockModelServer m = mock;
		return m == null ? noMock() : ok(m.resetFaults());
	}

	private Mono<ServerResponse> change(ServerRequest request, boolean partial) {
		MockModelServer m = mock;
		if (m == null) {
			return noMock();
		}
		return RequestBodies.text(request, MAX_BODY_BYTES)
			.map(body -> apply(m, body, partial))
			.flatMap(this::ok)
			.onErrorResume(BadRequestException.class, ErrorResponses::of);
	}

	/**
	 * Applies one {@code PUT} ({@code partial = false}) or {@code PATCH} body to the mock.
	 *
	 * @return the profile this change produced
	 * @throws BadRequestException when the body is not a JSON object of the contract's fields with
	 *         valid values; the mock's profile is then unchanged
	 */
	FaultProfile apply(MockModelServer m, String body, boolean partial) {
		ObjectNode fields = fields(body);
		FaultProfile defaults = m.defaultFaults();
		// no field of a profile constrains another: a body valid over the defaults is valid over any profile
		FaultProfile replacement = merge(fields, defaults, defaults);
		// a pure function of the profile in force: the mock may apply it again when another change won the race
		return m.updateFaults(partial ? current -> merge(fields, current, defaults) : current -> replacement);
	}

	private ObjectNode fields(String body) {
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
		return (ObjectNode) root;
	}

	/**
	 * The contract's fields of {@code base} replaced by the body's; anything else the mock's profile
	 * holds is kept.
	 *
	 * @param base the value of each field the body leaves out
	 * @param defaults the value of each field the body sets to {@code null}
	 */
	private static FaultProfile merge(ObjectNode f, FaultProfile base, FaultProfile defaults) {
		try {
			int status = (int) wholeNumber(f, "errorStatus", base.errorStatus(), defaults.errorStatus());
			if (f.hasNonNull("errorStatus") && status != 500 && status != 429 && status != 529) {
				// the contract's statuses, whatever else the mock could send
				throw new IllegalArgumentException("errorStatus must be 500, 429 or 529, was " + status);
			}
			return base
				.withPace(wholeNumber(f, "firstTokenDelayMs", base.firstTokenDelayMs(), defaults.firstTokenDelayMs()),
						wholeNumber(f, "tokenIntervalMs", base.tokenIntervalMs(), defaults.tokenIntervalMs()))
				.withStallAfter(optionalWholeNumber(f, "stallAfterTokens", base.stallAfterTokens(),
						defaults.stallAfterTokens()))
				.withDropAfter(optionalWholeNumber(f, "dropAfterTokens", base.dropAfterTokens(),
						defaults.dropAfterTokens()))
				.withErrors(number(f, "errorRate", base.errorRate(), defaults.errorRate()), status,
						(int) wholeNumber(f, "retryAfterSeconds", base.retryAfterSeconds(), defaults.retryAfterSeconds()))
				.withContextLimit(optionalWholeNumber(f, "contextLimitTokens", base.contextLimitTokens(),
						defaults.contextLimitTokens()))
				.withOmitTerminal(bool(f, "omitTerminal", base.omitTerminal(), defaults.omitTerminal()))
				.withLoadPressure(loadPressure(f, base.loadPressure(), defaults.loadPressure()))
				.withEmptyAnswer(bool(f, "emptyAnswer", base.emptyAnswer(), defaults.emptyAnswer()))
				.withFinishReason(text(f, "finishReason", base.finishReason(), defaults.finishReason()))
				.withLoopingAnswer(bool(f, "loopingAnswer", base.loopingAnswer(), defaults.loopingAnswer()))
				.withFailingModels(names(f, "failingModels", base.failingModels(), defaults.failingModels()))
				.withProviderRateLimit(providerRateLimit(f, base.providerRateLimit(), defaults.providerRateLimit()));
		}
		catch (IllegalArgumentException e) {
			throw BadRequestException.of("invalid_fault", e.getMessage());
		}
	}

	/** @return the field's value, {@code absent} when the body leaves it out, {@code reset} when it is null */
	private static long wholeNumber(ObjectNode f, String name, long absent, long reset) {
		Integer value = optionalWholeNumber(f, name, null, null);
		return value != null ? value : f.has(name) ? reset : absent;
	}

	@Nullable
	private static Integer optionalWholeNumber(ObjectNode f, String name, @Nullable Integer absent,
			@Nullable Integer reset) {
		if (!f.has(name)) {
			return absent;
		}
		JsonNode n = f.get(name);
		if (n.isNull()) {
			return reset;
		}
		if (!n.isIntegralNumber() || !n.canConvertToInt()) {
			throw new IllegalArgumentException(name + " must be a whole number, was " + n);
		}
		return n.intValue();
	}

	@Nullable
	private static LoadPressure loadPressure(ObjectNode f, @Nullable LoadPressure absent, @Nullable LoadPressure reset) {
		if (!f.has("loadPressureCapacity")) {
			return absent;
		}
		Integer capacity = optionalWholeNumber(f, "loadPressureCapacity", null, null);
		if (capacity == null) {
			return reset;
		}
		if (capacity < 1 || capacity > 1000) {
			throw new IllegalArgumentException("loadPressureCapacity must be between 1 and 1000, was " + capacity);
		}
		return pressure(capacity);
	}

	/** @return {@link #PROVIDER_RATE_LIMIT} for {@code true}, none for {@code false}; {@code absent} / {@code reset} as usual */
	@Nullable
	private static ProviderRateLimit providerRateLimit(ObjectNode f, @Nullable ProviderRateLimit absent,
			@Nullable ProviderRateLimit reset) {
		if (!f.has("providerRateLimit")) {
			return absent;
		}
		if (f.get("providerRateLimit").isNull()) {
			return reset;
		}
		return bool(f, "providerRateLimit", false, false) ? PROVIDER_RATE_LIMIT : null;
	}

	private static double number(ObjectNode f, String name, double absent, double reset) {
		if (!f.has(name)) {
			return absent;
		}
		JsonNode n = f.get(name);
		if (n.isNull()) {
			return reset;
		}
		if (!n.isNumber()) {
			throw new IllegalArgumentException(name + " must be a number, was " + n);
		}
		return n.doubleValue();
	}

	private static boolean bool(ObjectNode f, String name, boolean absent, boolean reset) {
		if (!f.has(name)) {
			return absent;
		}
		JsonNode n = f.get(name);
		if (n.isNull()) {
			return reset;
		}
		if (!n.isBoolean()) {
			throw new IllegalArgumentException(name + " must be true or false, was " + n);
		}
		return n.booleanValue();
	}

	@Nullable
	private static String text(ObjectNode f, String name, @Nullable String absent, @Nullable String reset) {
		if (!f.has(name)) {
			return absent;
		}
		JsonNode n = f.get(name);
		if (n.isNull()) {
			return reset;
		}
		if (!n.isString()) {
			throw new IllegalArgumentException(name + " must be a string, was " + n);
		}
		return n.stringValue();
	}

	/** @return the field's list of names, {@code absent} when the body leaves it out, {@code reset} when it is null */
	private static Set<String> names(ObjectNode f, String name, Set<String> absent, Set<String> reset) {
		if (!f.has(name)) {
			return absent;
		}
		JsonNode n = f.get(name);
		if (n.isNull()) {
			return reset;
		}
		if (!n.isArray()) {
			throw new IllegalArgumentException(name + " must be an array of model names, was " + n);
		}
		Set<String> names = new LinkedHashSet<>();
		for (JsonNode element : n) {
			if (!element.isString()) {
				throw new IllegalArgumentException(name + " must hold model names (strings), was " + element);
			}
			names.add(element.stringValue());
		}
		return names;
	}

	ObjectNode toJson(FaultProfile p) {
		ObjectNode node = json.createObjectNode()
			.put("firstTokenDelayMs", p.firstTokenDelayMs())
			.put("tokenIntervalMs", p.tokenIntervalMs())
			.put("stallAfterTokens", p.stallAfterTokens())
			.put("dropAfterTokens", p.dropAfterTokens())
			.put("errorRate", p.errorRate())
			.put("errorStatus", p.errorStatus())
			.put("retryAfterSeconds", p.retryAfterSeconds())
			.put("contextLimitTokens", p.contextLimitTokens())
			.put("omitTerminal", p.omitTerminal())
			.put("loadPressureCapacity", p.loadPressure() == null ? null : p.loadPressure().capacity())
			.put("emptyAnswer", p.emptyAnswer())
			.put("finishReason", p.finishReason())
			.put("loopingAnswer", p.loopingAnswer())
			.set("failingModels", p.failingModels().stream()
				.collect(json::createArrayNode, (array, model) -> array.add(model), (a, b) -> a.addAll(b)));
		return node.put("providerRateLimit", p.providerRateLimit() != null);
	}

	private Mono<ServerResponse> ok(FaultProfile profile) {
		return ServerResponse.ok().contentType(MediaType.APPLICATION_JSON).bodyValue(json.writeValueAsString(toJson(profile)));
	}

	private static Mono<ServerResponse> noMock() {
		return ErrorResponses.of(409, "no_mock", "fault injection needs the embedded mock model; "
				+ "this instance talks to the server named by AIGUARD_BASE_URL");
	}
}
