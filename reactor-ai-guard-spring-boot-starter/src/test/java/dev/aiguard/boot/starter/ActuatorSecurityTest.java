package dev.aiguard.boot.starter;

import java.time.Duration;
import java.util.Map;

import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.core.Priority;
import dev.aiguard.test.mock.MockModelServer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.http.MediaType;
import org.springframework.test.context.ActiveProfiles;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.web.reactive.function.client.WebClient;
import reactor.core.publisher.Mono;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Actuator security of docs/spring-boot.md ({@link ActuatorSecurity}) with the documented health
 * setting ({@code application-health-details.yml}): writes for administrators, reads for operators,
 * health details for both and for nobody else.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, classes = ChatApplication.class)
@ActiveProfiles("health-details")
class ActuatorSecurityTest {

	static final Duration WAIT = Duration.ofSeconds(20);

	static final MockModelServer MODEL = MockModelServer.builder().start();

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

	@AfterEach
	void builtLanesAndClosedBreaker() {
		guards.lanes().orElseThrow().resize(Priority.P2, 1);
		guards.breaker("model").orElseThrow().transitionToClosed();
	}

	private int status(WebClient.RequestHeadersSpec<?> call) {
		return call.exchangeToMono(response -> response.releaseBody().thenReturn(response.statusCode().value())).block(WAIT);
	}

	private int resizeP2(@Nullable String user, MediaType type, Object body) {
		return status(Http.as(port, user).post().uri("/actuator/aiguard/lanes/P2").contentType(type).bodyValue(body));
	}

	private int forceOpen(@Nullable String user) {
		return status(Http.as(port, user).post().uri("/actuator/aiguard/model")
			.contentType(MediaType.APPLICATION_JSON)
			.bodyValue(Map.of("state", "forced-open")));
	}

	private int p2() {
		return guards.lanes().orElseThrow().concurrency(Priority.P2);
	}

	@Test
	void anAnonymousWriteIsUnauthorized() {
		assertThat(resizeP2(null, MediaType.APPLICATION_JSON, Map.of("capacity", 0))).isEqualTo(401);
		assertThat(forceOpen(null)).isEqualTo(401);
		assertThat(p2()).isEqualTo(1);
		assertThat(guards.breaker("model").orElseThrow().state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void aWriteWithoutTheAdminRoleIsForbidden() {
		for (String user : new String[] { ChatApplication.OPS, ChatApplication.OTHER }) {
			assertThat(resizeP2(user, MediaType.APPLICATION_JSON, Map.of("capacity", 0))).as(user).isEqualTo(403);
			assertThat(forceOpen(user)).as(user).isEqualTo(403);
		}
		assertThat(p2()).isEqualTo(1);
		assertThat(guards.breaker("model").orElseThrow().state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void anAdministratorWrites() {
		assertThat(resizeP2(ChatApplication.ADMIN, MediaType.APPLICATION_JSON, Map.of("capacity", 0))).isEqualTo(200);
		assertThat(p2()).isZero();
		assertThat(forceOpen(ChatApplication.ADMIN)).isEqualTo(200);
		assertThat(guards.breaker("model").orElseThrow().state()).isEqualTo(BreakerState.FORCED_OPEN);
	}

	@Test
	void aFormOrTextPostIsRefusedEvenWithAdminCredentials() {
		// what a cross-site page can send without a CORS preflight: the Actuator reads JSON only
		assertThat(resizeP2(ChatApplication.ADMIN, MediaType.APPLICATION_FORM_URLENCODED, "capacity=0")).isEqualTo(415);
		assertThat(resizeP2(ChatApplication.ADMIN, MediaType.TEXT_PLAIN, "{\"capacity\":0}")).isEqualTo(415);
		assertThat(p2()).isEqualTo(1);
	}

	@Test
	void readsAreForOperatorsAndAdministrators() {
		assertThat(status(Http.as(port, null).get().uri("/actuator/aiguard"))).isEqualTo(401);
		assertThat(status(Http.as(port, ChatApplication.OTHER).get().uri("/actuator/aiguard"))).isEqualTo(403);
		assertThat(status(Http.as(port, ChatApplication.OPS).get().uri("/actuator/aiguard"))).isEqualTo(200);
		assertThat(status(Http.as(port, ChatApplication.ADMIN).get().uri("/actuator/aiguard/model"))).isEqualTo(200);
	}

	@Test
	@SuppressWarnings("unchecked")
	void healthIsOpenToAllAndItsDetailsToTheRoles() {
		assertThat(Http.json(Http.as(port, null).get().uri("/actuator/health/aiguard"))).isEqualTo(Map.of("status", "UP"));
		assertThat(Http.json(Http.as(port, ChatApplication.OTHER).get().uri("/actuator/health/aiguard")))
			.isEqualTo(Map.of("status", "UP"));
		for (String user : new String[] { ChatApplication.OPS, ChatApplication.ADMIN }) {
			Map<String, Object> group = Http.json(Http.as(port, user).get().uri("/actuator/health/aiguard"));
			Map<String, Object> breakers = (Map<String, Object>) ((Map<String, Object>) group.get("components"))
				.get("aiguardBreakers");
			Map<String, Object> model = (Map<String, Object>) ((Map<String, Object>) breakers.get("components")).get("model");
			assertThat(model).as(user).containsEntry("status", "UP");
			// the keys of the sample in docs/spring-boot.md
			assertThat((Map<String, Object>) model.get("details")).as(user).containsEntry("state", "CLOSED")
				.containsOnlyKeys("state", "degraded", "failureRate", "slowCallRate", "calls", "rejected");
		}
	}
}
