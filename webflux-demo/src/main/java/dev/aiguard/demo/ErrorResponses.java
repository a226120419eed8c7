package dev.aiguard.demo;

import java.util.LinkedHashMap;
import java.util.Map;

import org.springframework.http.MediaType;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Mono;

/** The demo's JSON error body: {@code {"error": code, "message": sentence}}. */
final class ErrorResponses {

	private ErrorResponses() {
	}

	static Mono<ServerResponse> of(BadRequestException e) {
		return of(e.status(), e.code(), e.getMessage());
	}

	static Mono<ServerResponse> of(int status, String code, String message) {
		Map<String, String> body = new LinkedHashMap<>();
		body.put("error", code);
		body.put("message", message);
		return ServerResponse.status(status).contentType(MediaType.APPLICATION_JSON).bodyValue(body);
	}
}
