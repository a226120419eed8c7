package dev.aiguard.demo;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.core.Priority;
import dev.aiguard.test.mock.FaultProfile;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Who may use the demo ({@link LocalAccessFilter}): the API takes JSON bodies only (415), answers
 * only to its own address in {@code Host} (421) and to its own page in {@code Origin} (403), and
 * every change but a question needs the token the page's address carries (403). Each refusal is
 * the demo's JSON error body and reaches neither the model nor the state it would have changed.
 */
class LocalAccessTest extends DemoTestSupport {

	@Autowired
	GuardStats stats;

	@Autowired
	AiGuardRegistry registry;

	/** The same demo without the token, as a script or another page would call it. */
	private WebTestClient stranger() {
		return WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(WAIT).build();
	}

	@Test
	void theChatTakesOnlyJsonBodies() {
		long before = stats.requests();
		for (MediaType type : new MediaType[] { MediaType.TEXT_PLAIN, MediaType.APPLICATION_FORM_URLENCODED,
				MediaType.MULTIPART_FORM_DATA }) {
			client.post().uri("/api/chat").contentType(type).bodyValue(ask("spend the key"))
				.exchange()
				.expectStatus().isEqualTo(415)
				.expectBody()
				.jsonPath("$.error").isEqualTo("unsupported_media_type")
				.jsonPath("$.message").isEqualTo("the API accepts only Content-Type: application/json");
		}
		// no Content-Type at all is no JSON either
		client.post().uri("/api/chat").bodyValue(ask("spend the key").getBytes())
			.exchange().expectStatus().isEqualTo(415);
		assertThat(modelRequests()).as("no refused body reached the model").isEmpty();
		assertThat(stats.requests()).isEqualTo(before);

		// JSON with a charset is JSON
		client.post().uri("/api/chat").contentType(MediaType.parseMediaType("application/json; charset=utf-8"))
			.accept(MediaType.TEXT_EVENT_STREAM).bodyValue(ask("welcome"))
			.exchange().expectStatus().isOk().returnResult(SSE).getResponseBody().blockLast(WAIT);
		assertThat(modelRequests()).hasSize(1);
	}

	@Test
	void theWriteEndpointsTakeOnlyJsonBodies() {
		FaultProfile before = mock.faults();
		client.patch().uri("/api/faults").contentType(MediaType.TEXT_PLAIN).bodyValue("{\"errorRate\": 1.0}")
			.exchange().expectStatus().isEqualTo(415).expectBody().jsonPath("$.error").isEqualTo("unsupported_media_type");
		client.put().uri("/api/policy").contentType(MediaType.APPLICATION_FORM_URLENCODED).bodyValue("maxAttempts=1")
			.exchange().expectStatus().isEqualTo(415);
		assertThat(mock.faults()).isEqualTo(before);
	}

	@Test
	void anotherHostNameIsMisdirectedEvenForReads() {
		for (String host : new String[] { "rebound.attacker.example:" + port, "127.0.0.1:" + (port + 1), "127.0.0.2:" + port,
				"127.0.0.1", "" }) {
			for (String path : new String[] { "/", "/api/guard", "/api/faults", "/actuator/aiguard" }) {
				client.get().uri(path).header("Host", host)
					.exchange()
					.expectStatus().isEqualTo(421)
					.expectBody().jsonPath("$.error").isEqualTo("misdirected_request");
			}
		}
		// a DNS-rebound page with the token still cannot change anything
		FaultProfile before = mock.faults();
		client.patch().uri("/api/faults").header("Host", "rebound.attacker.example:" + port)
			.contentType(MediaType.APPLICATION_JSON).bodyValue("{\"errorRate\": 1.0}")
			.exchange().expectStatus().isEqualTo(421);
		client.post().uri("/actuator/aiguard/lanes/p0").header("Host", "rebound.attacker.example:" + port)
			.contentType(MediaType.APPLICATION_JSON).bodyValue("{\"capacity\": 0}")
			.exchange().expectStatus().isEqualTo(421);
		assertThat(mock.faults()).isEqualTo(before);
		assertThat(lanes().concurrency(Priority.P0)).isPositive();

		// the loopback names with the bound port are the demo's own
		for (String host : new String[] { "127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port,
				"[::1]:" + port }) {
			client.get().uri("/api/guard").header("Host", host).exchange().expectStatus().isOk();
		}
	}

