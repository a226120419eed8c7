package dev.aiguard.test.mock;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMethod;
import reactor.core.publisher.Mono;
import reactor.netty.ByteBufFlux;
import reactor.netty.http.client.HttpClient;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Plain Reactor Netty requests to the mock, for what the library's client never sends or never shows. */
final class RawHttp {

	static final Duration WAIT = Duration.ofSeconds(10);
	static final JsonMapper JSON = new JsonMapper();

	private static final HttpClient HTTP = HttpClient.create();

	private RawHttp() {
	}

	/** A whole response. */
	record Reply(int status, HttpHeaders headers, String body) {

		JsonNode json() {
			try {
				return JSON.readTree(body);
			}
			catch (JacksonException e) {
				throw new AssertionError("not JSON: " + body, e);
			}
		}

		/** @return the {@code data:} payloads of a server-sent event stream, in order */
		List<String> events() {
			List<String> data = new ArrayList<>();
			for (String event : body.split("\n\n")) {
				if (event.startsWith("data: ")) {
					data.add(event.substring("data: ".length()));
				}
			}
			return data;
		}

		/** @return the events that are JSON objects, parsed ({@code [DONE]} left out) */
		List<JsonNode> jsonEvents() {
			List<JsonNode> nodes = new ArrayList<>();
			for (String data : events()) {
				if (!data.equals("[DONE]")) {
					try {
						nodes.add(JSON.readTree(data));
					}
					catch (JacksonException e) {
						throw new AssertionError("not JSON: " + data, e);
					}
				}
			}
			return nodes;
		}
	}

	static Reply post(String url, String json) {
		return exchange(HttpMethod.POST, url, json, null).block(WAIT);
	}

	/** @return the exchange, lazily: nothing is sent before subscription */
	static Mono<Reply> postLater(String url, String json) {
		return exchange(HttpMethod.POST, url, json, null);
	}

	static Reply post(String url, String json, String authorization) {
		return exchange(HttpMethod.POST, url, json, authorization).block(WAIT);
	}

	static Reply get(String url) {
		return exchange(HttpMethod.GET, url, null, null).block(WAIT);
	}

	private static Mono<Reply> exchange(HttpMethod method, String url, String json, String authorization) {
		return HTTP.headers(h -> {
			if (json != null) {
				h.set(HttpHeaderNames.CONTENT_TYPE, "application/json");
			}
			if (authorization != null) {
				h.set(HttpHeaderNames.AUTHORIZATION, authorization);
			}
		})
			.request(method)
			.uri(url)
			.send(json == null ? ByteBufFlux.fromString(Mono.empty())
					: ByteBufFlux.fromString(Mono.just(json), StandardCharsets.UTF_8, io.netty.buffer.ByteBufAllocator.DEFAULT))
			.responseSingle((response, body) -> body.asString(StandardCharsets.UTF_8).defaultIfEmpty("")
				.map(text -> new Reply(response.status().code(), response.responseHeaders().copy(), text)));
	}
}
