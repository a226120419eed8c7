package dev.aiguard.demo;

import java.time.Duration;

import dev.aiguard.GuardControl;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Priority;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code GET / PUT /api/policy}: a live change of the library client's policy, its audit trail, and
 * a bad value refused with a 400 naming the field while the policy in force stays. Each test puts the
 * policy it found back, for the other test classes of the shared context.
 */
class PolicyApiTest extends DemoTestSupport {

	@Autowired
	GuardControl<ChatChunk> libraryGuard;

	@Autowired
	MeterRegistry meters;

	GuardPolicy original;

	@BeforeEach
	void remember() {
		original = libraryGuard.policy();
	}

	@AfterEach
	void restore() {
		libraryGuard.replace("test-restore", original);
	}

	WebTestClient.ResponseSpec put(String body) {
		return client.put().uri("/api/policy").contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange();
	}

	double applied() {
		var c = meters.find("aiguard.policy.changes").tags("policy", "chat", "result", "applied").counter();
		return c == null ? 0 : c.count();
	}

	@Test
	void getShowsTheSettingsInForce() {
		client.get().uri("/api/policy").exchange().expectStatus().isOk()
			.expectBody()
			.jsonPath("$.policy").isEqualTo("chat")
			.jsonPath("$.firstTokenTimeoutMs").isEqualTo(original.stall().firstTokenTimeout().toMillis())
			.jsonPath("$.maxAttempts").isEqualTo(original.retry().maxAttempts())
			.jsonPath("$.priorities.P2.maxAttempts").isEqualTo(original.retry().maxAttempts())
			.jsonPath("$.settings['stall.idleTimeout']").isEqualTo(original.stall().idleTimeout().toString())
			.jsonPath("$.audit").isArray();
	}

	@Test
	void putAppliesALiveChangeAndTheTrailShowsIt() {
		double before = applied();
		long version = libraryGuard.version();
		put("{\"actor\": \"alice\", \"firstTokenTimeoutMs\": 1200, \"maxAttempts\": 2,"
				+ " \"priorities\": {\"P0\": {\"firstTokenTimeoutMs\": 900, \"maxAttempts\": 3},"
				+ " \"p2\": {\"maxAttempts\": 1, \"countedByBreaker\": false}}}")
			.expectStatus().isOk()
			.expectBody()
			.jsonPath("$.version").isEqualTo(version + 1)
			.jsonPath("$.firstTokenTimeoutMs").isEqualTo(1200)
			.jsonPath("$.idleTimeoutMs").isEqualTo(original.stall().idleTimeout().toMillis())
			.jsonPath("$.priorities.P0.firstTokenTimeoutMs").isEqualTo(900)
			.jsonPath("$.priorities.P1.firstTokenTimeoutMs").isEqualTo(1200)
			.jsonPath("$.priorities.P2.countedByBreaker").isEqualTo(false)
			.jsonPath("$.audit[0].actor").isEqualTo("alice")
			.jsonPath("$.audit[0].changes[0].setting").isEqualTo("stall.firstTokenTimeout")
			.jsonPath("$.audit[0].changes[0].before").isEqualTo(original.stall().firstTokenTimeout().toString())
			.jsonPath("$.audit[0].changes[0].after").isEqualTo("PT1.2S");

		GuardPolicy now = libraryGuard.policy();
		assertThat(now.stall(Priority.P0).firstTokenTimeout()).isEqualTo(Duration.ofMillis(900));
		assertThat(now.retry(Priority.P0).maxAttempts()).isEqualTo(3);
		assertThat(now.retry(Priority.P2).maxAttempts()).isEqualTo(1);
		assertThat(now.breaker()).as("the starter's shared breaker").isSameAs(breaker);
		assertThat(applied()).isEqualTo(before + 1);

		// the actor may come from the header; a priority set to null loses its overrides
		client.put().uri("/api/policy").header("X-Actor", "bob").contentType(MediaType.APPLICATION_JSON)
			.bodyValue("{\"priorities\": {\"P0\": null}}").exchange()
			.expectStatus().isOk()
			.expectBody()
			.jsonPath("$.priorities.P0.overridden").isEqualTo(false)
			.jsonPath("$.audit[0].actor").isEqualTo("bob")
			.jsonPath("$.audit[1].actor").isEqualTo("alice");
	}

	@Test
	void aBadValueIsA400NamingTheFieldAndChangesNothing() {
		long version = libraryGuard.version();
		put("{\"actor\": \"alice\", \"idleTimeoutMs\": 500, \"firstTokenTimeoutMs\": 0}")
			.expectStatus().isBadRequest()
			.expectBody()
			.jsonPath("$.error").isEqualTo("invalid_policy")
			.jsonPath("$.message").value(m -> assertThat((String) m).contains("firstTokenTimeout must be > 0"));
		put("{\"actor\": \"alice\", \"priorities\": {\"P1\": {\"laneConcurrency\": -2}}}")
			.expectStatus().isBadRequest()
			.expectBody()
			.jsonPath("$.message").value(m -> assertThat((String) m)
				.contains("priority.P1.laneConcurrency must be >= 0, was -2"));
		put("{\"actor\": \"alice\", \"maxAttempts\": \"three\"}")
			.expectStatus().isBadRequest()
			.expectBody().jsonPath("$.message").isEqualTo("maxAttempts must be a whole number, was \"three\"");
		put("{\"actor\": \"alice\", \"retries\": 2}")
			.expectStatus().isBadRequest()
			.expectBody().jsonPath("$.error").isEqualTo("unknown_field");
		put("{\"maxAttempts\": 2}")
			.expectStatus().isBadRequest()
			.expectBody().jsonPath("$.message").value(m -> assertThat((String) m).contains("actor"));

		assertThat(libraryGuard.version()).isEqualTo(version);
		assertThat(libraryGuard.policy()).isSameAs(original);
	}
}
