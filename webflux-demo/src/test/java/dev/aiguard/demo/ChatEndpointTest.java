package dev.aiguard.demo;

import java.util.List;

import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import reactor.test.StepVerifier;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/** The demo contract of {@code POST /api/chat}, against the running app, for each fault of the mock. */
class ChatEndpointTest extends DemoTestSupport {

	@Autowired
	GuardStats stats;

	@Test
	void normalAnswerIsMetaThenEveryTokenThenDoneFromTheReport() {
		List<ServerSentEvent<String>> events = chatToEnd(ask("What does a circuit breaker do?"));

		assertThat(events.get(0).event()).isEqualTo("meta");
		JsonNode meta = data(events.get(0));
		assertThat(meta.propertyNames()).containsExactly("requestId", "priority", "client", "tenant");
		assertThat(meta.get("requestId").stringValue()).isNotBlank();
		assertThat(meta.get("priority").stringValue()).isEqualTo("P1");
		assertThat(meta.get("client").stringValue()).as("aiguard.chat.client's default").isEqualTo("library");
		assertThat(meta.get("tenant").stringValue()).as("aiguard.budgets.default-tenant").isEqualTo("default");

		List<String> expected = MockAnswers.tokens("What does a circuit breaker do?");
		assertThat(events.subList(1, events.size() - 1)).hasSize(expected.size()).allMatch(e -> "token".equals(e.event()));
		assertThat(text(events)).isEqualTo(String.join("", expected));

		ServerSentEvent<String> done = last(events);
		assertThat(done.event()).isEqualTo("done");
		JsonNode d = data(done);
		assertThat(d.propertyNames()).containsExactly("source", "finishReason", "tokens", "model", "load", "why");
		// the demo's governor is on: an idle service is HEALTHY and sends every priority to the model
		assertThat(d.get("load").get("level").stringValue()).isEqualTo("HEALTHY");
		assertThat(d.get("load").get("action").stringValue()).isEqualTo("REALTIME");
		assertThat(d.get("why").isNull()).as("the model answered").isTrue();
		assertThat(d.get("source").stringValue()).isEqualTo("REALTIME");
		assertThat(d.get("model").stringValue()).as("the chat's model, the end of its breaker path").isEqualTo(PRIMARY);
		assertThat(mock.lastRequest().body()).contains("\"model\":\"mock-large\"");
		assertThat(d.get("finishReason").stringValue()).isEqualTo("stop");
		assertThat(d.get("tokens").longValue()).isEqualTo(expected.size());
	}

	@Test
	void eachRequestGetsItsOwnRequestIdAndAnswer() {
		List<ServerSentEvent<String>> first = chatToEnd(ask("first question"));
		List<ServerSentEvent<String>> second = chatToEnd(ask("second question"));

		assertThat(data(first.get(0)).get("requestId")).isNotEqualTo(data(second.get(0)).get("requestId"));
		assertThat(text(first)).isEqualTo(MockAnswers.text("first question")).isNotEqualTo(text(second));
	}

	@Test
	void priorityComesFromTheHeaderUnlessTheBodyNamesOne() {
		List<ServerSentEvent<String>> fromHeader = client.post().uri("/api/chat")
			.contentType(MediaType.APPLICATION_JSON).header("X-Priority", "p0").bodyValue(ask("urgent"))
			.exchange().expectStatus().isOk().returnResult(SSE).getResponseBody().collectList().block(WAIT);
		assertThat(data(fromHeader.get(0)).get("priority").stringValue()).isEqualTo("P0");
		assertThat(last(fromHeader).event()).isEqualTo("done");

		String bodyWithPriority = "{\"messages\":[{\"role\":\"user\",\"content\":\"batch\"}],\"priority\":\"P2\"}";
		List<ServerSentEvent<String>> fromBody = client.post().uri("/api/chat")
			.contentType(MediaType.APPLICATION_JSON).header("X-Priority", "P0").bodyValue(bodyWithPriority)
			.exchange().expectStatus().isOk().returnResult(SSE).getResponseBody().collectList().block(WAIT);
		assertThat(data(fromBody.get(0)).get("priority").stringValue()).isEqualTo("P2");
	}

