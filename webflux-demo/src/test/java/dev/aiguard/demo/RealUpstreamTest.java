package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;

import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.reactive.server.WebTestClient;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo in front of a "real" OpenAI-compatible server named by {@code AIGUARD_BASE_URL} (here a
 * mock started outside the app): answers flow through both clients (Spring AI's by default here,
 * {@code aiguard.chat.client=spring-ai}), fault injection is refused, and the API key shows up in
 * no response and no log line.
 */
@ExtendWith(OutputCaptureExtension.class)
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = "aiguard.chat.client=spring-ai")
class RealUpstreamTest {

	static final String KEY = "sk-demo-THIS-KEY-MUST-STAY-SECRET-42";

	static final JsonMapper JSON = JsonMapper.builder().build();

	/**
	 * The longest an answer may take. The failing answer runs three attempts with back-off and
	 * then the ladder against a server that always fails: a few seconds normally, several times
	 * that on a CI machine running other builds. A stream that never ends still fails the test.
	 */
	static final Duration WAIT = Duration.ofSeconds(60);

	static final MockModelServer provider = MockModelServer.builder().random(() -> 0.0).build();

	@DynamicPropertySource
	static void upstream(DynamicPropertyRegistry registry) {
		provider.start();
		registry.add("aiguard.base-url", provider::baseUrl);
		registry.add("aiguard.api-key", () -> KEY);
		registry.add("aiguard.model", () -> "gpt-test");
	}

	@AfterAll
	static void stopProvider() {
		provider.stop();
	}

	@LocalServerPort
	int port;

	WebTestClient client;

	@BeforeEach
	void client() {
		provider.resetFaults();
		client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(WAIT)
			.build();
	}

	@Test
	void answersComeFromTheNamedServerAndTheKeyNeverShows(CapturedOutput output) {
		List<ServerSentEvent<String>> ok = chat("Hello real world");
		assertThat(JSON.readTree(ok.get(0).data()).get("client").stringValue()).as("aiguard.chat.client")
			.isEqualTo("spring-ai");
		assertThat(text(ok)).isEqualTo(MockAnswers.text("Hello real world"));
		assertThat(ok.get(ok.size() - 1).event()).isEqualTo("done");
		List<ServerSentEvent<String>> library = chat("Hello library", "library");
		assertThat(JSON.readTree(library.get(0).data()).get("client").stringValue()).isEqualTo("library");
		assertThat(text(library)).isEqualTo(MockAnswers.text("Hello library"));
		assertThat(provider.stats().requests()).as("one call per answer, each client with the key").isEqualTo(2);

		provider.faults(provider.faults().withErrors(1.0, 500, 0));
		List<ServerSentEvent<String>> failed = chat("and now it fails");
		assertThat(failed.get(failed.size() - 1).event()).isIn("error", "done");

		StringBuilder seen = new StringBuilder();
		ok.forEach(e -> seen.append(e.data()));
		library.forEach(e -> seen.append(e.data()));
		failed.forEach(e -> seen.append(e.data()));
		for (String path : List.of("/api/guard", "/actuator/health", "/actuator/prometheus", "/", "/app.js", "/chat.js",
				"/faults.js", "/panel.js", "/policy.js")) {
			seen.append(client.get().uri(path).exchange().expectStatus().isOk().expectBody(String.class).returnResult()
				.getResponseBody());
		}
		String faults = client.get().uri("/api/faults").exchange().expectStatus().isEqualTo(409)
			.expectBody(String.class).returnResult().getResponseBody();
		seen.append(faults);

		assertThat(faults).contains("no_mock");
		assertThat(seen.toString()).contains("gpt-test").doesNotContain(KEY).doesNotContain("THIS-KEY");
		assertThat(output.getAll()).doesNotContain(KEY).doesNotContain("THIS-KEY");
		assertThat(provider.stats().requests()).as("the named server was asked").isPositive();
	}

	private List<ServerSentEvent<String>> chat(String question) {
		return chat(question, null);
	}

	/** @param answerClient the client to name in the body, or {@code null} for the default */
	private List<ServerSentEvent<String>> chat(String question, String answerClient) {
		return client.post().uri("/api/chat").contentType(MediaType.APPLICATION_JSON)
			.bodyValue("{\"messages\":[{\"role\":\"user\",\"content\":\"" + question + "\"}]"
					+ (answerClient == null ? "" : ",\"client\":\"" + answerClient + "\"") + "}")
			.exchange().expectStatus().isOk()
			.returnResult(new ParameterizedTypeReference<ServerSentEvent<String>>() {
			})
			.getResponseBody().collectList().block(WAIT);
	}

	private static String text(List<ServerSentEvent<String>> events) {
		return String.join("", events.stream().filter(e -> "token".equals(e.event()))
			.map(e -> JSON.readTree(e.data()).get("text").stringValue()).toList());
	}
}
