package dev.aiguard.demo;

import java.util.List;

import dev.aiguard.breaker.BreakerState;
import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.Test;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The chat's breaker path through the tree ({@code llm → mock → mock-large}) against the embedded
 * mock, switched through {@code PATCH /api/faults} as the page does: with the primary model down,
 * its endpoint breaker opens while the provider stays closed, and every answer comes from the
 * sibling model {@code mock-small} (the ladder's {@code FALLBACK_MODEL} step, a real call to the
 * mock under the sibling's name); with every model down, the provider trips on the correlated
 * failure and nothing reaches the mock any more.
 */
class SiblingFallbackTest extends DemoTestSupport {

	@Test
	void withThePrimaryModelDownTheSiblingAnswersAndOnlyTheEndpointOpens() {
		failModels("[\"mock-large\"]");

		List<ServerSentEvent<String>> first = chatToEnd(ask("Which model answers me now?"));
		JsonNode done = data(last(first));
		assertThat(last(first).event()).isEqualTo("done");
		assertThat(done.get("source").stringValue()).as("the ladder's first step").isEqualTo("FALLBACK_MODEL");
		assertThat(done.get("model").stringValue()).isEqualTo(SIBLING);
		assertThat(done.get("finishReason").stringValue()).isEqualTo("stop");
		assertThat(text(first)).as("the mock's own answer, asked under the sibling's name")
			.isEqualTo(MockAnswers.text("Which model answers me now?"));
		assertThat(callsFor(PRIMARY)).as("aiguard.policies.chat.retry.max-attempts, all refused").isEqualTo(3);
		assertThat(callsFor(SIBLING)).isEqualTo(1);
		assertThat(mock.lastRequest().body()).contains("\"model\":\"mock-small\"");

		for (int i = 0; i < 4 && breaker.state() != BreakerState.OPEN; i++) {
			List<ServerSentEvent<String>> events = chatToEnd(ask("primary down, question " + i));
			assertThat(data(last(events)).get("source").stringValue()).isEqualTo("FALLBACK_MODEL");
			assertThat(text(events)).isEqualTo(MockAnswers.text("primary down, question " + i));
		}
		assertThat(breaker.state()).as("llm/mock/mock-large").isEqualTo(BreakerState.OPEN);
		assertThat(treeBreaker("mock").state()).as("one model failing never trips its provider")
			.isEqualTo(BreakerState.CLOSED);
		assertThat(treeBreaker("mock", SIBLING).state()).isEqualTo(BreakerState.CLOSED);
		assertThat(tree.root().breaker().state()).isEqualTo(BreakerState.CLOSED);

		long primaryCalls = callsFor(PRIMARY);
		long siblingCalls = callsFor(SIBLING);
		long refused = breaker.rejectedCalls();
		List<ServerSentEvent<String>> whileOpen = chatToEnd(ask("And while its breaker is open?"));
		assertThat(data(last(whileOpen)).get("source").stringValue()).isEqualTo("FALLBACK_MODEL");
		assertThat(data(last(whileOpen)).get("model").stringValue()).isEqualTo(SIBLING);
		assertThat(text(whileOpen)).isEqualTo(MockAnswers.text("And while its breaker is open?"));
		assertThat(callsFor(PRIMARY)).as("the open endpoint sends nothing to its model").isEqualTo(primaryCalls);
		assertThat(callsFor(SIBLING)).isEqualTo(siblingCalls + 1);
		assertThat(breaker.rejectedCalls()).isEqualTo(refused + 1);

		List<ServerSentEvent<String>> springAi = chatToEnd(ask("Spring AI while the primary is down",
				AnswerClient.SPRING_AI));
		assertThat(data(last(springAi)).get("source").stringValue()).as("the same ladder in the advisor")
			.isEqualTo("FALLBACK_MODEL");
		assertThat(data(last(springAi)).get("model").stringValue()).isEqualTo(SIBLING);
		assertThat(text(springAi)).isEqualTo(MockAnswers.text("Spring AI while the primary is down"));

		JsonNode provider = guardSnapshot().get("breakerTree").get("children").get(0);
		assertThat(provider.get("state").stringValue()).isEqualTo("CLOSED");
		assertThat(provider.get("children").get(0).get("state").stringValue()).isEqualTo("OPEN");
		assertThat(provider.get("children").get(0).get("rejectedCalls").longValue()).isGreaterThanOrEqualTo(2);
		assertThat(provider.get("children").get(1).get("state").stringValue()).isEqualTo("CLOSED");
		assertThat(provider.get("children").get(1).get("calls").longValue()).isEqualTo(callsFor(SIBLING));
		assertThat(provider.get("children").get(1).get("failureRate").doubleValue()).isZero();
	}

	@Test
	void withEveryModelDownTheProviderTripsAndNothingReachesTheMock() {
		failModels("[\"mock-large\", \"mock-small\"]");

		for (int i = 0; i < 10 && treeBreaker("mock").state() != BreakerState.OPEN; i++) {
			List<ServerSentEvent<String>> events = chatToEnd(ask("outage question " + i));
			assertThat(last(events).event()).isEqualTo("done");
			assertThat(data(last(events)).get("source").stringValue()).as("question %d", i).isEqualTo("STATIC");
		}
		assertThat(treeBreaker("mock").state()).as("both models failing: a correlated failure")
			.isEqualTo(BreakerState.OPEN);
		assertThat(treeBreaker("mock", PRIMARY).state()).isEqualTo(BreakerState.OPEN);
		assertThat(treeBreaker("mock", SIBLING).state()).isEqualTo(BreakerState.OPEN);
		assertThat(tree.root().breaker().state()).as("one provider failing cannot trip the system")
			.isEqualTo(BreakerState.CLOSED);

		long upstream = mockRequests();
		long refusedByProvider = treeBreaker("mock").rejectedCalls();
		List<ServerSentEvent<String>> events = chatToEnd(ask("anyone there?"));
		assertThat(data(last(events)).get("source").stringValue()).isEqualTo("STATIC");
		assertThat(mockRequests()).as("the provider refuses the primary, and has no sibling to offer")
			.isEqualTo(upstream);
		assertThat(treeBreaker("mock").rejectedCalls()).isGreaterThan(refusedByProvider);

		JsonNode root = guardSnapshot().get("breakerTree");
		assertThat(root.get("state").stringValue()).isEqualTo("CLOSED");
		assertThat(root.get("children").get(0).get("state").stringValue()).isEqualTo("OPEN");
		assertThat(root.get("children").get(0).get("failureRate").doubleValue()).isEqualTo(1.0);
	}

	/** The page's model switches: {@code PATCH /api/faults} with {@code failingModels}. */
	private void failModels(String names) {
		client.patch().uri("/api/faults").contentType(MediaType.APPLICATION_JSON)
			.bodyValue("{\"failingModels\": " + names + "}")
			.exchange().expectStatus().isOk();
	}

	private JsonNode guardSnapshot() {
		return json.readTree(client.get().uri("/api/guard").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody());
	}
}
