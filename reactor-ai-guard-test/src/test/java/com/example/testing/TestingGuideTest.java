package com.example.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.provider.RateLimits;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.test.ChatSteps;
import dev.aiguard.test.ModelScript;
import dev.aiguard.test.ReportRecorder;
import dev.aiguard.test.ScriptedModel;
import dev.aiguard.test.mock.CapturedRequest;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The examples of {@code docs/testing.md}, as written there, from outside the module's packages:
 * what a user of the test module writes. The class itself is the "mock as a JUnit field" example.
 */
class TestingGuideTest {

	static final MockModelServer mock = MockModelServer.builder()
		.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(2)))
		.start();

	@AfterAll
	static void stopMock() {
		mock.close();
	}

	@BeforeEach
	void cleanMock() {
		mock.reset();
	}

	final ChatRequest request = ChatRequest.of(null, List.of(ChatMessage.user("Why do streams stall?")));

	final OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(mock.baseUrl())
		.model(MockModelServer.MODEL)
		.apiKey("sk-test")
		.build();

	@Test
	void tryWithResources() {
		try (MockModelServer mock = MockModelServer.builder().start()) {
			OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(mock.baseUrl())
				.model(MockModelServer.MODEL)
				.build();
			ChatRequest request = ChatRequest.of(null, List.of(ChatMessage.user("Why do streams stall?")));

			StepVerifier.create(ChatSteps.text(client.stream(request)))
				.expectNext(MockAnswers.text("Why do streams stall?"))
				.expectComplete()
				.verify(Duration.ofSeconds(5));
		}
	}

	@Test
	void fixedPort() {
		int port = freePort();
		try (MockModelServer mock = MockModelServer.builder().port(port).start()) {
			assertThat(mock.baseUrl()).isEqualTo("http://127.0.0.1:" + port + "/v1");
			assertThat(mock.port()).isEqualTo(port);
		}
	}

	@Test
	void faults() {
		FaultProfile base = mock.faults();
		mock.faults(base.withStallAfter(3));                  // every answer stops after 3 tokens, socket open
		mock.faults(base.withErrors(0.3, 503, 2));            // 30 % of requests: 503 with Retry-After: 2
		mock.faults(base.withInBandError(5, "overloaded_error"));   // 200, 5 tokens, then an error event
		mock.faults(base.withErrors(1, 429, 1)
			.withRateLimits(new RateLimits(60, 0, Duration.ofSeconds(1), 150_000, 0, Duration.ofMinutes(6))));

		StepVerifier.create(client.stream(request))
			.expectErrorSatisfies(e -> assertThat(((RateLimitedException) e).rateLimits().remainingRequests()).isZero())
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void scriptOf429Then500ThenAnAnswer() {
		ReportRecorder reports = new ReportRecorder();
		GuardPolicy policy = GuardPolicy.builder("chat")
			.retry(RetryRules.backoff(3, Duration.ofMillis(10)))
			.onReport(reports)
			.build();
		FaultProfile base = mock.faults();
		mock.enqueue(base.withErrors(1, 429, 0), base.withErrors(1, 500, 0));

		ChatSteps.expectAnswer(StepVerifier.create(AiGuard.of(policy).call(request, client::stream)),
				MockAnswers.text("Why do streams stall?"))
			.verify(Duration.ofSeconds(5));

		assertThat(reports.expectOutcome(Outcome.SUCCESS).attempts()).hasSize(3);
		assertThat(mock.requests()).hasSize(3);
	}

	@Test
	void capture() {
		client.stream(request).blockLast(Duration.ofSeconds(5));

		CapturedRequest sent = mock.lastRequest();
		assertThat(sent.header("Authorization")).isEqualTo("Bearer sk-test");
		assertThat(sent.json().path("stream_options").path("include_usage").asBoolean()).isTrue();
		assertThat(sent.messages()).containsExactlyElementsOf(request.messages());
	}

	@Test
	void stalledFirstTokenInVirtualTime() {
		ScriptedModel model = ScriptedModel.of(ModelScript.answer("Hello there")
			.firstTokenDelay(Duration.ofSeconds(5)));
		ReportRecorder reports = new ReportRecorder();
		GuardPolicy policy = GuardPolicy.builder("chat")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(2)))
			.onReport(reports)
			.build();

		StepVerifier.withVirtualTime(() -> ChatSteps.tokens(AiGuard.of(policy).call(request, model)))
			.expectSubscription()
			.expectNoEvent(Duration.ofMillis(1_999))
			.thenAwait(Duration.ofMillis(100))
			.expectError(StreamStalledException.class)
			.verify(Duration.ofSeconds(5));

		reports.expectOutcome(Outcome.STALLED);
		assertThat(model.cancellations()).isEqualTo(1);
	}

	@Test
	void aFailedCallThenAnAnswer() {
		ScriptedModel model = ScriptedModel.of(ModelScript.answer("Hello there"))
			.enqueue(ModelScript.answer("Hello there").failAfter(0,
					() -> new ProviderServerException("openai", 503, "server_error", null, "HTTP 503: busy", null)));
		GuardPolicy policy = GuardPolicy.builder("chat")
			.retry(RetryRules.backoff(2, Duration.ofMillis(200)))
			.build();

		ChatSteps.expectAnswer(StepVerifier.withVirtualTime(() -> AiGuard.of(policy).call(request, model))
				.thenAwait(Duration.ofSeconds(1)), "Hello there")
			.verify(Duration.ofSeconds(5));

		assertThat(model.calls()).isEqualTo(2);
	}

	@Test
	void partialAnswer() {
		ScriptedModel model = ScriptedModel.of(ModelScript.tokens("Hel", "lo", " there").stallAfter(2));
		GuardPolicy policy = GuardPolicy.builder("chat")
			.stall(StallSpec.defaults().idleTimeout(Duration.ofSeconds(1)))
			.build();

		ChatSteps.expectPartialAnswer(StepVerifier.withVirtualTime(() -> AiGuard.of(policy).call(request, model))
				.thenAwait(Duration.ofSeconds(5)), "Hel", "lo")
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void transformForm() {
		ScriptedModel model = ScriptedModel.of(ModelScript.answer("Hello there"))
			.enqueue(ModelScript.answer("Hello there").failAfter(0,
					() -> new ProviderServerException("openai", 500, "server_error", null, "HTTP 500", null)));
		GuardPolicy policy = GuardPolicy.builder("chat").retry(RetryRules.backoff(2, Duration.ofMillis(10))).build();

		StepVerifier.create(ChatSteps.text(model.apply(request).transform(AiGuard.of(policy))))
			.expectNext("Hello there")
			.expectComplete()
			.verify(Duration.ofSeconds(5));
		assertThat(model.calls()).as("the retry resubscribed: a second call").isEqualTo(2);
	}

	private static int freePort() {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
		catch (IOException e) {
			throw new UncheckedIOException(e);
		}
	}
}
