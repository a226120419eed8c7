package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Priority;
import org.junit.jupiter.api.Test;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.test.web.reactive.server.EntityExchangeResult;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The budgets in the demo: the trial tenant's 3 requests a minute end in a 429 with
 * {@code Retry-After}; a tenant the demo cannot accept is a 400; the provider-rate-limit switch
 * makes the guard wait for the key's turn (it reads the mock's {@code x-ratelimit-*} headers) so
 * the mock's 429s stay near zero and every answer arrives; {@code /api/guard} shows it all.
 */
class BudgetDemoTest extends DemoTestSupport {

	/** @return a chat body with one user message, for {@code tenant} */
	String askAs(String tenant, String question) {
		return json.writeValueAsString(json.createObjectNode()
			.put("tenant", tenant)
			.set("messages", json.createArrayNode().add(json.createObjectNode().put("role", "user").put("content", question))));
	}

	private EntityExchangeResult<String> post(String body) {
		return client.post().uri("/api/chat")
			.contentType(MediaType.APPLICATION_JSON)
			.accept(MediaType.TEXT_EVENT_STREAM, MediaType.APPLICATION_JSON)
			.bodyValue(body)
			.exchange()
			.expectBody(String.class)
			.returnResult();
	}

	private JsonNode guardStatus() {
		return json.readTree(client.get().uri("/api/guard").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody());
	}

	@Test
	void theTrialTenantIsRefusedWith429AndRetryAfterOnceItsBudgetIsSpent() {
		for (int i = 1; i <= 3; i++) {
			List<ServerSentEvent<String>> events = chatToEnd(askAs("trial", "Question " + i + "?"));
			assertThat(data(events.get(0)).get("tenant").stringValue()).isEqualTo("trial");
			assertThat(last(events).event()).isEqualTo("done");
		}

		EntityExchangeResult<String> refused = post(askAs("trial", "One more?"));

		assertThat(refused.getStatus()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
		assertThat(refused.getResponseHeaders().getContentType()).isEqualTo(MediaType.APPLICATION_JSON);
		long retryAfter = Long.parseLong(refused.getResponseHeaders().getFirst("Retry-After"));
		assertThat(retryAfter).as("a request per 20 s refills").isBetween(1L, 20L);
		JsonNode body = json.readTree(refused.getResponseBody());
		assertThat(body.propertyNames()).startsWith("error", "tenant", "message");
		assertThat(body.get("error").stringValue()).isEqualTo("budget");
		assertThat(body.get("tenant").stringValue()).isEqualTo("trial");
		assertThat(body.get("message").stringValue()).contains("trial");
		assertThat(callsFor(PRIMARY)).as("the refused request never reached the model").isEqualTo(3);
		assertThat(callsFor(SIBLING)).as("nor did the ladder answer it").isZero();

		// another tenant is not affected, and the X-Tenant header names the tenant too
		assertThat(last(chatToEnd(askAs("acme", "Mine?"))).event()).isEqualTo("done");
		assertThat(client.post().uri("/api/chat").header("X-Tenant", "trial").contentType(MediaType.APPLICATION_JSON)
			.bodyValue(ask("Through the header?")).exchange().expectStatus().isEqualTo(HttpStatus.TOO_MANY_REQUESTS)
			.expectHeader().exists("Retry-After")
			.expectBody(String.class).returnResult().getResponseBody()).contains("\"tenant\":\"trial\"");
	}

	@Test
	void theSpringAiClientIsRefusedAlike() {
		for (int i = 1; i <= 3; i++) {
			assertThat(last(chatToEnd(askAs("trial", "Question " + i + "?"))).event()).isEqualTo("done");
		}
		String body = json.writeValueAsString(((tools.jackson.databind.node.ObjectNode) json.readTree(
				askAs("trial", "Via Spring AI?"))).put("client", AnswerClient.SPRING_AI.id()));

		EntityExchangeResult<String> refused = post(body);

		assertThat(refused.getStatus()).isEqualTo(HttpStatus.TOO_MANY_REQUESTS);
		assertThat(refused.getResponseHeaders().getFirst("Retry-After")).isNotBlank();
	}

	@Test
	void aTenantTheDemoCannotAcceptIsA400() {
		for (String tenant : List.of("", "has space", "x".repeat(65), "semi;colon")) {
			client.post().uri("/api/chat").contentType(MediaType.APPLICATION_JSON).bodyValue(askAs(tenant, "Hi?"))
				.exchange().expectStatus().isBadRequest()
				.expectBody().jsonPath("$.error").isEqualTo("invalid_tenant")
				.jsonPath("$.message").value(m -> assertThat((String) m).contains("tenant"));
		}
		client.post().uri("/api/chat").header("X-Tenant", "bad/tenant").contentType(MediaType.APPLICATION_JSON)
			.bodyValue(ask("Hi?")).exchange().expectStatus().isBadRequest()
			.expectBody().jsonPath("$.error").isEqualTo("invalid_tenant")
			.jsonPath("$.message").value(m -> assertThat((String) m).contains("X-Tenant"));
		client.post().uri("/api/chat").contentType(MediaType.APPLICATION_JSON)
			.bodyValue("{\"tenant\": 7, \"messages\": [{\"role\": \"user\", \"content\": \"Hi?\"}]}")
			.exchange().expectStatus().isBadRequest()
			.expectBody().jsonPath("$.error").isEqualTo("invalid_tenant");
		assertThat(modelRequests()).as("none reached the model").isEmpty();
	}

	@Test
	void theProviderRateLimitSwitchMakesTheGuardWaitInsteadOfMeetingThe429() {
		long throttledBefore = guardStatus().path("budgets").path("throttled").asLong();
		long refusalsBefore = mock.stats().rateLimitRefusals();
		client.patch().uri("/api/faults").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"providerRateLimit\": true}")
			.exchange().expectStatus().isOk().expectBody().jsonPath("$.providerRateLimit").isEqualTo(true);
		assertThat(mock.faults().providerRateLimit()).isEqualTo(FaultHandler.PROVIDER_RATE_LIMIT);

		long started = System.nanoTime();
		for (int i = 1; i <= 4; i++) {
			List<ServerSentEvent<String>> events = chatToEnd(ask("Throttled question " + i + "?"));
			assertThat(last(events).event()).as("answer %d", i).isEqualTo("done");
			assertThat(data(last(events)).get("source").stringValue()).as("answer %d", i).isEqualTo("REALTIME");
		}
		Duration took = Duration.ofNanos(System.nanoTime() - started);

		JsonNode budgets = guardStatus().path("budgets");
		assertThat(budgets.path("throttled").asLong() - throttledBefore).as("waits for the key's turn").isGreaterThanOrEqualTo(1);
		assertThat(mock.stats().rateLimitRefusals() - refusalsBefore).as("429s the mock sent").isLessThanOrEqualTo(1);
		assertThat(took).as("the third answer waited for the next 4 s window").isGreaterThan(Duration.ofSeconds(2));
		assertThat(budgets.path("provider429s").asLong()).isEqualTo(mock.stats().rateLimitRefusals());

		client.delete().uri("/api/faults").exchange().expectStatus().isOk()
			.expectBody().jsonPath("$.providerRateLimit").isEqualTo(false);
	}

