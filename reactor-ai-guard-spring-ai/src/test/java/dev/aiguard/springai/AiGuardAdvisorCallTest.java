package dev.aiguard.springai;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.GuardReport;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Source;
import dev.aiguard.core.StallPhase;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.truncation.TruncationSpec;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.model.ChatResponse;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code ChatClient.call()} guarded by {@link AiGuardAdvisor}, against the mock model over HTTP. */
class AiGuardAdvisorCallTest extends AdvisorFixture {

	private static final Duration FIRST_TOKEN = Duration.ofMillis(500);

	AiGuardAdvisorCallTest() {
		super("spring-ai-call");
	}

	@Test
	void aCallIsGuardedAndAnswersAsTheModelDid() {
		ChatClient chat = client(policy().stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5))).build());

		ChatResponse response = chat.prompt("What is a lane?").call().chatResponse();

		assertThat(response.getResult().getOutput().getText()).isEqualTo(MockAnswers.text("What is a lane?"));
		assertThat(response.getResult().getMetadata().getFinishReason()).isEqualTo("STOP");
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.source()).isEqualTo(Source.REALTIME);
		assertThat(report.tokens()).isEqualTo(1);
		assertThat(probe.attempts).hasSize(1);
	}

	@Test
	void aSlowCallEndsAtTheFirstTokenDeadlineAndFreesTheCaller() {
		ai.mock.faults(ai.mock.faults().withPace(5_000, 0));
		ChatClient chat = client(policy().stall(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN)).build());
		long start = System.nanoTime();

		assertThatThrownBy(() -> chat.prompt("Hello").call().content())
			.isInstanceOfSatisfying(StreamStalledException.class,
					s -> assertThat(s.phase()).isEqualTo(StallPhase.FIRST_TOKEN));

		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThanOrEqualTo(FIRST_TOKEN.plusMillis(100));
		assertThat(reports.next().block(WAIT).outcome()).isEqualTo(Outcome.STALLED);
	}

	@Test
	void aFailedCallIsRetriedThroughTheChainAfterTheRetryAfter() {
		ai.close();
		AtomicInteger draws = new AtomicInteger();
		ai = new SpringAiMock(() -> draws.getAndIncrement() == 0 ? 0.0 : 0.99);
		ai.mock.faults(ai.mock.faults().withErrors(0.5, 429, 1));
		ChatClient chat = client(policy().retry(RetryRules.backoff(3, Duration.ofMillis(10))).build());

		String answer = chat.prompt("Hello").call().content();

		assertThat(answer).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
			.containsExactly(Outcome.FAILURE, Outcome.SUCCESS);
		assertThat(report.attempts().get(0).error()).isInstanceOfSatisfying(RateLimitedException.class,
				r -> assertThat(r.retryAfter()).contains(Duration.ofSeconds(1)));
		assertThat(probe.attempts).hasSize(2);
		assertThat(Duration.ofNanos(probe.attempts.get(1).nanos() - probe.attempts.get(0).nanos()))
			.isGreaterThanOrEqualTo(Duration.ofSeconds(1));
	}

	@Test
	void aContextLengthErrorOfACallIsRecoveredByTruncation() {
		ai.mock.faults(ai.mock.faults().withContextLimit(60));
		ChatClient chat = client(policy().truncation(TruncationSpec.defaults().reservedOutputTokens(10)).build());
		List<Message> history = new ArrayList<>();
		for (int i = 0; i < 4; i++) {
			history.add(new UserMessage("Earlier question " + i + ": " + "what about lanes ".repeat(8)));
			history.add(new AssistantMessage("Earlier answer " + i + ": " + "lanes admit by priority ".repeat(8)));
		}

		String answer = chat.prompt().messages(history).user("And breakers?").call().content();

		assertThat(answer).isEqualTo(MockAnswers.text("And breakers?"));
		assertThat(reports.next().block(WAIT).attempts()).extracting(GuardReport.Attempt::outcome)
			.containsExactly(Outcome.CLIENT_ERROR, Outcome.SUCCESS);
		assertThat(probe.attempts.get(1).prompt().getInstructions())
			.hasSizeLessThan(probe.attempts.get(0).prompt().getInstructions().size());
	}

	@Test
	void aFallbackAnswerBecomesTheResponseOfTheCall() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 500, 0));
		ChatClient chat = client(policy()
			.fallback(FallbackChain.<dev.aiguard.chat.ChatChunk>builder().step(Fallback.staticText("The assistant is busy.")).build())
			.build());

		ChatResponse response = chat.prompt("Hello").call().chatResponse();

		assertThat(response.getResult().getOutput().getText()).isEqualTo("The assistant is busy.");
		assertThat(response.getResult().getMetadata().getFinishReason()).isEqualTo("STOP");
		assertThat(reports.next().block(WAIT).source()).isEqualTo(Source.STATIC);
	}

	@Test
	void anAnswerCutByTheOutputLimitReportsLengthAsTruncated() {
		ChatClient chat = ChatClient.builder(ai.model(ai.options().maxTokens(3).build()))
			.defaultAdvisors(AiGuardAdvisor.of(policy().build()))
			.build();

		ChatResponse response = chat.prompt("Why do streams stall?").call().chatResponse();

		assertThat(response.getResult().getMetadata().getFinishReason()).isEqualTo("LENGTH");
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.finishReason()).isEqualTo("LENGTH");
		assertThat(report.outputTruncated()).isTrue();
	}

	@Test
	void aCallOnANonBlockingThreadIsRefusedInsteadOfBlockingIt() {
		ChatClient chat = client(policy().build());

		StepVerifier.create(Mono.fromCallable(() -> chat.prompt("Hello").call().content())
				.subscribeOn(Schedulers.parallel()))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalStateException.class)
				.hasMessageContaining("non-blocking"))
			.verify(WAIT);
		assertThat(probe.attempts).isEmpty();
	}
}
