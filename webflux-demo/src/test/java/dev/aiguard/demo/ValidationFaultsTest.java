package dev.aiguard.demo;

import java.util.List;

import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The answer faults switched on through {@code /api/faults}, as the page does, and the policy
 * {@code chat}'s output validation ({@code aiguard.policies.chat.validate.*}): each faulty answer is
 * judged {@code INVALID} — in the report's attempts, in {@code /api/guard}'s counters — and the page gets
 * what follows from it: an empty answer is retried once, then the ladder answers; a filtered or a
 * looping answer has reached the page already, so it ends as a partial answer with its error.
 */
class ValidationFaultsTest extends DemoTestSupport {

	@Autowired
	GuardStats stats;

	private void patch(String body) {
		client.patch().uri("/api/faults").contentType(MediaType.APPLICATION_JSON).bodyValue(body)
			.exchange().expectStatus().isOk();
	}

	private JsonNode counters() {
		return json.readTree(client.get().uri("/api/guard").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody()).get("counters");
	}

	/** @return requests that ended INVALID, as {@code /api/guard} counts them */
	private long invalidCount() {
		return counters().get("outcomes").get("INVALID").longValue();
	}

	/** @return attempts at the model judged INVALID, as {@code /api/guard} counts them */
	private long invalidAttempts() {
		return counters().get("attemptOutcomes").get("INVALID").longValue();
	}

	/** @return the report of the request that ended after {@code requestsBefore}, once it is in */
	private GuardStats.Recent reportAfter(long requestsBefore) {
		when(stats::requests, requestsBefore + 1).block(WAIT);
		List<GuardStats.Recent> recent = stats.recent();
		return recent.get(recent.size() - 1);
	}

	@Test
	void anEmptyAnswerIsRetriedOnceThenTheLadderAnswers() {
		patch("{\"emptyAnswer\": true}");
		long invalidAttemptsBefore = invalidAttempts();
		long requestsBefore = stats.requests();

		List<ServerSentEvent<String>> events = chatToEnd(ask("Something nobody asked before, twice empty"));

		assertThat(last(events).event()).isEqualTo("done");
		assertThat(data(last(events)).get("source").stringValue()).isEqualTo("STATIC");
		assertThat(text(events)).startsWith("The assistant is busy right now");
		assertThat(callsFor(PRIMARY)).as("the first answer and its one retry").isEqualTo(2);
		assertThat(callsFor(SIBLING)).as("the sibling model, empty too: no answer, the ladder goes on").isEqualTo(1);
		assertThat(treeBreaker("mock", SIBLING).snapshot().failures()).isEqualTo(1);
		GuardStats.Recent report = reportAfter(requestsBefore);
		assertThat(report.attemptOutcomes()).as("both answers judged invalid").containsExactly("INVALID", "INVALID");
		assertThat(report.outcome()).as("the request itself was answered, by the ladder").isEqualTo("SUCCESS");
		assertThat(report.source()).isEqualTo("STATIC");
		assertThat(invalidAttempts()).isEqualTo(invalidAttemptsBefore + 2);
	}

	@Test
	void anEmptyAnswerFollowedByAGoodOneIsAnsweredLive() {
		patch("{\"emptyAnswer\": true}");
		long requestsBefore = stats.requests();
		FaultProfile empty = mock.faults();
		// the first answer is empty, its retry finds the model answering again
		mock.enqueue(empty, empty.withEmptyAnswer(false));

		List<ServerSentEvent<String>> events = chatToEnd(ask("empty then fine"));

		assertThat(data(last(events)).get("source").stringValue()).isEqualTo("REALTIME");
		assertThat(text(events)).isEqualTo(MockAnswers.text("empty then fine"));
		GuardStats.Recent report = reportAfter(requestsBefore);
		assertThat(report.outcome()).isEqualTo("SUCCESS");
		assertThat(report.attemptOutcomes()).containsExactly("INVALID", "SUCCESS");
	}

	@Test
	void aContentFilterFinishEndsTheAnswerAsAPartialInvalidOne() {
		patch("{\"finishReason\": \"content_filter\"}");
		long invalidBefore = invalidCount();
		long requestsBefore = stats.requests();
		long upstreamBefore = mockRequests();

		List<ServerSentEvent<String>> events = chatToEnd(ask("filter this"));

		assertThat(text(events)).as("the tokens reached the page before the verdict")
			.isEqualTo(MockAnswers.text("filter this"));
		assertThat(last(events).event()).isEqualTo("error");
		JsonNode error = data(last(events));
		assertThat(error.get("type").stringValue()).isEqualTo("invalid_output");
		assertThat(error.get("partial").booleanValue()).isTrue();
		assertThat(error.get("message").stringValue()).contains("content_filter");
		assertThat(mockRequests() - upstreamBefore).as("content was delivered: never retried").isEqualTo(1);
		GuardStats.Recent report = reportAfter(requestsBefore);
		assertThat(report.outcome()).isEqualTo("INVALID");
		assertThat(report.attemptOutcomes()).containsExactly("INVALID");
		assertThat(invalidCount()).isEqualTo(invalidBefore + 1);
	}

	@Test
	void aLoopingAnswerIsCutByTheRepetitionDetector() {
		patch("{\"loopingAnswer\": true}");
		long invalidBefore = invalidCount();
		long requestsBefore = stats.requests();

		List<ServerSentEvent<String>> events = chatToEnd(ask("say it again"));

		String loop = FaultProfile.LOOP_PHRASE.repeat(FaultProfile.LOOP_REPEATS);
		String shown = text(events);
		assertThat(loop).startsWith(shown);
		assertThat(shown.length()).as("cut before the loop's end").isLessThan(loop.length())
			.as("but only once it repeated").isGreaterThan(FaultProfile.LOOP_PHRASE.length() * 5);
		assertThat(last(events).event()).isEqualTo("error");
		assertThat(data(last(events)).get("type").stringValue()).isEqualTo("repetition");
		assertThat(data(last(events)).get("partial").booleanValue()).isTrue();
		GuardStats.Recent report = reportAfter(requestsBefore);
		assertThat(report.outcome()).isEqualTo("INVALID");
		assertThat(invalidCount()).isEqualTo(invalidBefore + 1);
	}

	@Test
	void withTheSwitchesOffAnswersAreValid() {
		patch("{\"emptyAnswer\": true, \"finishReason\": \"content_filter\", \"loopingAnswer\": true}");
		patch("{\"emptyAnswer\": false, \"finishReason\": null, \"loopingAnswer\": false}");
		long invalidBefore = invalidCount();
		long invalidAttemptsBefore = invalidAttempts();

		List<ServerSentEvent<String>> events = chatToEnd(ask("all good again"));

		assertThat(data(last(events)).get("source").stringValue()).isEqualTo("REALTIME");
		assertThat(data(last(events)).get("finishReason").stringValue()).isEqualTo("stop");
		assertThat(invalidCount()).isEqualTo(invalidBefore);
		assertThat(invalidAttempts()).isEqualTo(invalidAttemptsBefore);
	}
}
