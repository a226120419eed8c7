package dev.aiguard.boot.starter;

import java.time.Duration;
import java.util.Map;

import org.jspecify.annotations.Nullable;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.web.reactive.function.client.WebClient;

/** HTTP calls of the starter's tests, as one of {@link ChatApplication}'s users or anonymously. */
final class Http {

	private static final Duration WAIT = Duration.ofSeconds(20);

	private Http() {
	}

	/**
	 * @param port the application's port
	 * @param user a user of {@link ChatApplication}, or {@code null} for an anonymous caller
	 * @return a client that sends the user's credentials on every call
	 */
	static WebClient as(int port, @Nullable String user) {
		WebClient.Builder builder = WebClient.builder().baseUrl("http://127.0.0.1:" + port);
		if (user != null) {
			builder.defaultHeaders(h -> h.setBasicAuth(user, user + "-pw"));
		}
		return builder.build();
	}

	/** @return the JSON object the call answers (an error status fails the call) */
	static Map<String, Object> json(WebClient.RequestHeadersSpec<?> call) {
		return call.retrieve().bodyToMono(new ParameterizedTypeReference<Map<String, Object>>() {
		}).block(WAIT);
	}
}
