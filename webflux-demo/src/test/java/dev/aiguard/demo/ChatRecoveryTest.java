package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import dev.aiguard.breaker.BreakerState;
import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.http.codec.ServerSentEvent;
import tools.jackson.databind.JsonNode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the guard does about faults before the first token: retry (honouring Retry-After), shrink
 * the prompt, refuse through the breaker, and answer from the fallback ladder — all visible in the
 * contract's {@code done} event.
 */
class ChatRecoveryTest extends DemoTestSupport {

	@Autowired
	GuardStats stats;

	@Test
	void rateLimitedAnswerIsRetriedAfterRetryAfterAndAnsweredLive() throws Exception {
		faults(mock.faults().withErrors(1.0, 429, 1));
		long requestsBefore = stats.requests();
		long rateLimitedBefore = mock.stats().injectedErrors();
		long started = System.nanoTime();

		CompletableFuture<List<ServerSentEvent<String>>> answer = chat(ask("retry me")).collectList().toFuture();
		when(() -> mock.stats().injectedErrors(), rateLimitedBefore + 1).block(WAIT);
		mock.resetFaults();                              // the retry, a second later, finds a healthy model
		List<ServerSentEvent<String>> events = answer.get(WAIT.toSeconds(), TimeUnit.SECONDS);

		assertThat(last(events).event()).isEqualTo("done");
		assertThat(data(last(events)).get("source").stringValue()).isEqualTo("REALTIME");
		assertThat(text(events)).isEqualTo(MockAnswers.text("retry me"));
		assertThat(Duration.ofNanos(System.nanoTime() - started)).as("the server asked for 1 s")
			.isGreaterThanOrEqualTo(Duration.ofSeconds(1));
		when(stats::requests, requestsBefore + 1).block(WAIT);
		GuardStats.Recent report = stats.recent().get(stats.recent().size() - 1);
		assertThat(report.attempts()).isEqualTo(2);
		assertThat(report.outcome()).isEqualTo("SUCCESS");
	}

	@Test
	void contextLimitIsAnsweredAfterTheGuardShrinksThePrompt() {
		faults(mock.faults().withContextLimit(100));
		long rejectionsBefore = mock.stats().contextRejections();
		long requestsBefore = stats.requests();
		String conversation = "{\"messages\":["
				+ "{\"role\":\"user\",\"content\":\"" + "an old question that is long ".repeat(14) + "\"},"
				+ "{\"role\":\"assistant\",\"content\":\"" + "an old answer that is long too ".repeat(14) + "\"},"
				+ "{\"role\":\"user\",\"content\":\"short question\"}]}";

		List<ServerSentEvent<String>> events = chatToEnd(conversation);

		assertThat(last(events).event()).isEqualTo("done");
		assertThat(data(last(events)).get("source").stringValue()).isEqualTo("REALTIME");
		assertThat(text(events)).isEqualTo(MockAnswers.text("short question"));
		assertThat(mock.stats().contextRejections()).isEqualTo(rejectionsBefore + 1);
		when(stats::requests, requestsBefore + 1).block(WAIT);
		assertThat(stats.recent().get(stats.recent().size() - 1).attempts()).isEqualTo(2);
	}

	@Test
	void aQuestionThatCannotFitIsAClientErrorNotAFallback() {
		faults(mock.faults().withContextLimit(40));

		List<ServerSentEvent<String>> events = chatToEnd(ask("far too long for the limit ".repeat(20)));

		assertThat(events).extracting(ServerSentEvent::event).containsExactly("meta", "error");
		JsonNode error = data(last(events));
		assertThat(error.get("type").stringValue()).isIn("prompt_too_large", "context_length");
		assertThat(error.get("partial").booleanValue()).isFalse();
	}

