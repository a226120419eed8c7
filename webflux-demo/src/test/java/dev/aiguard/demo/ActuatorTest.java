package dev.aiguard.demo;

import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter's Actuator parts on the app's port: health with the breaker's state, the
 * {@code aiguard} endpoint with the demo's policy, breaker and lanes, and the guard's meters in
 * Prometheus format.
 */
class ActuatorTest extends DemoTestSupport {

	@Autowired
	GuardStats stats;

	@Test
	void healthIncludesTheBreakerState() {
		client.get().uri("/actuator/health").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.status").isEqualTo("UP")
			.jsonPath("$.components.aiguardBreakers.components.model.status").isEqualTo("UP")
			.jsonPath("$.components.aiguardBreakers.components.model.details.state").isEqualTo("CLOSED")
			.jsonPath("$.components.aiguardBreakers.components.model.details.degraded").isEqualTo(false);

		breaker.transitionToForcedOpen();
		client.get().uri("/actuator/health").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.components.aiguardBreakers.components.model.details.state").isEqualTo("FORCED_OPEN")
			.jsonPath("$.components.aiguardBreakers.components.model.details.degraded").isEqualTo(true);
	}

	@Test
	void theAiguardEndpointListsTheDemosPolicyAndBreaker() {
		long before = stats.requests();
		chatToEnd(ask("report me"));
		// the demo's counters hear of a request after the endpoint's list (listeners in order)
		when(stats::requests, before + 1).block(WAIT);

		client.get().uri("/actuator/aiguard").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.policies.chat.breaker").isEqualTo("model")
			.jsonPath("$.policies.chat.lanes").isEqualTo("chat")
			.jsonPath("$.policies.chat.defaultPriority").isEqualTo("P1")
			.jsonPath("$.policies.chat.stall.idleTimeout").isEqualTo("PT0.4S")
			.jsonPath("$.policies.chat.maxAttempts").isEqualTo(3)
			.jsonPath("$.policies.chat.truncation").isEqualTo(true)
			.jsonPath("$.breakers.model.state").isEqualTo("CLOSED")
			.jsonPath("$.breakers.model.failureRateThreshold").isEqualTo(0.5)
			.jsonPath("$.breakers.model.calls").isEqualTo(breaker.snapshot().calls())
			.jsonPath("$.lanes.name").isEqualTo("chat")
			.jsonPath("$.lanes.P0.capacity").isEqualTo(4)
			.jsonPath("$.lanes.P2.capacity").isEqualTo(2)
			.jsonPath("$.reports[0].policy").isEqualTo("chat")
			.jsonPath("$.reports[0].outcome").isEqualTo("SUCCESS");

		breaker.transitionToForcedOpen();
		client.get().uri("/actuator/aiguard/model").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.state").isEqualTo("FORCED_OPEN");
	}

	@Test
	void prometheusExposesTheGuardMeters() {
		chatToEnd(ask("measure me"));

		String scrape = client.get().uri("/actuator/prometheus").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody();

		assertThat(scrape).contains("aiguard_streams_total{", "outcome=\"SUCCESS\"", "aiguard_stream_ttft_seconds",
				"aiguard_tokens_delivered_total", "aiguard_breaker_state{", "aiguard_lane_inflight{", "aiguard_lane_queued{");
	}
}
