package dev.aiguard.test.mock;

import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

import dev.aiguard.chat.ChatMessage;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

/**
 * One HTTP request as the mock model server received it, whatever its route: what a test asserts
 * on when the question is what the client sent.
 *
 * <pre>{@code
 * CapturedRequest last = mock.lastRequest();
 * assertThat(last.header("authorization")).isEqualTo("Bearer sk-test");
 * assertThat(last.json().path("stream_options").path("include_usage").asBoolean()).isTrue();
 * assertThat(last.messages()).hasSize(2);
 * }</pre>
 *
 * @param method the HTTP method, e.g. {@code POST}
 * @param uri the request target as sent, path and query, e.g. {@code /v1/chat/completions}
 * @param headers every header, names in lower case, values in the order received
 * @param body the body as UTF-8 text ({@code ""} when none; at most the first 4 MiB)
 * @param json the body parsed as JSON, or {@code null} when it is empty or not JSON; do not modify it
 * @param receivedAt when the request's headers arrived
 */
public record CapturedRequest(String method, String uri, Map<String, List<String>> headers, String body,
		@Nullable JsonNode json, Instant receivedAt) {

	public CapturedRequest {
		Objects.requireNonNull(method, "method");
		Objects.requireNonNull(uri, "uri");
		headers = Map.copyOf(headers);
		Objects.requireNonNull(body, "body");
		Objects.requireNonNull(receivedAt, "receivedAt");
	}

	/** @return the path of {@link #uri()}, without the query */
	public String path() {
		int query = uri.indexOf('?');
		return query < 0 ? uri : uri.substring(0, query);
	}

	/**
	 * @param name a header name, in any case
	 * @return the header's first value, or {@code null} when the request had none
	 */
	@Nullable
	public String header(String name) {
		List<String> values = headers.get(name.toLowerCase(Locale.ROOT));
		return values == null || values.isEmpty() ? null : values.get(0);
	}

	/**
	 * The conversation of a chat request, read the way the mock reads it: {@code developer} as
	 * {@code system}, array content as the concatenation of its text parts.
	 *
	 * @return the messages, or an empty list when the body holds no readable {@code messages} array
	 */
	public List<ChatMessage> messages() {
		if (json == null) {
			return List.of();
		}
		try {
			return OpenAiEndpoint.messages(json.path("messages"));
		}
		catch (IllegalArgumentException unreadable) {
			return List.of();
		}
	}
}