	@Test
	void stallMidStreamEndsWithOneStalledErrorAfterThePartialAnswer() {
		faults(mock.faults().withStallAfter(3));

		List<ServerSentEvent<String>> events = chatToEnd(ask("Tell me a long story"));

		assertThat(events).extracting(ServerSentEvent::event).containsExactly("meta", "token", "token", "token", "error");
		JsonNode error = data(last(events));
		assertThat(error.propertyNames()).containsExactly("type", "message", "partial");
		assertThat(error.get("type").stringValue()).isEqualTo("stalled");
		assertThat(error.get("partial").booleanValue()).isTrue();
		assertThat(text(events)).isEqualTo(String.join("", MockAnswers.tokens("Tell me a long story").subList(0, 3)));
		// the guard gave up on the silent stream and closed it: the mock sees the client leave
		StepVerifier.create(when(() -> mock.stats().cancelled(), 1)).expectNextCount(1).verifyComplete();
	}

	@Test
	void droppedConnectionEndsWithAConnectionErrorMarkedPartial() {
		faults(mock.faults().withDropAfter(4));

		List<ServerSentEvent<String>> events = chatToEnd(ask("Hello there"));

		assertThat(events).extracting(ServerSentEvent::event).containsExactly("meta", "token", "token", "token", "token",
				"error");
		JsonNode error = data(last(events));
		assertThat(error.get("type").stringValue()).isEqualTo("connection");
		assertThat(error.get("partial").booleanValue()).isTrue();
	}

	@Test
	void missingTerminalMarkerIsAnIncompleteAnswerNotASuccess() {
		faults(mock.faults().withOmitTerminal(true));

		List<ServerSentEvent<String>> events = chatToEnd(ask("Hello there"));

		assertThat(text(events)).isEqualTo(MockAnswers.text("Hello there"));
		ServerSentEvent<String> end = last(events);
		assertThat(end.event()).isEqualTo("error");
		assertThat(data(end).get("type").stringValue()).isEqualTo("incomplete");
		assertThat(data(end).get("partial").booleanValue()).isTrue();
		assertThat(events).filteredOn(e -> "done".equals(e.event())).isEmpty();
	}

	@Test
	void closingTheResponseCancelsTheUpstreamCallAtTheMock() {
		faults(mock.faults().withPace(0, 200));
		long cancelledBefore = mock.stats().cancelled();
		long cancelledReportsBefore = stats.outcomes().get("CANCELLED");

		StepVerifier.create(chat(ask("a slow answer, please")))
			.expectNextMatches(e -> "meta".equals(e.event()))
			.expectNextMatches(e -> "token".equals(e.event()))
			.thenCancel()
			.verify(WAIT);

		StepVerifier.create(when(() -> mock.stats().cancelled(), cancelledBefore + 1)).expectNextCount(1).verifyComplete();
		StepVerifier.create(when(() -> stats.outcomes().get("CANCELLED"), cancelledReportsBefore + 1))
			.expectNextCount(1)
			.verifyComplete();
		assertThat(mock.stats().completed()).as("the mock never finished that answer").isLessThan(mock.stats().requests());
	}

	@Test
	void faultsApplyOnlyToRequestsThatArriveAfterThem() {
		faults(mock.faults().withPace(0, 30));
		StepVerifier.create(chat(ask("started before the fault")))
			.expectNextMatches(e -> "meta".equals(e.event()))
			.expectNextMatches(e -> "token".equals(e.event()))
			.then(() -> mock.faults(mock.faults().withStallAfter(0)))
			.thenConsumeWhile(e -> "token".equals(e.event()))
			.expectNextMatches(e -> "done".equals(e.event()))
			.verifyComplete();
	}

