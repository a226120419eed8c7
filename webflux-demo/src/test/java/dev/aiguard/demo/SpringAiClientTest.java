package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;

import dev.aiguard.breaker.BreakerState;
import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import reactor.util.function.Tuple2;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.node.ObjectNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code POST /api/chat} answered through Spring AI's {@code ChatClient} and {@code OpenAiChatModel},
 * guarded by {@code AiGuardAdvisor} with the demo's policy: the same events as the library client,
 * the same breaker, the same ladder and the same cache, and no retries but the guard's.
 */
class SpringAiClientTest extends DemoTestSupport {

	@Autowired
	GuardStats stats;

	@Test
	void aNormalAnswerIsTheMocksAnswerInTheContractsEventsAtTheRequestedPriority() {
		String question = "What does Spring AI's ChatClient add?";
		long requestsBefore = stats.requests();
		long calls = mockRequests();
		String body = json.writeValueAsString(((ObjectNode) json.readTree(ask(question, AnswerClient.SPRING_AI)))
			.put("priority", "P2"));

		List<ServerSentEvent<String>> events = chatToEnd(body);

		JsonNode meta = data(events.get(0));
		assertThat(events.get(0).event()).isEqualTo("meta");
		assertThat(meta.propertyNames()).containsExactly("requestId", "priority", "client", "tenant");
		assertThat(meta.get("priority").stringValue()).isEqualTo("P2");
		assertThat(meta.get("tenant").stringValue()).isEqualTo("default");
		assertThat(meta.get("client").stringValue()).isEqualTo("spring-ai");
		List<String> expected = MockAnswers.tokens(question);
		assertThat(events.subList(1, events.size() - 1)).hasSize(expected.size())
			.allMatch(e -> "token".equals(e.event()));
		assertThat(text(events)).isEqualTo(MockAnswers.text(question)).isEqualTo(String.join("", expected));
		ServerSentEvent<String> done = last(events);
		assertThat(done.event()).isEqualTo("done");
		assertThat(data(done).get("source").stringValue()).isEqualTo("REALTIME");
		assertThat(data(done).get("finishReason").stringValue()).as("as the library client says it").isEqualTo("stop");
		assertThat(data(done).get("tokens").longValue()).isEqualTo(expected.size());
		assertThat(mockRequests()).isEqualTo(calls + 1);

		when(stats::requests, requestsBefore + 1).block(WAIT);
		GuardStats.Recent report = stats.recent().get(stats.recent().size() - 1);
		assertThat(report.client()).isEqualTo("spring-ai");
		assertThat(report.priority()).as("the guard admitted it in the P2 lane").isEqualTo("P2");
		assertThat(report.outcome()).isEqualTo("SUCCESS");
		assertThat(report.attempts()).isEqualTo(1);
		JsonNode snapshot = guardSnapshot();
		assertThat(snapshot.get("client").get("default").stringValue()).isEqualTo("library");
		assertThat(snapshot.get("client").get("available").toString()).isEqualTo("[\"library\",\"spring-ai\"]");
		assertThat(snapshot.get("counters").get("clients").get("spring-ai").longValue()).isPositive();
		JsonNode recent = snapshot.get("recent");
		assertThat(recent.get(recent.size() - 1).get("client").stringValue()).isEqualTo("spring-ai");
	}

	@Test
	void theQueryParameterChoosesTheClientUnlessTheBodyNamesOne() {
		List<ServerSentEvent<String>> fromQuery = client.post().uri("/api/chat?client=spring-ai")
			.contentType(MediaType.APPLICATION_JSON).bodyValue(ask("asked through the query"))
			.exchange().expectStatus().isOk().returnResult(SSE).getResponseBody().collectList().block(WAIT);
		assertThat(data(fromQuery.get(0)).get("client").stringValue()).isEqualTo("spring-ai");
		assertThat(text(fromQuery)).isEqualTo(MockAnswers.text("asked through the query"));

		List<ServerSentEvent<String>> fromBody = client.post().uri("/api/chat?client=spring-ai")
			.contentType(MediaType.APPLICATION_JSON).bodyValue(ask("the body wins", AnswerClient.LIBRARY))
			.exchange().expectStatus().isOk().returnResult(SSE).getResponseBody().collectList().block(WAIT);
		assertThat(data(fromBody.get(0)).get("client").stringValue()).isEqualTo("library");
		assertThat(last(fromBody).event()).isEqualTo("done");
	}