	@Test
	void guardStatusShowsTheBudgets() {
		assertThat(last(chatToEnd(askAs("trial", "Count me?"))).event()).isEqualTo("done");

		JsonNode budgets = guardStatus().path("budgets");

		assertThat(budgets.path("storeMode").stringValue()).isEqualTo("LOCAL");
		assertThat(budgets.path("defaultTenant").stringValue()).isEqualTo("default");
		JsonNode trial = null;
		for (JsonNode t : budgets.path("tenants")) {
			if ("trial".equals(t.path("id").stringValue())) {
				trial = t;
			}
		}
		assertThat(trial).as("the trial tenant, seen").isNotNull();
		JsonNode requests = null;
		for (JsonNode l : trial.path("limits")) {
			if ("requests".equals(l.path("limit").stringValue())) {
				requests = l;
			}
		}
		assertThat(requests.path("capacity").asLong()).isEqualTo(3);
		assertThat(requests.path("remaining").asLong()).isEqualTo(2);
		assertThat(requests.path("per").stringValue()).isEqualTo("minute");
		JsonNode key = budgets.path("providers").get(0);
		assertThat(key.path("key").stringValue()).isEqualTo("mock");
		assertThat(key.path("limits").findValuesAsString("limit")).contains("requests", "tokens");
		assertThat(budgets.path("refusals").propertyNames()).containsExactly("tenant", "provider");
		assertThat(budgets.path("throttled").isNumber()).isTrue();
		assertThat(budgets.path("provider429s").isNumber()).isTrue();
	}

	@Test
	void guardStatusSummarisesManyTenants() {
		for (int i = 0; i < 12; i++) {
			assertThat(last(chatToEnd(askAs("many-" + i, "Hello?"))).event()).isEqualTo("done");
		}

		JsonNode budgets = guardStatus().path("budgets");

		assertThat(budgets.path("tenantCount").asInt()).isGreaterThanOrEqualTo(12);
		assertThat(budgets.path("tenants").size()).isEqualTo(BudgetStatus.TOP_TENANTS);
	}

	@Test
	void aBudgetRefusalAfterTheAnswerStartedIsAnErrorEventOfTypeBudget() {
		AdmissionRejectedException keyRefused = new AdmissionRejectedException(Priority.P1,
				AdmissionRejectedException.Reason.BUDGET, "provider key mock: the wait is too long", Duration.ofSeconds(3));
		AdmissionRejectedException laneRefused = new AdmissionRejectedException(Priority.P1,
				AdmissionRejectedException.Reason.QUEUE_FULL, "full");

		assertThat(ChatEvents.type(keyRefused)).isEqualTo("budget");
		assertThat(ChatEvents.type(laneRefused)).isEqualTo("rejected");
		JsonNode error = data(new ChatEvents(json).error(keyRefused, true));
		assertThat(error.get("type").stringValue()).isEqualTo("budget");
		assertThat(error.get("partial").booleanValue()).isTrue();
	}
}
