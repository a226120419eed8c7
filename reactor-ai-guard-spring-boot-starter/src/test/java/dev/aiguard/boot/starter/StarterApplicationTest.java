package dev.aiguard.boot.starter;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A WebFlux application whose guard comes from properties only (the docs' {@code application.yml})
 * and one injected {@code AiGuard}: it streams answers of the mock model through the guard, and the
 * Actuator shows the guard to an operator.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = ChatApplication.class)
class StarterApplicationTest {

	static final Duration WAIT = Duration.ofSeconds(20);

	static final MockModelServer MODEL = MockModelServer.builder()
		.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(2)))
		.random(() -> 0.0)
		.start();

	@DynamicPropertySource
	static void model(DynamicPropertyRegistry registry) {
		registry.add("model.base-url", MODEL::baseUrl);
	}

	@AfterAll
	static void stopModel() {
		MODEL.stop();
	}

	@LocalServerPort
	int port;

	@Autowired
	AiGuardRegistry guards;

	@BeforeEach
	void healthyModelAndClosedBreaker() {
		MODEL.resetFaults();
		guards.breaker("model").orElseThrow().transitionToClosed();
	}

	private String ask(String question) {
		return String.join("", Http.as(port, null).get().uri(b -> b.path("/chat").queryParam("q", question).build())
			.accept(MediaType.TEXT_EVENT_STREAM)
			.retrieve()
			.bodyToFlux(String.class)
			.collectList()
			.block(WAIT));
	}

	private Map<String, Object> get(String path) {
		return Http.json(Http.as(port, ChatApplication.OPS).get().uri(path));
	}

	@Test
	@SuppressWarnings("unchecked")
	void theInjectedGuardStreamsTheModelsAnswerAndTheActuatorShowsIt() {
		assertThat(ask("What is a lane?")).isEqualTo(MockAnswers.text("What is a lane?"));

		Map<String, Object> aiguard = get("/actuator/aiguard");
		Map<String, Object> chat = (Map<String, Object>) ((Map<String, Object>) aiguard.get("policies")).get("chat");
		assertThat(chat).containsEntry("breaker", "model").containsEntry("defaultPriority", "P0");
		Map<String, Object> model = (Map<String, Object>) ((Map<String, Object>) aiguard.get("breakers")).get("model");
		assertThat(model).containsEntry("state", "CLOSED");
		assertThat((List<Map<String, Object>>) aiguard.get("reports")).first()
			.satisfies(r -> assertThat(r).containsEntry("policy", "chat").containsEntry("outcome", "SUCCESS"));
	}

	@Test
	void healthDetailsStayHiddenByDefaultEvenFromAnOperator() {
		assertThat(get("/actuator/health/aiguard")).isEqualTo(Map.of("status", "UP"));
		assertThat(get("/actuator/health")).containsEntry("status", "UP").doesNotContainKey("components");
	}

	@Test
	@SuppressWarnings("unchecked")
	void aLaneIsResizedOverHttpThroughTheActuator() {
		Map<String, Object> lanes = Http.json(Http.as(port, ChatApplication.ADMIN).post().uri("/actuator/aiguard/lanes/P2")
			.contentType(MediaType.APPLICATION_JSON)
			.bodyValue(Map.of("capacity", 3)));
		assertThat((Map<String, Object>) lanes.get("P2")).containsEntry("capacity", 3).containsEntry("builtCapacity", 1);
		Map<String, Object> read = (Map<String, Object>) get("/actuator/aiguard").get("lanes");
		assertThat((Map<String, Object>) read.get("P2")).containsEntry("capacity", 3);
		assertThat(guards.lanes().orElseThrow().concurrency(dev.aiguard.core.Priority.P2)).isEqualTo(3);
		guards.lanes().orElseThrow().resize(dev.aiguard.core.Priority.P2, 1);
	}

	@Test
	void aStalledAnswerGetsTheConfiguredNotice() {
		MODEL.faults(MODEL.faults().withStallAfter(3));
		String answer = ask("Tell me about stalls");
		assertThat(answer).startsWith(String.join("", MockAnswers.tokens("Tell me about stalls").subList(0, 3)))
			.endsWith("[The answer was cut short. Please ask again.]");
	}

	@Test
	void anOutageIsAnsweredByTheStaticFallback() {
		MODEL.faults(MODEL.faults().withErrors(1.0, 500, 0));
		assertThat(ask("Anyone there?")).isEqualTo("The assistant is busy right now; please try again in a minute.");
	}
}