	@Test
	void guardSnapshotShowsBreakerLanesCountersAndTheMock() {
		chatToEnd(ask("count me"));

		JsonNode snapshot = json.readTree(client.get().uri("/api/guard").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody());

		assertThat(snapshot.get("breaker").get("state").stringValue()).isEqualTo("CLOSED");
		assertThat(snapshot.get("lanes").propertyNames()).containsExactly("P0", "P1", "P2");
		assertThat(snapshot.get("lanes").get("P1").propertyNames()).contains("capacity", "inFlight", "borrowed", "queued");
		assertThat(snapshot.get("counters").get("requests").longValue()).isPositive();
		assertThat(snapshot.get("counters").get("outcomes").get("SUCCESS").longValue()).isPositive();
		assertThat(snapshot.get("recent").size()).isPositive();
		assertThat(snapshot.get("mock").get("requests").longValue()).isPositive();
		assertThat(snapshot.get("mock").get("baseUrl").stringValue()).isEqualTo(mock.baseUrl());
		assertThat(snapshot.has("load")).isTrue();
	}

	@Test
	void guardSnapshotShowsTheBreakerTreeWithLiveStatesAndCounts() {
		chatToEnd(ask("count me in the tree"));
		JsonNode snapshot = json.readTree(client.get().uri("/api/guard").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody());
		JsonNode tree = snapshot.get("breakerTree");

		assertThat(snapshot.get("breaker").get("name").stringValue()).as("the breaker card: the chat's endpoint")
			.isEqualTo("llm/mock/mock-large");
		assertThat(tree.get("name").stringValue()).isEqualTo("llm");
		assertThat(tree.get("level").stringValue()).isEqualTo("SYSTEM");
		assertThat(tree.get("state").stringValue()).isEqualTo("CLOSED");
		assertThat(tree.get("calls").longValue()).as("the one answer passed the system").isEqualTo(1);
		assertThat(tree.get("children").size()).as("one upstream: the mock").isEqualTo(1);
		JsonNode mockProvider = tree.get("children").get(0);
		assertThat(mockProvider.get("breaker").stringValue()).isEqualTo("llm/mock");
		assertThat(mockProvider.get("level").stringValue()).isEqualTo("PROVIDER");
		assertThat(mockProvider.get("calls").longValue()).isEqualTo(1);
		JsonNode endpoints = mockProvider.get("children");
		assertThat(endpoints.size()).isEqualTo(2);
		assertThat(endpoints.get(0).get("name").stringValue()).isEqualTo(PRIMARY);
		assertThat(endpoints.get(0).get("breaker").stringValue()).isEqualTo("llm/mock/mock-large");
		assertThat(endpoints.get(0).get("calls").longValue()).isEqualTo(1);
		assertThat(endpoints.get(1).get("name").stringValue()).isEqualTo(SIBLING);
		assertThat(endpoints.get(1).get("level").stringValue()).isEqualTo("ENDPOINT");
		assertThat(endpoints.get(1).get("calls").longValue()).isZero();
		assertThat(endpoints.get(1).propertyNames()).contains("failureRate", "rejectedCalls", "children");

		long refusedBefore = endpoints.get(0).get("rejectedCalls").longValue();
		breaker.transitionToForcedOpen();
		chatToEnd(ask("refused at the endpoint"));
		JsonNode after = json.readTree(client.get().uri("/api/guard").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody()).get("breakerTree").get("children").get(0);
		assertThat(after.get("children").get(0).get("state").stringValue()).isEqualTo("FORCED_OPEN");
		assertThat(after.get("children").get(0).get("rejectedCalls").longValue()).as("refused since start")
			.isEqualTo(refusedBefore + 1);
		assertThat(after.get("children").get(1).get("calls").longValue()).as("the sibling answered").isEqualTo(1);
		assertThat(after.get("state").stringValue()).isEqualTo("CLOSED");
	}

	@Test
	void answersStillFlowAfterTheMockIsStoppedAndStartedOnAnotherPort() {
		// Spring's test framework pauses cached contexts (stopping lifecycle beans) between classes
		String before = mock.baseUrl();
		chatToEnd(ask("before the restart"));
		mock.stop();
		mock.start();
		assertThat(mock.baseUrl()).isNotEqualTo(before);

		List<ServerSentEvent<String>> events = chatToEnd(ask("after the restart"));

		assertThat(last(events).event()).isEqualTo("done");
		assertThat(data(last(events)).get("source").stringValue()).isEqualTo("REALTIME");
	}
}
