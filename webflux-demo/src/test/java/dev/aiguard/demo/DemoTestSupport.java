package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;
import java.util.function.LongSupplier;

import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The running demo on a random loopback port, shared by the test classes (one Spring context):
 * a fast mock, short deadlines, a breaker that trips after a handful of calls. Each test starts
 * from a well-behaved mock and a closed, empty breaker.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
		"aiguard.mock.first-token-delay=5ms",
		"aiguard.mock.token-interval=2ms",
		"aiguard.stall.first-token-timeout=1500ms",
		"aiguard.stall.idle-timeout=400ms",
		"aiguard.stall.max-duration=20s",
		"aiguard.breaker.minimum-calls=5",
		"aiguard.breaker.open-wait=60s",
		"aiguard.breaker.minimum-dwell=1s",
		"aiguard.retry.min-backoff=20ms",
		"aiguard.retry.max-backoff=100ms",
		"aiguard.fallback.timeout=1s",
		"logging.level.dev.aiguard=INFO" })
abstract class DemoTestSupport {

	static final Duration WAIT = Duration.ofSeconds(20);

	static final ParameterizedTypeReference<ServerSentEvent<String>> SSE = new ParameterizedTypeReference<>() {
	};

	@LocalServerPort
	int port;

	@Autowired
	MockModelServer mock;

	@Autowired
	CircuitBreaker breaker;

	@Autowired
	JsonMapper json;

	WebTestClient client;

	@BeforeEach
	void resetTheWorld() {
		mock.resetFaults();
		breaker.transitionToClosed();
		client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(WAIT).build();
	}

	/** @return a chat body with one user message */
	String ask(String question) {
		return json.writeValueAsString(json.createObjectNode()
			.set("messages", json.createArrayNode().add(json.createObjectNode().put("role", "user").put("content", question))));
	}

	/** @return the events of one {@code POST /api/chat}, as they arrive */
	Flux<ServerSentEvent<String>> chat(String body) {
		return client.post().uri("/api/chat")
			.contentType(MediaType.APPLICATION_JSON)
			.accept(MediaType.TEXT_EVENT_STREAM)
			.bodyValue(body)
			.exchange()
			.expectStatus().isOk()
			.returnResult(SSE)
			.getResponseBody();
	}

	/** @return every event of one answer, once it has ended */
	List<ServerSentEvent<String>> chatToEnd(String body) {
		return chat(body).collectList().block(WAIT);
	}

	JsonNode data(ServerSentEvent<String> event) {
		return json.readTree(event.data());
	}

	/** @return the text of the answer's token events */
	String text(List<ServerSentEvent<String>> events) {
		StringBuilder b = new StringBuilder();
		events.stream().filter(e -> "token".equals(e.event())).forEach(e -> b.append(data(e).get("text").stringValue()));
		return b.toString();
	}

	static ServerSentEvent<String> last(List<ServerSentEvent<String>> events) {
		return events.get(events.size() - 1);
	}

	void faults(FaultProfile profile) {
		mock.faults(profile);
	}

	/** Completes once {@code counter} reaches {@code atLeast}, polling without sleeping the test thread. */
	static Mono<Long> when(LongSupplier counter, long atLeast) {
		return Flux.interval(Duration.ofMillis(10)).map(i -> counter.getAsLong()).filter(n -> n >= atLeast).next()
			.timeout(WAIT);
	}
}
