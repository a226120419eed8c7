package dev.aiguard.demo;

import dev.aiguard.test.mock.FaultProfile;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code GET / PUT / PATCH / DELETE /api/faults}: exactly the contract's fields, checked, applied to
 * the mock; concurrent partial changes all land.
 */
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
	void theAnswerFaultsAreTwoSwitchesAndAFinishReason() {
		patch("{\"emptyAnswer\": true, \"finishReason\": \"content_filter\", \"loopingAnswer\": true}")
			.expectStatus().isOk()
			.expectBody().jsonPath("$.emptyAnswer").isEqualTo(true).jsonPath("$.finishReason").isEqualTo("content_filter")
			.jsonPath("$.loopingAnswer").isEqualTo(true);
		assertThat(mock.faults().emptyAnswer()).isTrue();
		assertThat(mock.faults().finishReason()).isEqualTo("content_filter");
		assertThat(mock.faults().loopingAnswer()).isTrue();

		patch("{\"stallAfterTokens\": 3}").expectStatus().isOk();
		assertThat(mock.faults().finishReason()).as("another field's change keeps them").isEqualTo("content_filter");

		patch("{\"finishReason\": \"content filter\"}").expectStatus().isBadRequest()
			.expectBody().jsonPath("$.message").value(m -> assertThat((String) m).contains("finishReason"));
		patch("{\"finishReason\": 3}").expectStatus().isBadRequest()
			.expectBody().jsonPath("$.message").isEqualTo("finishReason must be a string, was 3");
		patch("{\"emptyAnswer\": \"yes\"}").expectStatus().isBadRequest()
			.expectBody().jsonPath("$.message").isEqualTo("emptyAnswer must be true or false, was \"yes\"");
		assertThat(mock.faults().emptyAnswer()).as("a refused change changes nothing").isTrue();

		patch("{\"emptyAnswer\": null, \"finishReason\": null, \"loopingAnswer\": false}").expectStatus().isOk()
			.expectBody().jsonPath("$.finishReason").isEmpty();
		assertThat(mock.faults().emptyAnswer()).isFalse();
		assertThat(mock.faults().finishReason()).isNull();
		assertThat(mock.faults().loopingAnswer()).isFalse();
	}

	@Test
	void failingModelsIsAListOfModelNamesOrNull() {
		assertThat(json.readTree(client.get().uri("/api/faults").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody()).get("failingModels").isEmpty())
			.as("every model answers").isTrue();

		patch("{\"failingModels\": [\"mock-large\"]}").expectStatus().isOk()
			.expectBody().jsonPath("$.failingModels[0]").isEqualTo("mock-large").jsonPath("$.failingModels.length()")
			.isEqualTo(1);
		assertThat(mock.faults().failingModels()).containsExactly("mock-large");

		patch("{\"stallAfterTokens\": 3}").expectStatus().isOk();
		assertThat(mock.faults().failingModels()).as("another field's change keeps it").containsExactly("mock-large");

		patch("{\"failingModels\": [\"mock-large\", \"mock-small\", \"mock-large\"]}").expectStatus().isOk()
			.expectBody().jsonPath("$.failingModels.length()").isEqualTo(2);
		assertThat(mock.faults().failingModels()).containsExactly("mock-large", "mock-small");

		patch("{\"failingModels\": \"mock-large\"}").expectStatus().isBadRequest()
			.expectBody().jsonPath("$.message").isEqualTo("failingModels must be an array of model names, was \"mock-large\"");
		patch("{\"failingModels\": [1]}").expectStatus().isBadRequest()
			.expectBody().jsonPath("$.message").isEqualTo("failingModels must hold model names (strings), was 1");
		patch("{\"failingModels\": [\"mock large\"]}").expectStatus().isBadRequest()
			.expectBody().jsonPath("$.error").isEqualTo("invalid_fault")
			.jsonPath("$.message").value(m -> assertThat((String) m).contains("failingModels", "'mock large'"));
		assertThat(mock.faults().failingModels()).as("a refused change changes nothing")
			.containsExactly("mock-large", "mock-small");

		patch("{\"failingModels\": null}").expectStatus().isOk()
			.expectBody().jsonPath("$.failingModels.length()").isEqualTo(0);
		assertThat(mock.faults().failingModels()).isEmpty();
		patch("{\"failingModels\": [\"mock-small\"]}").expectStatus().isOk();
		patch("{\"failingModels\": []}").expectStatus().isOk();
		assertThat(mock.faults().failingModels()).isEmpty();
	}

	@Test
	void loadPressureIsACapacityOrNull() {
		patch("{\"loadPressureCapacity\": 4}").expectStatus().isOk()
			.expectBody().jsonPath("$.loadPressureCapacity").isEqualTo(4);
		assertThat(mock.faults().loadPressure()).isEqualTo(FaultHandler.pressure(4));

		patch("{\"stallAfterTokens\": 3}").expectStatus().isOk();
		assertThat(mock.faults().loadPressure()).as("another field's change keeps it").isEqualTo(FaultHandler.pressure(4));

		patch("{\"loadPressureCapacity\": 0}").expectStatus().isBadRequest()
			.expectBody().jsonPath("$.message").isEqualTo("loadPressureCapacity must be between 1 and 1000, was 0");
		patch("{\"loadPressureCapacity\": null}").expectStatus().isOk()
			.expectBody().jsonPath("$.loadPressureCapacity").isEmpty();
		assertThat(mock.faults().loadPressure()).isNull();
	}

	@Test
	void patchChangesTheNamedFieldsKeepsTheOthersAndNullResetsOne() {
		faults(mock.faults().withStallAfter(5).withPace(20, 3));

		patch("{\"dropAfterTokens\": 8, \"errorRate\": 0.5, \"errorStatus\": 429, \"retryAfterSeconds\": 1}")
			.expectStatus().isOk()
			.expectBody().jsonPath("$.stallAfterTokens").isEqualTo(5).jsonPath("$.dropAfterTokens").isEqualTo(8);
		assertThat(mock.faults()).isEqualTo(mock.defaultFaults().withPace(20, 3).withStallAfter(5).withDropAfter(8)
			.withErrors(0.5, 429, 1));

		patch("{\"stallAfterTokens\": null, \"firstTokenDelayMs\": null}").expectStatus().isOk();
		assertThat(mock.faults()).as("null: back to the reset value").isEqualTo(mock.defaultFaults()
			.withPace(mock.defaultFaults().firstTokenDelayMs(), 3).withDropAfter(8).withErrors(0.5, 429, 1));

		FaultProfile before = mock.faults();
		patch("{\"omitTerminal\": true, \"errorRate\": 7}").expectStatus().isBadRequest()
			.expectBody().jsonPath("$.message").isEqualTo("errorRate must be between 0 and 1, was 7.0");
		patch("{\"omitTerminal\": true, \"stall\": 1}").expectStatus().isBadRequest()
			.expectBody().jsonPath("$.error").isEqualTo("unknown_field");
		assertThat(mock.faults()).as("a refused change changes nothing, not even its valid fields").isEqualTo(before);
	}

	@Test
	void concurrentPartialUpdatesOverHttpAllLand() {
		for (int round = 0; round < 10; round++) {
			mock.resetFaults();
			RaceTestUtils.race(
					() -> patch("{\"stallAfterTokens\": 5}").expectStatus().isOk(),
					() -> patch("{\"dropAfterTokens\": 8}").expectStatus().isOk(),
					() -> patch("{\"omitTerminal\": true}").expectStatus().isOk(),
					() -> patch("{\"errorRate\": 1, \"errorStatus\": 529}").expectStatus().isOk(),
					() -> patch("{\"contextLimitTokens\": 120}").expectStatus().isOk(),
					() -> patch("{\"firstTokenDelayMs\": 6000}").expectStatus().isOk());
			assertThat(mock.faults()).as("round %d", round).isEqualTo(everySwitch());
		}
	}

	@Test
	void concurrentPartialUpdatesOfTheHandlerAllLand() {
		FaultHandler handler = new FaultHandler(mock, json);
		for (int round = 0; round < 2_000; round++) {
			mock.resetFaults();
			RaceTestUtils.race(
					() -> handler.apply(mock, "{\"stallAfterTokens\": 5}", true),
					() -> handler.apply(mock, "{\"dropAfterTokens\": 8}", true),
					() -> handler.apply(mock, "{\"omitTerminal\": true}", true),
					() -> handler.apply(mock, "{\"errorRate\": 1, \"errorStatus\": 529}", true),
					() -> handler.apply(mock, "{\"contextLimitTokens\": 120}", true),
					() -> handler.apply(mock, "{\"firstTokenDelayMs\": 6000}", true));
			assertThat(mock.faults()).as("round %d", round).isEqualTo(everySwitch());
		}
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

	/** The six changes of the race tests, all applied. */
	private FaultProfile everySwitch() {
		FaultProfile d = mock.defaultFaults();
		return d.withPace(6000, d.tokenIntervalMs()).withStallAfter(5).withDropAfter(8).withOmitTerminal(true)
			.withErrors(1.0, 529, 0).withContextLimit(120);
	}

	private WebTestClient.ResponseSpec patch(String body) {
		return client.patch().uri("/api/faults").contentType(MediaType.APPLICATION_JSON).bodyValue(body).exchange();
	}

	private void bad(String body, String code, String message) {
		client.put().uri("/api/faults").contentType(MediaType.APPLICATION_JSON).bodyValue(body)
			.exchange().expectStatus().isBadRequest()
			.expectBody().jsonPath("$.error").isEqualTo(code)
			.jsonPath("$.message").value(m -> assertThat((String) m).contains(message));
	}
}
