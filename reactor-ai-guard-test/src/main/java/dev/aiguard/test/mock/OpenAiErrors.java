package dev.aiguard.test.mock;

import java.time.Duration;

import dev.aiguard.provider.RateLimits;
import io.netty.handler.codec.http.HttpHeaderNames;
import org.jspecify.annotations.Nullable;
import reactor.netty.http.server.HttpServerResponse;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/** OpenAI's error objects and rate-limit headers, as the mock writes them. */
final class OpenAiErrors {

	/**
	 * The mock's one mapper, warmed when the class loads: Jackson builds its tree (de)serializers on
	 * first use under a lock, which requests arriving at once on event loops would otherwise wait on.
	 */
	static final JsonMapper JSON = warm(new JsonMapper());

	private OpenAiErrors() {
	}

	private static JsonMapper warm(JsonMapper mapper) {
		try {
			mapper.writeValueAsString(mapper.readTree("{\"s\":\"x\",\"n\":1,\"d\":1.5,\"b\":true,\"z\":null,\"a\":[{}]}"));
		}
		catch (JacksonException impossible) {
			throw new IllegalStateException("Jackson could not read its own warm-up document", impossible);
		}
		return mapper;
	}

	/** @return {@code {"error":{"message","type","param","code"}}} */
	static ObjectNode error(String type, @Nullable String code, @Nullable String param, String message) {
		ObjectNode root = JSON.createObjectNode();
		ObjectNode error = root.putObject("error").put("message", message).put("type", type);
		error.put("param", param);
		error.put("code", code);
		return root;
	}

	/** @return the body OpenAI sends with {@code status} (a generic one for statuses it does not document) */
	static ObjectNode forStatus(int status) {
		return switch (status) {
			case 400 -> error("invalid_request_error", null, null, "Bad request.");
			case 401 -> error("invalid_request_error", "invalid_api_key", null, "Incorrect API key provided.");
			case 403 -> error("invalid_request_error", null, null, "You are not allowed to use this model.");
			case 404 -> error("invalid_request_error", "model_not_found", "model",
					"The model does not exist or you do not have access to it.");
			case 408 -> error("invalid_request_error", null, null, "Request timed out.");
			case 409 -> error("invalid_request_error", null, null, "Conflict: the request could not be completed.");
			case 429 -> error("requests", "rate_limit_exceeded", null, "Rate limit reached for requests");
			case 500 -> error("server_error", null, null, "The server had an error while processing your request.");
			case 502 -> error("server_error", null, null, "Bad gateway.");
			case 503 -> error("server_error", null, null, "The server is overloaded or not ready yet.");
			case 504 -> error("server_error", null, null, "Gateway timeout.");
			case 529 -> error("overloaded_error", null, null, "Overloaded");
			default -> status < 500
					? error("invalid_request_error", null, null, "The request was refused (" + status + ").")
					: error("server_error", null, null, "The server failed (" + status + ").");
		};
	}

	/** @return the error event of an in-band failure of {@code type} */
	static ObjectNode inBand(String type, @Nullable String echoedKey) {
		String message = switch (type) {
			case "invalid_api_key" -> "Incorrect API key provided: " + echoedKey + ". You can find your API key in your account settings.";
			case "server_error" -> "The server had an error while processing your request.";
			case "overloaded_error" -> "Overloaded";
			case "rate_limit_error" -> "Rate limit reached while streaming.";
			default -> "The stream failed: " + type + ".";
		};
		return error(type, null, null, message);
	}

	static String write(JsonNode node) {
		try {
			return JSON.writeValueAsString(node);
		}
		catch (JacksonException e) {
			throw new IllegalStateException("a tree built in memory could not be written", e);
		}
	}

	/** Adds the {@code x-ratelimit-*} headers of {@code limits}, leaving out unknown values. */
	static HttpServerResponse rateLimitHeaders(HttpServerResponse response, @Nullable RateLimits limits) {
		if (limits == null) {
			return response;
		}
		count(response, "x-ratelimit-limit-requests", limits.limitRequests());
		count(response, "x-ratelimit-remaining-requests", limits.remainingRequests());
		reset(response, "x-ratelimit-reset-requests", limits.resetRequests());
		count(response, "x-ratelimit-limit-tokens", limits.limitTokens());
		count(response, "x-ratelimit-remaining-tokens", limits.remainingTokens());
		reset(response, "x-ratelimit-reset-tokens", limits.resetTokens());
		return response;
	}

	private static void count(HttpServerResponse response, String name, long value) {
		if (value >= 0) {
			response.header(name, Long.toString(value));
		}
	}

	private static void reset(HttpServerResponse response, String name, @Nullable Duration value) {
		if (value != null && !value.isNegative()) {
			response.header(name, goDuration(value));
		}
	}

	/** @return the duration the way Go prints it, as OpenAI's headers carry it: {@code 20ms}, {@code 1.5s}, {@code 6m0s}, {@code 1h0m0s} */
	static String goDuration(Duration d) {
		long ms = d.toMillis();
		if (ms == 0) {
			return "0s";
		}
		if (ms < 1_000) {
			return ms + "ms";
		}
		long hours = ms / 3_600_000;
		long minutes = ms / 60_000 % 60;
		long secondsMs = ms % 60_000;
		StringBuilder b = new StringBuilder();
		if (hours > 0) {
			b.append(hours).append('h');
		}
		if (hours > 0 || minutes > 0) {
			b.append(minutes).append('m');
		}
		b.append(secondsMs / 1_000);
		long fraction = secondsMs % 1_000;
		if (fraction != 0) {
			String digits = String.format(java.util.Locale.ROOT, "%03d", fraction);
			b.append('.').append(digits.replaceAll("0+$", ""));
		}
		return b.append('s').toString();
	}

	/** Sets the content type for a JSON answer. */
	static HttpServerResponse json(HttpServerResponse response, int status) {
		return response.status(status).header(HttpHeaderNames.CONTENT_TYPE, "application/json");
	}
}
