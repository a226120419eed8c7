package dev.aiguard.demo;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Health with the breaker's state, and the guard's meters in Prometheus format, on the app's port. */
class ActuatorTest extends DemoTestSupport {

	@Test
	void healthIncludesTheBreakerState() {
		client.get().uri("/actuator/health").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.status").isEqualTo("UP")
			.jsonPath("$.components.breaker.status").isEqualTo("UP")
			.jsonPath("$.components.breaker.details.state").isEqualTo("CLOSED")
			.jsonPath("$.components.breaker.details.degraded").isEqualTo(false);

		breaker.transitionToForcedOpen();
		client.get().uri("/actuator/health").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.components.breaker.details.state").isEqualTo("FORCED_OPEN")
			.jsonPath("$.components.breaker.details.degraded").isEqualTo(true);
	}

	@Test
	void prometheusExposesTheGuardMeters() {
		chatToEnd(ask("measure me"));

		String scrape = client.get().uri("/actuator/prometheus").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody();

		assertThat(scrape).contains("aiguard_streams_total{", "outcome=\"SUCCESS\"", "aiguard_stream_ttft_seconds",
				"aiguard_tokens_total", "aiguard_breaker_state{", "aiguard_lane_inflight{", "aiguard_lane_queued{");
	}
}
