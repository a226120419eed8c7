package dev.aiguard.demo;

import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.breaker.CircuitBreaker;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter's Actuator parts on the app's port: health with the breakers under
 * {@code aiguard.breakers}, the {@code aiguard} endpoint with the demo's policy, its breaker tree
 * and lanes, and the guard's meters in Prometheus format.
 */
class ActuatorTest extends DemoTestSupport {

	@Autowired
	GuardStats stats;

	@Autowired
	AiGuardRegistry registry;

	@Test
	void healthListsTheTemplateBreakerAndLeavesTheTreeToTheEndpoint() {
		CircuitBreaker template = registry.breaker("model").orElseThrow();
		template.transitionToClosed();
		client.get().uri("/actuator/health").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.status").isEqualTo("UP")
			.jsonPath("$.components.aiguardBreakers.components.model.status").isEqualTo("UP")
			.jsonPath("$.components.aiguardBreakers.components.model.details.state").isEqualTo("CLOSED")
			.jsonPath("$.components.aiguardBreakers.components.model.details.degraded").isEqualTo(false)
			.jsonPath("$.components.aiguardBreakers.components.length()").isEqualTo(1);

		template.transitionToForcedOpen();
		try {
			client.get().uri("/actuator/health").exchange().expectStatus().isOk()
				.expectBody()
				.jsonPath("$.components.aiguardBreakers.components.model.details.state").isEqualTo("FORCED_OPEN")
				.jsonPath("$.components.aiguardBreakers.components.model.details.degraded").isEqualTo(true);
			assertThat(chatToEnd(ask("does the template stop me?"))).last()
				.satisfies(done -> assertThat(data(done).get("source").stringValue())
					.as("no call passes the template: the chat's path is the tree's").isEqualTo("REALTIME"));
		}
		finally {
			template.transitionToClosed();
		}
	}

	@Test
	void theAiguardEndpointListsTheDemosPolicyAndBreakerTree() {
		long before = stats.requests();
		chatToEnd(ask("report me"));
		// the demo's counters hear of a request after the endpoint's list (listeners in order)
		when(stats::requests, before + 1).block(WAIT);

		client.get().uri("/actuator/aiguard").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.policies.chat.breaker").isEqualTo("llm/mock/mock-large")
			.jsonPath("$.policies.chat.lanes").isEqualTo("chat")
			.jsonPath("$.policies.chat.defaultPriority").isEqualTo("P1")
			.jsonPath("$.policies.chat.stall.idleTimeout").isEqualTo("PT0.4S")
			.jsonPath("$.policies.chat.maxAttempts").isEqualTo(3)
			.jsonPath("$.policies.chat.truncation").isEqualTo(true)
			.jsonPath("$.breakerTree.breaker").isEqualTo("llm")
			.jsonPath("$.breakerTree.calls").isEqualTo(1)
			.jsonPath("$.breakerTree.children[0].breaker").isEqualTo("llm/mock")
			.jsonPath("$.breakerTree.children[0].children[0].breaker").isEqualTo("llm/mock/mock-large")
			.jsonPath("$.breakerTree.children[0].children[0].state").isEqualTo("CLOSED")
			.jsonPath("$.breakerTree.children[0].children[0].calls").isEqualTo(breaker.snapshot().calls())
			.jsonPath("$.breakerTree.children[0].children[1].breaker").isEqualTo("llm/mock/mock-small")
			.jsonPath("$.breakerTree.children[0].children[1].calls").isEqualTo(0)
			.jsonPath("$.breakers.model.calls").isEqualTo(0)
			.jsonPath("$.lanes.name").isEqualTo("chat")
			.jsonPath("$.lanes.P0.capacity").isEqualTo(4)
			.jsonPath("$.lanes.P2.capacity").isEqualTo(2)
			.jsonPath("$.reports[0].policy").isEqualTo("chat")
			.jsonPath("$.reports[0].outcome").isEqualTo("SUCCESS");

		breaker.transitionToForcedOpen();
		client.get().uri("/actuator/aiguard").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.breakerTree.children[0].children[0].state").isEqualTo("FORCED_OPEN")
			.jsonPath("$.breakerTree.children[0].state").isEqualTo("CLOSED");
		client.get().uri("/actuator/aiguard/model").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.state").isEqualTo("CLOSED");
	}

	@Test
	void prometheusExposesTheGuardMeters() {
		chatToEnd(ask("measure me"));

		String scrape = client.get().uri("/actuator/prometheus").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody();

		assertThat(scrape).contains("aiguard_streams_total{", "outcome=\"SUCCESS\"", "aiguard_stream_ttft_seconds",
				"aiguard_delivered_chunks_total", "aiguard_breaker_state{", "aiguard_lane_inflight{", "aiguard_lane_queued{");
	}
}
