package dev.aiguard.demo;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Tenant;
import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/**
 * The demo's JSON error body: {@code {"error": code, "message": sentence}}, a shed request's 503 and
 * a budget's 429. Every message passes through a {@link ClientText}: no credential and no address
 * of the machines behind the demo reaches a client.
 */
final class ErrorResponses {

	private ErrorResponses() {
	}

	static Mono<ServerResponse> of(BadRequestException e) {
		return of(e.status(), e.code(), e.getMessage());
	}

	/**
	 * A request the load governor shed before it started: 503 with {@code Retry-After} (whole
	 * seconds, rounded up, at least 1) and {@code retryAfterMs}, so a client backs off as asked.
	 */
	static Mono<ServerResponse> shed(AdmissionRejectedException e, ClientText text) {
		long retryMs = e.retryAfter().map(Duration::toMillis).orElse(1000L);
		Map<String, Object> body = new LinkedHashMap<>();
		body.put("error", "shed");
		body.put("message", text.of(e.getMessage()));
		body.put("retryAfterMs", retryMs);
		return ServerResponse.status(503)
			.header("Retry-After", retryAfterSeconds(retryMs))
			.contentType(MediaType.APPLICATION_JSON)
			.bodyValue(body);
	}

	/**
	 * A request a budget refused before its answer started: 429 with {@code Retry-After} (whole
	 * seconds, rounded up, at least 1) and {@code retryAfterMs} when the budget says when it has room,
	 * without them when it cannot (the request alone is larger than the whole budget).
	 */
	static Mono<ServerResponse> budget(AdmissionRejectedException e, Tenant tenant, ClientText text) {
		Map<String, Object> body = new LinkedHashMap<>();
		body.put("error", "budget");
		body.put("tenant", tenant.id());
		body.put("message", text.of(e.getMessage()));
		ServerResponse.BodyBuilder response = ServerResponse.status(429).contentType(MediaType.APPLICATION_JSON);
		e.retryAfter().map(Duration::toMillis).ifPresent(ms -> {
			body.put("retryAfterMs", ms);
			response.header("Retry-After", retryAfterSeconds(ms));
		});
		return response.bodyValue(body);
	}

	static Mono<ServerResponse> of(int status, String code, String message) {
		Map<String, String> body = new LinkedHashMap<>();
		body.put("error", code);
		// the demo's own sentences, which may quote what the client sent: the patterns only
		body.put("message", ClientText.PATTERNS.of(message));
		return ServerResponse.status(status).contentType(MediaType.APPLICATION_JSON).bodyValue(body);
	}

	/** @return a {@code Retry-After} value: whole seconds, rounded up, at least 1 */
	private static String retryAfterSeconds(long millis) {
		return Long.toString(Math.max(1, (millis + 999) / 1000));
	}
}