	@Test
	void anotherSitesPageIsRefusedByItsOrigin() {
		long before = stats.requests();
		for (String origin : new String[] { "http://attacker.example", "http://127.0.0.1:" + (port + 1),
				"http://127.0.0.2:" + port, "null", "file://", "http://127.0.0.1:" + port + "/path" }) {
			// JSON too: the page could send it after a preflight, which is refused the same way
			client.post().uri("/api/chat").header("Origin", origin).contentType(MediaType.APPLICATION_JSON)
				.bodyValue(ask("spend the key"))
				.exchange()
				.expectStatus().isForbidden()
				.expectBody().jsonPath("$.error").isEqualTo("forbidden_origin");
			client.options().uri("/api/chat").header("Origin", origin).header("Access-Control-Request-Method", "POST")
				.header("Access-Control-Request-Headers", "content-type")
				.exchange()
				.expectStatus().isForbidden()
				.expectHeader().doesNotExist("Access-Control-Allow-Origin");
		}
		assertThat(modelRequests()).as("no foreign page's question reached the model").isEmpty();
		assertThat(stats.requests()).isEqualTo(before);

		// the demo's own page, under either loopback name, is welcome
		for (String origin : new String[] { "http://127.0.0.1:" + port, "http://localhost:" + port }) {
			client.post().uri("/api/chat").header("Origin", origin).contentType(MediaType.APPLICATION_JSON)
				.accept(MediaType.TEXT_EVENT_STREAM).bodyValue(ask("welcome"))
				.exchange().expectStatus().isOk().returnResult(SSE).getResponseBody().blockLast(WAIT);
		}
		assertThat(modelRequests()).hasSize(2);
	}

	@Test
	void changesNeedTheTokenAndAQuestionDoesNot() {
		FaultProfile faults = mock.faults();
		for (String token : new String[] { null, "", "wrong", access.token() + "x", access.token().substring(1) }) {
			WebTestClient without = token == null ? stranger()
					: stranger().mutate().defaultHeader(LocalAccessFilter.TOKEN_HEADER, token).build();
			without.patch().uri("/api/faults").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"errorRate\": 1.0}")
				.exchange().expectStatus().isForbidden()
				.expectBody().jsonPath("$.error").isEqualTo("token_required");
			without.put().uri("/api/faults").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"omitTerminal\": true}")
				.exchange().expectStatus().isForbidden();
			without.delete().uri("/api/faults").exchange().expectStatus().isForbidden();
			without.put().uri("/api/policy").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"maxAttempts\": 1}")
				.exchange().expectStatus().isForbidden();
			without.post().uri("/actuator/aiguard/model").contentType(MediaType.APPLICATION_JSON)
				.bodyValue("{\"state\": \"forced-open\"}")
				.exchange().expectStatus().isForbidden();
			without.post().uri("/actuator/aiguard/lanes/p0").contentType(MediaType.APPLICATION_JSON)
				.bodyValue("{\"capacity\": 0}")
				.exchange().expectStatus().isForbidden();
		}
		assertThat(mock.faults()).isEqualTo(faults);
		CircuitBreaker template = registry.breaker("model").orElseThrow();
		assertThat(template.state()).isEqualTo(BreakerState.CLOSED);
		int p0 = lanes().concurrency(Priority.P0);
		assertThat(p0).isPositive();

		// reads need no token, and neither does a question from the page or a local script
		stranger().get().uri("/api/faults").exchange().expectStatus().isOk();
		stranger().get().uri("/actuator/aiguard").exchange().expectStatus().isOk();
		stranger().post().uri("/api/chat").contentType(MediaType.APPLICATION_JSON).accept(MediaType.TEXT_EVENT_STREAM)
			.bodyValue(ask("no token needed"))
			.exchange().expectStatus().isOk().returnResult(SSE).getResponseBody().blockLast(WAIT);

		// with the token, the same changes go through
		client.patch().uri("/api/faults").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"omitTerminal\": true}")
			.exchange().expectStatus().isOk();
		assertThat(mock.faults().omitTerminal()).isTrue();
		try {
			client.post().uri("/actuator/aiguard/model").contentType(MediaType.APPLICATION_JSON)
				.bodyValue("{\"state\": \"forced-open\"}")
				.exchange().expectStatus().isOk();
			assertThat(template.state()).isEqualTo(BreakerState.FORCED_OPEN);
			client.post().uri("/actuator/aiguard/lanes/p0").contentType(MediaType.APPLICATION_JSON)
				.bodyValue("{\"capacity\": " + (p0 + 1) + "}")
				.exchange().expectStatus().isOk();
			assertThat(lanes().concurrency(Priority.P0)).isEqualTo(p0 + 1);
		}
		finally {
			template.transitionToClosed();
			lanes().resize(Priority.P0, p0);
		}
	}

	@Test
	void thePagesAddressCarriesTheToken() {
		assertThat(access.token()).as("32 random bytes, URL-safe Base64").matches("[A-Za-z0-9_-]{43}");
		assertThat(access.pageAddress()).isEqualTo("http://127.0.0.1:" + port + "/#token=" + access.token());
		assertThat(new DemoProperties(null, null, null, null, null, null, null,
				new DemoProperties.Access(access.token(), java.util.List.of())).toString())
			.doesNotContain(access.token()).contains("token=(set)");
	}

	private PriorityLanes lanes() {
		return registry.lanes().orElseThrow();
	}
}