	@Test
	void serverErrorsOpenTheBreakerAndTheFallbackAnswers() {
		faults(mock.faults().withErrors(1.0, 500, 0));

		for (int i = 0; i < 6 && breaker.state() != BreakerState.OPEN; i++) {
			List<ServerSentEvent<String>> events = chatToEnd(ask("question " + i + " while the model fails"));
			// every one is answered: by the ladder, once retries are spent or the breaker refuses
			assertThat(last(events).event()).isEqualTo("done");
			assertThat(data(last(events)).get("source").stringValue()).isEqualTo("STATIC");
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		long before = System.currentTimeMillis();
		JsonNode status = json.readTree(client.get().uri("/api/guard").exchange().expectStatus().isOk()
			.expectBody(String.class).returnResult().getResponseBody()).get("breaker");
		assertThat(status.get("state").stringValue()).isEqualTo("OPEN");
		long after = System.currentTimeMillis();
		long openWait = breaker.lastOpenWait().toMillis();
		assertThat(status.get("openWaitMs").longValue()).as("the breaker's own wait").isEqualTo(openWait)
			.as("the first open: aiguard.breakers.model.open-wait and up to 10 % jitter").isBetween(60_000L, 66_000L);
		long retryIn = status.get("retryInMs").longValue();
		assertThat(retryIn).isBetween(openWait - 10_000, openWait)
			.isGreaterThanOrEqualTo(breaker.untilProbe().orElseThrow().toMillis());
		assertThat(status.get("openUntil").longValue()).isBetween(before + retryIn, after + retryIn);
		assertThat(status.get("nextOpenWaitMs").longValue()).as("the breaker's own: a failed probe doubles it")
			.isEqualTo(breaker.nextOpenWait().toMillis()).isBetween(120_000L, 132_000L);
		assertThat(status.get("openWaitBackoff").get("initialMs").longValue()).isEqualTo(60_000);
		assertThat(status.get("openWaitBackoff").get("multiplier").doubleValue()).isEqualTo(2.0);
		assertThat(status.get("openWaitBackoff").get("maxMs").longValue()).isEqualTo(480_000);
		assertThat(status.get("openWaitBackoff").get("jitter").doubleValue()).isEqualTo(0.1);

		long primaryCalls = callsFor(PRIMARY);
		long siblingCalls = callsFor(SIBLING);
		long rejectedBefore = breaker.rejectedCalls();
		List<ServerSentEvent<String>> events = chatToEnd(ask("and one more"));
		assertThat(data(last(events)).get("source").stringValue()).isEqualTo("STATIC");
		assertThat(data(last(events)).get("finishReason").stringValue()).isEqualTo("stop");
		assertThat(data(last(events)).get("model").isNull()).as("no model answered").isTrue();
		assertThat(text(events)).startsWith("The assistant is busy right now");
		assertThat(callsFor(PRIMARY)).as("an open breaker sends nothing to its model").isEqualTo(primaryCalls);
		assertThat(callsFor(SIBLING)).as("the ladder asked the sibling, which fails too").isEqualTo(siblingCalls + 1);
		assertThat(breaker.rejectedCalls()).isGreaterThan(rejectedBefore);
	}

	@Test
	void theLadderAnswersFromTheCacheThenCannedAnswersThenTheStaticMessage() {
		List<ServerSentEvent<String>> live = chatToEnd(ask("What is the weather on Mars?"));
		assertThat(data(last(live)).get("source").stringValue()).isEqualTo("REALTIME");
		assertThat(data(last(live)).get("model").stringValue()).isEqualTo(PRIMARY);

		// the whole provider: no sibling to ask either
		treeBreaker("mock").transitionToForcedOpen();

		List<ServerSentEvent<String>> cached = chatToEnd(ask("What is the weather on Mars?"));
		assertThat(data(last(cached)).get("source").stringValue()).isEqualTo("CACHE");
		assertThat(text(cached)).isEqualTo(text(live));

		List<ServerSentEvent<String>> canned = chatToEnd(ask("How does the circuit breaker work?"));
		assertThat(data(last(canned)).get("source").stringValue()).isEqualTo("LIGHTWEIGHT");
		assertThat(text(canned)).startsWith("The circuit breaker counts");

		List<ServerSentEvent<String>> fixed = chatToEnd(ask("Something nobody asked before"));
		assertThat(data(last(fixed)).get("source").stringValue()).isEqualTo("STATIC");
	}
}
