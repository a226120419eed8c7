package dev.aiguard.boot.autoconfigure;

import java.util.List;
import java.util.Map;

import dev.aiguard.admission.LanePermit;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.audit.AuditEvent;
import org.springframework.boot.actuate.audit.InMemoryAuditEventRepository;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AiGuardActuatorTest {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class, AiGuardEndpointAutoConfiguration.class,
				AiGuardHealthAutoConfiguration.class))
		.withPropertyValues("aiguard.breakers.openai.minimum-calls=2", "aiguard.breakers.openai.failure-rate-threshold=0.5",
				"aiguard.breakers.openai.open-wait=30s", "aiguard.breakers.anthropic.minimum-calls=2",
				"aiguard.lanes.p0.concurrency=2", "aiguard.lanes.p1.concurrency=1", "aiguard.lanes.p2.concurrency=0",
				"aiguard.policies.chat.breaker=openai", "aiguard.policies.chat.lanes=true",
				"aiguard.reports.recent=2");

	@Test
	void theEndpointExistsOnlyWhenExposed() {
		runner.run(context -> assertThat(context).doesNotHaveBean(AiGuardEndpoint.class));
		runner.withPropertyValues("management.endpoints.web.exposure.include=aiguard")
			.run(context -> assertThat(context).hasSingleBean(AiGuardEndpoint.class));
		runner.withPropertyValues("management.endpoints.web.exposure.include=aiguard")
			.withClassLoader(new FilteredClassLoader("org.springframework.boot.actuate"))
			.run(context -> {
				assertThat(context).hasNotFailed();
				assertThat(context).doesNotHaveBean(AiGuardEndpoint.class);
			});
	}

	@Test
	@SuppressWarnings("unchecked")
	void readingShowsPoliciesBreakersLanesAndTheNewestReports() {
		runner.withPropertyValues("management.endpoints.web.exposure.include=aiguard").run(context -> {
			AiGuardRegistry registry = context.getBean(AiGuardRegistry.class);
			for (String text : List.of("one", "two", "three")) {
				StepVerifier.create(Flux.just(ChatChunk.token(text), ChatChunk.finish("stop"))
						.transform(registry.guard("chat")))
					.expectNextCount(2)
					.verifyComplete();
			}
			Map<String, Object> body = context.getBean(AiGuardEndpoint.class).guard();
			assertThat(body).containsOnlyKeys("policies", "breakers", "lanes", "load", "reports");
			assertThat(body.get("load")).as("no load governor configured").isNull();
			Map<String, Object> chat = (Map<String, Object>) ((Map<String, Object>) body.get("policies")).get("chat");
			assertThat(chat).containsEntry("breaker", "openai").containsEntry("lanes", "lanes")
				.containsEntry("defaultPriority", "P1");
			Map<String, Object> openai = (Map<String, Object>) ((Map<String, Object>) body.get("breakers")).get("openai");
			assertThat(openai).containsEntry("state", "CLOSED").containsEntry("calls", 3L).containsEntry("probeInMs", null);
			Map<String, Object> p0 = (Map<String, Object>) ((Map<String, Object>) body.get("lanes")).get("P0");
			assertThat(p0).containsEntry("capacity", 2).containsEntry("inFlight", 0).containsEntry("queued", 0);
			List<Map<String, Object>> reports = (List<Map<String, Object>>) body.get("reports");
			assertThat(reports).hasSize(2).allSatisfy(r -> assertThat(r).containsEntry("policy", "chat")
				.containsEntry("outcome", "SUCCESS").containsEntry("tokens", 1L));
		});
	}

	@Test
	void writingMovesABreakerAndLeavesAnAuditEvent() {
		runner.withPropertyValues("management.endpoints.web.exposure.include=aiguard")
			.withBean(InMemoryAuditEventRepository.class)
			.run(context -> {
				AiGuardEndpoint endpoint = context.getBean(AiGuardEndpoint.class);
				CircuitBreaker openai = context.getBean(AiGuardRegistry.class).breaker("openai").orElseThrow();
				assertThat(endpoint.changeBreaker(SecurityContext.NONE, "openai", "forced-open"))
					.containsEntry("state", "FORCED_OPEN");
				assertThat(openai.tryAcquire()).isNull();
				endpoint.changeBreaker(SecurityContext.NONE, "openai", "disabled");
				assertThat(openai.state()).isEqualTo(BreakerState.DISABLED);
				endpoint.changeBreaker(SecurityContext.NONE, "openai", "closed");
				assertThat(openai.state()).isEqualTo(BreakerState.CLOSED);
				assertThat(endpoint.changeBreaker(SecurityContext.NONE, "nope", "closed")).isNull();
				assertThat(endpoint.breaker("nope")).isNull();
				assertThatThrownBy(() -> endpoint.changeBreaker(SecurityContext.NONE, "openai", "half-open"))
					.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'half-open'");
				List<AuditEvent> events = context.getBean(InMemoryAuditEventRepository.class).find(null, null, null);
				assertThat(events).extracting(AuditEvent::getType).containsOnly(AiGuardEndpoint.AUDIT_TYPE);
				assertThat(events).extracting(e -> e.getData().get("to"))
					.containsExactlyInAnyOrder("FORCED_OPEN", "DISABLED", "CLOSED");
				assertThat(events).extracting(AuditEvent::getPrincipal).containsOnly("anonymous");
			});
	}

	@Test
	@SuppressWarnings("unchecked")
	void writingResizesALaneWhileItRunsAndLeavesAnAuditEvent() {
		runner.withPropertyValues("management.endpoints.web.exposure.include=aiguard")
			.withBean(InMemoryAuditEventRepository.class)
			.run(context -> {
				AiGuardEndpoint endpoint = context.getBean(AiGuardEndpoint.class);
				PriorityLanes lanes = context.getBean(AiGuardRegistry.class).lanes().orElseThrow();
				LanePermit first = lanes.tryAcquire(Priority.P0);
				LanePermit second = lanes.tryAcquire(Priority.P0);
				assertThat(first).isNotNull();
				assertThat(second).isNotNull();

				Map<String, Object> after = endpoint.resizeLane(SecurityContext.NONE, "lanes", "p0", 1);

				Map<String, Object> p0 = (Map<String, Object>) after.get("P0");
				assertThat(p0).containsEntry("capacity", 1).containsEntry("builtCapacity", 2)
					.containsEntry("inFlight", 2);
				first.release();
				assertThat(lanes.tryAcquire(Priority.P0)).as("one permit, still held").isNull();
				second.release();
				LanePermit again = lanes.tryAcquire(Priority.P0);
				assertThat(again).isNotNull();
				again.release();

				assertThat(endpoint.resizeLane(SecurityContext.NONE, "breakers", "P0", 3)).isNull();
				assertThatThrownBy(() -> endpoint.resizeLane(SecurityContext.NONE, "lanes", "P9", 3))
					.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'P9'");
				assertThatThrownBy(() -> endpoint.resizeLane(SecurityContext.NONE, "lanes", "P1", -1))
					.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
				assertThat(lanes.concurrency(Priority.P1)).isEqualTo(1);

				List<AuditEvent> events = context.getBean(InMemoryAuditEventRepository.class).find(null, null, null);
				assertThat(events).singleElement().satisfies(e -> {
					assertThat(e.getType()).isEqualTo(AiGuardEndpoint.LANE_AUDIT_TYPE);
					assertThat(e.getData()).containsEntry("priority", "P0").containsEntry("from", 1 + 1)
						.containsEntry("to", 1);
				});
			});
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class, AiGuardEndpointAutoConfiguration.class))
			.withPropertyValues("management.endpoints.web.exposure.include=aiguard")
			.run(context -> assertThat(context.getBean(AiGuardEndpoint.class)
				.resizeLane(SecurityContext.NONE, "lanes", "P0", 1)).as("no lanes: 404").isNull());
	}

	@Test
	void oneHealthIndicatorPerBreakerUpWhileOpenUnlessMapped() {
		runner.run(context -> {
			CompositeHealthContributor aiguard = (CompositeHealthContributor) context.getBean("aiguardBreakersHealthContributor",
					HealthContributor.class);
			CircuitBreaker openai = context.getBean(AiGuardRegistry.class).breaker("openai").orElseThrow();
			trip(openai);
			Health open = ((HealthIndicator) aiguard.getContributor("openai")).health();
			assertThat(open.getStatus()).isEqualTo(Status.UP);
			assertThat(open.getDetails()).containsEntry("state", "OPEN").containsEntry("degraded", true)
				.containsKey("probeInMs");
			assertThat(((HealthIndicator) aiguard.getContributor("anthropic")).health().getDetails())
				.containsEntry("state", "CLOSED").containsEntry("degraded", false);
		});
		runner.withPropertyValues("aiguard.health.open-status=out_of_service").run(context -> {
			CompositeHealthContributor aiguard = (CompositeHealthContributor) context.getBean("aiguardBreakersHealthContributor",
					HealthContributor.class);
			trip(context.getBean(AiGuardRegistry.class).breaker("openai").orElseThrow());
			assertThat(((HealthIndicator) aiguard.getContributor("openai")).health().getStatus())
				.isEqualTo(Status.OUT_OF_SERVICE);
		});
		runner.withPropertyValues("management.health.aiguard.enabled=false")
			.run(context -> assertThat(context).doesNotHaveBean("aiguardBreakersHealthContributor"));
	}

	@Test
	void aBadReportsSizeNamesTheProperty() {
		runner.withPropertyValues("aiguard.reports.recent=0").run(context -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("aiguard.reports.recent");
		});
	}

	private static void trip(CircuitBreaker breaker) {
		for (int i = 0; i < 2; i++) {
			BreakerPermit permit = breaker.tryAcquire();
			permit.record(Outcome.FAILURE, -1);
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}
}