	@Test
	void aStallMidStreamEndsWithOneStalledErrorAtTheIdleDeadlineAndTheConnectionIsClosed() {
		faults(mock.faults().withStallAfter(3));
		long requestsBefore = stats.requests();
		String question = "Tell me a long story through Spring AI";

		List<Tuple2<Long, ServerSentEvent<String>>> timed = chat(ask(question, AnswerClient.SPRING_AI)).elapsed()
			.collectList()
			.block(WAIT);

		List<ServerSentEvent<String>> events = timed.stream().map(Tuple2::getT2).toList();
		assertThat(events).extracting(ServerSentEvent::event).containsExactly("meta", "token", "token", "token", "error");
		assertThat(text(events)).isEqualTo(String.join("", MockAnswers.tokens(question).subList(0, 3)));
		JsonNode error = data(last(events));
		assertThat(error.get("type").stringValue()).isEqualTo("stalled");
		assertThat(error.get("partial").booleanValue()).isTrue();
		// the guard's idle deadline is 400 ms: the error follows the third token by that, and no more than 100 ms later
		assertThat(timed.get(timed.size() - 1).getT1()).as("ms from the third token to the error").isBetween(300L, 500L);

		when(stats::requests, requestsBefore + 1).block(WAIT);
		GuardStats.Recent report = stats.recent().get(stats.recent().size() - 1);
		assertThat(report.client()).isEqualTo("spring-ai");
		assertThat(report.outcome()).isEqualTo("STALLED");
		assertThat(report.tokens()).isEqualTo(3);
		// the advisor's guard cancelled the model's stream; the SDK closes the connection once its
		// blocked read times out (aiguard.spring-ai.timeout, 3 s here)
		when(() -> mock.stats().inProgress() == 0 ? 1 : 0, 1).timeout(Duration.ofSeconds(5)).block();
	}

	@Test
	void aStormOf500sIsAnsweredByTheLadderAndOpensTheSharedBreakerWithoutRetriesOfTheSdk() {
		faults(mock.faults().withErrors(1.0, 500, 0));

		long requestsBefore = stats.requests();
		List<ServerSentEvent<String>> first = chatToEnd(ask("the first question while the model fails", AnswerClient.SPRING_AI));
		assertThat(last(first).event()).isEqualTo("done");
		assertThat(data(last(first)).get("source").stringValue()).isEqualTo("STATIC");
		assertThat(text(first)).startsWith("The assistant is busy right now");
		when(stats::requests, requestsBefore + 1).block(WAIT);
		GuardStats.Recent report = stats.recent().get(stats.recent().size() - 1);
		assertThat(report.attempts()).as("aiguard.policies.chat.retry.max-attempts").isEqualTo(3);
		assertThat(callsFor(PRIMARY)).as("one HTTP call per guard attempt: the SDK retried none").isEqualTo(3);
		assertThat(callsFor(SIBLING)).as("then the ladder asked the sibling model, which fails too").isEqualTo(1);

		for (int i = 0; i < 5 && breaker.state() != BreakerState.OPEN; i++) {
			List<ServerSentEvent<String>> events = chatToEnd(ask("question " + i + " while the model fails",
					AnswerClient.SPRING_AI));
			assertThat(data(last(events)).get("source").stringValue()).isEqualTo("STATIC");
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);

		long primaryCalls = callsFor(PRIMARY);
		long rejectedBefore = breaker.rejectedCalls();
		List<ServerSentEvent<String>> refused = chatToEnd(ask("and one more", AnswerClient.SPRING_AI));
		assertThat(data(last(refused)).get("source").stringValue()).isEqualTo("STATIC");
		assertThat(callsFor(PRIMARY)).as("an open breaker sends nothing to its model").isEqualTo(primaryCalls);
		assertThat(breaker.rejectedCalls()).isGreaterThan(rejectedBefore);
		List<ServerSentEvent<String>> canned = chatToEnd(ask("How does the circuit breaker work?", AnswerClient.SPRING_AI));
		assertThat(data(last(canned)).get("source").stringValue()).isEqualTo("LIGHTWEIGHT");
		assertThat(text(canned)).startsWith("The circuit breaker counts");
	}

	@Test
	void bothClientsShareOneCacheOfCompleteAnswers() {
		String viaLibrary = "cached through the library client";
		String viaSpringAi = "cached through the Spring AI client";
		List<ServerSentEvent<String>> live = chatToEnd(ask(viaLibrary, AnswerClient.LIBRARY));
		List<ServerSentEvent<String>> liveSpringAi = chatToEnd(ask(viaSpringAi, AnswerClient.SPRING_AI));
		assertThat(data(last(live)).get("source").stringValue()).isEqualTo("REALTIME");
		assertThat(data(last(liveSpringAi)).get("source").stringValue()).isEqualTo("REALTIME");

		// the whole provider: no sibling model to ask either
		treeBreaker("mock").transitionToForcedOpen();

		List<ServerSentEvent<String>> fromLibrary = chatToEnd(ask(viaLibrary, AnswerClient.SPRING_AI));
		assertThat(data(last(fromLibrary)).get("source").stringValue()).isEqualTo("CACHE");
		assertThat(text(fromLibrary)).isEqualTo(text(live)).isEqualTo(MockAnswers.text(viaLibrary));
		assertThat(data(last(fromLibrary)).get("finishReason").stringValue()).isEqualTo("stop");

		List<ServerSentEvent<String>> fromSpringAi = chatToEnd(ask(viaSpringAi, AnswerClient.LIBRARY));
		assertThat(data(last(fromSpringAi)).get("source").stringValue()).isEqualTo("CACHE");
		assertThat(text(fromSpringAi)).isEqualTo(text(liveSpringAi)).isEqualTo(MockAnswers.text(viaSpringAi));
		assertThat(data(last(fromSpringAi)).get("finishReason").stringValue()).isEqualTo("stop");
		assertThat(data(last(fromSpringAi)).get("tokens").longValue())
			.isEqualTo(MockAnswers.tokens(viaSpringAi).size());
	}

	private JsonNode guardSnapshot() {
		return json.readTree(client.get().uri("/api/guard").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody());
	}
}
