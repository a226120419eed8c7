package dev.aiguard.demo;

import java.util.List;

import dev.aiguard.core.Secrets;
import dev.aiguard.test.mock.FaultProfile;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.http.codec.ServerSentEvent;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What reaches the browser when the upstream fails: the error's type and sentence, never the
 * upstream's address nor the key, through either client. The mock plays a careless provider that
 * echoes the request's key in its 401 body and in an in-band error event.
 */
class ClientFacingErrorsTest extends DemoTestSupport {

	private static final String KEY = ModelUpstream.MOCK_KEY;

	@ParameterizedTest
	@EnumSource(AnswerClient.class)
	void aDroppedConnectionsErrorNamesNoAddress(AnswerClient via) {
		faults(mock.faults().withDropAfter(3));
		List<ServerSentEvent<String>> events = chatToEnd(ask("drop me", via));
		JsonNode error = data(last(events));
		assertThat(last(events).event()).isEqualTo("error");
		assertThat(error.get("type").stringValue()).isEqualTo("connection");
		String port = Integer.toString(java.net.URI.create(mock.baseUrl()).getPort());
		assertThat(error.get("message").stringValue()).as("the browser learns what failed, not where")
			.doesNotContain("http", "127.0.0.1", "localhost", port)
			.isNotBlank();
	}

	@ParameterizedTest
	@EnumSource(AnswerClient.class)
	void aKeyEchoedInA401BodyNeverReachesTheBrowser(AnswerClient via) {
		faults(mock.faults().withErrors(1.0, 401, 0)
			.withErrorBody("{\"error\":{\"message\":\"Incorrect API key provided: {api_key}. See "
					+ "https://platform.example/keys\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}"));
		List<ServerSentEvent<String>> events = chatToEnd(ask("who am I", via));
		assertThat(last(events).event()).isEqualTo("error");
		assertThat(data(last(events)).get("type").stringValue()).isEqualTo("client_error");
		assertThat(modelRequests()).as("the mock was asked, with the key, and echoed it")
			.anyMatch(r -> r.headers().toString().contains(KEY));
		assertNoKeyIn(events);
		assertNoKeyIn(guardStatus());
	}

	@ParameterizedTest
	@EnumSource(AnswerClient.class)
	void aKeyEchoedInAnInBandErrorNeverReachesTheBrowser(AnswerClient via) {
		faults(mock.faults().withInBandError(2, "invalid_api_key"));
		List<ServerSentEvent<String>> events = chatToEnd(ask("echo in band", via));
		assertThat(last(events).event()).isEqualTo("error");
		assertNoKeyIn(events);
		assertNoKeyIn(guardStatus());
	}

	private static void assertNoKeyIn(List<ServerSentEvent<String>> events) {
		events.forEach(e -> assertNoKeyIn(e.data()));
	}

	private static void assertNoKeyIn(String shown) {
		assertThat(shown).doesNotContain(KEY);
		assertThat(Secrets.containsSecret(shown, KEY)).as("nothing shaped like a credential: %s", shown).isFalse();
	}

	private String guardStatus() {
		return client.get().uri("/api/guard").exchange().expectStatus().isOk().expectBody(String.class).returnResult()
			.getResponseBody();
	}
}
