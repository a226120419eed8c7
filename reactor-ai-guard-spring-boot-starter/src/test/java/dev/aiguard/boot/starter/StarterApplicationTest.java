package dev.aiguard.boot.starter;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.aiguard.AiGuard;
import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import reactor.core.publisher.Flux;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A WebFlux application whose guard comes from properties only ({@code application.yml}) and one
 * injected {@code AiGuard}: it streams answers of the mock model through the guard, and the
 * Actuator shows the guard.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
		classes = StarterApplicationTest.ChatApp.class)
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

	/** The whole application: a client, the injected guard, one route. */
	@SpringBootApplication
	static class ChatApp {

		@Bean
		OpenAiCompatibleClient modelClient(org.springframework.core.env.Environment env) {
			return OpenAiCompatibleClient.builder(env.getRequiredProperty("model.base-url"))
				.model(MockModelServer.MODEL)
				.build();
		}

		@Bean
		RouterFunction<ServerResponse> chat(OpenAiCompatibleClient client, @Qualifier("chat") AiGuard<ChatChunk> guard) {
			return RouterFunctions.route()
				.GET("/chat", request -> {
					ChatRequest ask = ChatRequest.of(null, List.of(ChatMessage.user(request.queryParam("q").orElse("hi"))));
					Flux<String> text = guard.call(ask, client::stream)
						.filter(ChatChunk::hasContent)
						.map(ChatChunk::text);
					return ServerResponse.ok().contentType(MediaType.TEXT_EVENT_STREAM).body(text, String.class);
				})
				.build();
		}
	}

	private WebClient http() {
		return WebClient.create("http://127.0.0.1:" + port);
	}

	private String ask(String question) {
		return String.join("", http().get().uri(b -> b.path("/chat").queryParam("q", question).build())
			.accept(MediaType.TEXT_EVENT_STREAM)
			.retrieve()
			.bodyToFlux(String.class)
			.collectList()
			.block(WAIT));
	}

	private Map<String, Object> get(String path) {
		return http().get().uri(path).retrieve().bodyToMono(new ParameterizedTypeReference<Map<String, Object>>() {
		}).block(WAIT);
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

		Map<String, Object> health = get("/actuator/health");
		Map<String, Object> components = (Map<String, Object>) health.get("components");
		assertThat(components).containsKey("aiguardBreakers");
		Map<String, Object> group = get("/actuator/health/aiguard");
		assertThat(group).containsEntry("status", "UP");
		assertThat((Map<String, Object>) group.get("components")).containsOnlyKeys("aiguardBreakers");
	}

	@Test
	@SuppressWarnings("unchecked")
	void aLaneIsResizedOverHttpThroughTheActuator() {
		Map<String, Object> lanes = http().post().uri("/actuator/aiguard/lanes/P2")
			.contentType(MediaType.APPLICATION_JSON)
			.bodyValue(Map.of("capacity", 3))
			.retrieve()
			.bodyToMono(new ParameterizedTypeReference<Map<String, Object>>() {
			})
			.block(WAIT);
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
