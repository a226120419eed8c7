package dev.aiguard.demo;

import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code GET / PUT / DELETE /api/faults}: exactly the contract's fields, checked, applied to the mock. */
class FaultsApiTest extends DemoTestSupport {

	@Test
	void getReturnsTheContractFieldsInOrder() {
		String body = client.get().uri("/api/faults").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody();

		assertThat(json.readTree(body).propertyNames()).containsExactlyElementsOf(FaultHandler.FIELDS);
		assertThat(json.readTree(body).get("stallAfterTokens").isNull()).isTrue();
	}

	@Test
	void putReplacesTheProfileAndDeleteResetsIt() {
		client.put().uri("/api/faults").contentType(MediaType.APPLICATION_JSON)
			.bodyValue("{\"stallAfterTokens\": 4, \"errorRate\": 0.25, \"errorStatus\": 429, \"retryAfterSeconds\": 2,"
					+ " \"contextLimitTokens\": 100, \"omitTerminal\": true, \"dropAfterTokens\": 9,"
					+ " \"firstTokenDelayMs\": 10, \"tokenIntervalMs\": 3}")
			.exchange().expectStatus().isOk()
			.expectBody().jsonPath("$.stallAfterTokens").isEqualTo(4).jsonPath("$.errorStatus").isEqualTo(429);

		assertThat(mock.faults().stallAfterTokens()).isEqualTo(4);
		assertThat(mock.faults().errorRate()).isEqualTo(0.25);
		assertThat(mock.faults().retryAfterSeconds()).isEqualTo(2);
		assertThat(mock.faults().contextLimitTokens()).isEqualTo(100);
		assertThat(mock.faults().omitTerminal()).isTrue();
		assertThat(mock.faults().dropAfterTokens()).isEqualTo(9);

		client.put().uri("/api/faults").contentType(MediaType.APPLICATION_JSON).bodyValue("{\"omitTerminal\": true}")
			.exchange().expectStatus().isOk();
		assertThat(mock.faults().stallAfterTokens()).as("PUT replaces the whole profile").isNull();
		assertThat(mock.faults().firstTokenDelayMs()).isEqualTo(mock.defaultFaults().firstTokenDelayMs());

		client.delete().uri("/api/faults").exchange().expectStatus().isOk()
			.expectBody().jsonPath("$.omitTerminal").isEqualTo(false);
		assertThat(mock.faults()).isEqualTo(mock.defaultFaults());
	}

	@Test
	void unknownFieldsAndBadValuesAre400NamingThem() {
		bad("{\"stallAfter\": 3}", "unknown_field", "unknown fault field 'stallAfter'");
		bad("{\"errorRate\": 2}", "invalid_fault", "errorRate must be between 0 and 1, was 2.0");
		bad("{\"errorStatus\": 503}", "invalid_fault", "errorStatus must be 500, 429 or 529, was 503");
		bad("{\"stallAfterTokens\": \"five\"}", "invalid_fault", "stallAfterTokens must be a whole number");
		bad("{\"omitTerminal\": 1}", "invalid_fault", "omitTerminal must be true or false");
		bad("not json", "malformed_json", "not valid JSON");
		assertThat(mock.faults()).as("a refused profile changes nothing").isEqualTo(mock.defaultFaults());
	}

	private void bad(String body, String code, String message) {
		client.put().uri("/api/faults").contentType(MediaType.APPLICATION_JSON).bodyValue(body)
			.exchange().expectStatus().isBadRequest()
			.expectBody().jsonPath("$.error").isEqualTo(code)
			.jsonPath("$.message").value(m -> assertThat((String) m).contains(message));
	}
}
