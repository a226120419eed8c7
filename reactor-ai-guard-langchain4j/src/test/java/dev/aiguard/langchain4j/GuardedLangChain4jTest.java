package dev.aiguard.langchain4j;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.StallPhase;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import dev.aiguard.truncation.TokenCounter;
import dev.aiguard.truncation.TruncationSpec;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.response.ChatResponse;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static dev.aiguard.langchain4j.MockModels.WAIT;
import static dev.aiguard.langchain4j.MockModels.await;
import static dev.aiguard.langchain4j.MockModels.awaitNoneInProgress;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The guard in one line over LangChain4j's real OpenAI model and the mock, for the failures the
 * bridge exists for: stalls, a missing terminal, rate limits, a 500 storm, a prompt too long.
 */
class GuardedLangChain4jTest {

	private static final Duration FIRST_TOKEN = Duration.ofMillis(500);
	private static final Duration IDLE = Duration.ofMillis(400);
	/** The slack the deadlines get: a stall is reported within its deadline plus this. */
	private static final Duration SLACK = Duration.ofMillis(100);

	@AutoClose
	private final MockModelServer mock = MockModels.startMock();
	private final BlockingQueue<GuardReport> reports = new LinkedBlockingQueue<>();

	private GuardPolicy.Builder policy(String name) {
		// 10 idle checks: a stall is seen 400 to 440 ms after the last token, plus the lateness of the
		// timer's 11 wake-ups (more checks narrow the first part and add to the second)
		return GuardPolicy.builder(name)
			.stall(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN).idleTimeout(IDLE).idleChecks(10))
			.retry(RetryRules.none())
			.onReport(reports::add);
	}

	private GuardReport report() throws InterruptedException {
		GuardReport report = reports.poll(WAIT.toMillis(), TimeUnit.MILLISECONDS);
		assertThat(report).as("a report within " + WAIT).isNotNull();
		return report;
	}

	private static dev.aiguard.chat.ChatRequest ask(String question) {
		return dev.aiguard.chat.ChatRequest.of(null, List.of(ChatMessage.system("Be brief."), ChatMessage.user(question)));
	}

	private static String text(List<ChatChunk> chunks) {
		return chunks.stream().filter(ChatChunk::hasContent).map(ChatChunk::text).collect(Collectors.joining());
	}

	@Test
	void aCompleteAnswerIsASuccessWithItsFinishReason() throws InterruptedException {
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAi(mock));

		List<ChatChunk> chunks = AiGuard.of(policy("ok").build()).call(ask("Hello"), streams).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo("stop");
	}

	@Test
	void aStallMidStreamIsStalledWithinTheIdleDeadline() throws InterruptedException {
		mock.faults(mock.faults().withStallAfter(3));
		RecordingModel model = new RecordingModel(MockModels.openAi(mock));
		AtomicLong lastToken = new AtomicLong();
		AtomicLong failed = new AtomicLong();

		Flux<ChatChunk> answer = AiGuard.of(policy("idle").build()).call(ask("Hello"), LangChain4jStreams.of(model))
			.doOnNext(c -> lastToken.set(System.nanoTime()))
			.doOnError(e -> failed.set(System.nanoTime()));

		StepVerifier.create(answer)
			.expectNextCount(3)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.cause()
				.isInstanceOfSatisfying(StreamStalledException.class, s -> assertThat(s.phase()).isEqualTo(StallPhase.IDLE)))
			.verify(WAIT);

		Duration silence = Duration.ofNanos(failed.get() - lastToken.get());
		assertThat(silence).isBetween(IDLE, IDLE.plus(SLACK));
		assertThat(report().outcome()).isEqualTo(Outcome.STALLED);
		awaitNoneInProgress(mock);
		assertThat(mock.stats().cancelled()).as("the stalled connection was closed").isEqualTo(1);
	}

	@Test
	void aFirstTokenStallIsStalledWithinTheFirstTokenDeadlineAndItsConnectionIsClosed() throws InterruptedException {
		mock.faults(mock.faults().withStallAfter(0));
		RecordingModel model = new RecordingModel(MockModels.openAi(mock));
		AtomicLong subscribed = new AtomicLong();
		AtomicLong failed = new AtomicLong();

		Flux<ChatChunk> answer = AiGuard.of(policy("first-token").build()).call(ask("Hello"), LangChain4jStreams.of(model))
			.doOnSubscribe(s -> subscribed.set(System.nanoTime()))
			.doOnError(e -> failed.set(System.nanoTime()));

		StepVerifier.create(answer)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(StreamStalledException.class,
					s -> assertThat(s.phase()).isEqualTo(StallPhase.FIRST_TOKEN)))
			.verify(WAIT);

		assertThat(Duration.ofNanos(failed.get() - subscribed.get())).isBetween(FIRST_TOKEN, FIRST_TOKEN.plus(SLACK));
		assertThat(report().outcome()).isEqualTo(Outcome.STALLED);
		awaitNoneInProgress(mock);
		assertThat(mock.stats().cancelled()).as("the connection was closed before any token").isEqualTo(1);
		assertThat(mock.stats().stalled()).isEqualTo(1);
		await("LangChain4j ends the aborted call", () -> model.ended(1));
		assertThat(model.callbacks).noneMatch(c -> c.name().equals("onPartialResponse"));
	}

	@Test
	void aStreamWithoutFinishReasonIsIncompleteNotSuccess() throws InterruptedException {
		mock.faults(mock.faults().withOmitTerminal(true));
		RecordingModel model = new RecordingModel(MockModels.openAi(mock));

		StepVerifier.create(AiGuard.of(policy("terminal").build()).call(ask("Hello"), LangChain4jStreams.of(model)))
			.expectNextCount(MockAnswers.tokens("Hello").size())
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.hasCauseInstanceOf(IncompleteStreamException.class))
			.verify(WAIT);

		assertThat(report().outcome()).isEqualTo(Outcome.INCOMPLETE);
		assertThat(model.callbacks).filteredOn(c -> c.name().equals("onCompleteResponse")).singleElement()
			.satisfies(c -> assertThat(((ChatResponse) c.argument()).finishReason())
				.as("LangChain4j completes the stream all the same").isNull());
	}

	@Test
	void anInBandRequestErrorIsTypedAndSentOnceLikeTheLibrarysOwnClient() throws InterruptedException {
		mock.faults(mock.faults().withInBandError(0, "invalid_request_error"));
		GuardPolicy policy = policy("in-band").retry(RetryRules.backoff(3, Duration.ofMillis(10))).build();

		StepVerifier.create(AiGuard.of(policy).call(ask("Hello"), LangChain4jStreams.of(MockModels.openAi(mock))))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderStreamException.class, s -> {
				assertThat(s.errorType()).isEqualTo("invalid_request_error");
				assertThat(s.inBand()).isTrue();
				assertThat(s.retryable()).isFalse();
			}))
			.verify(WAIT);

		assertThat(report().attempts()).hasSize(1);
		assertThat(mock.stats().requests()).as("a request the provider refused is not sent again").isEqualTo(1);
	}

	@Test
	void anInBandOverloadKeepsItsTypeAndIsRetried() throws InterruptedException {
		mock.faults(mock.faults().withInBandError(0, "overloaded_error"));
		GuardPolicy policy = policy("overloaded").retry(RetryRules.backoff(3, Duration.ofMillis(10))).build();

		StepVerifier.create(AiGuard.of(policy).call(ask("Hello"), LangChain4jStreams.of(MockModels.openAi(mock))))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderOverloadedException.class,
					o -> assertThat(o.inBand()).isTrue()))
			.verify(WAIT);

		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.FAILURE);
		assertThat(report.attempts()).hasSize(3)
			.allSatisfy(a -> assertThat(a.error()).isInstanceOf(ProviderOverloadedException.class));
		assertThat(mock.stats().requests()).isEqualTo(3);
		assertThat(mock.stats().inBandErrors()).isEqualTo(3);
	}

	@ParameterizedTest
	@CsvSource({ "STOP, stop", "stop, stop", "Stop, stop", "LENGTH, length", "Length, length",
			"CONTENT_FILTER, content_filter", "Tool_Calls, tool_calls" })
	void aFinishReasonInAnyCaseEndsTheAnswer(String sent, String reported) throws InterruptedException {
		mock.faults(mock.faults().withFinishReason(sent));

		List<ChatChunk> chunks = AiGuard.of(policy("finish").build())
			.call(ask("Hello"), LangChain4jStreams.of(MockModels.openAi(mock)))
			.collectList()
			.block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		assertThat(chunks).extracting(ChatChunk::finishReason).contains(reported);
		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo(reported);
	}

	@Test
	void aRateLimitWithRetryAfterIsRetriedAfterThatWait() throws InterruptedException {
		mock.faults(mock.faults().withErrors(1.0, 429, 1));
		RecordingModel model = new RecordingModel(MockModels.openAi(mock), call -> {
			if (call == 2) {
				mock.resetFaults();
			}
		});
		GuardPolicy policy = policy("rate-limit").retry(RetryRules.backoff(2, Duration.ofMillis(10))).build();

		List<ChatChunk> chunks = AiGuard.of(policy).call(ask("Hello"), LangChain4jStreams.of(model)).collectList()
			.block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).hasSize(2);
		assertThat(report.attempts().get(0).error()).isInstanceOfSatisfying(RateLimitedException.class,
				r -> assertThat(r.retryAfter()).contains(Duration.ofSeconds(1)));
		Duration wait = Duration.ofNanos(model.calls.get(1).nanos() - model.calls.get(0).nanos());
		assertThat(wait).as("the retry waited for Retry-After, not the 10 ms backoff")
			.isBetween(Duration.ofSeconds(1), Duration.ofSeconds(2));
		assertThat(mock.stats().injectedErrors()).isEqualTo(1);
	}

	@Test
	void aStormOf500sOpensTheBreaker() throws InterruptedException {
		mock.faults(mock.faults().withErrors(1.0, 500, 0));
		GuardPolicy policy = policy("storm")
			.stall(StallSpec.defaults())
			.breaker(BreakerConfig.custom().countWindow(10).minimumCalls(4).failureRateThreshold(0.5).build())
			.build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy);
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAi(mock));

		for (int i = 0; i < 4; i++) {
			StepVerifier.create(guard.call(ask("Hello"), streams)).expectError(ProviderServerException.class).verify(WAIT);
			assertThat(report().outcome()).isEqualTo(Outcome.FAILURE);
		}
		StepVerifier.create(guard.call(ask("Hello"), streams)).expectError(BreakerOpenException.class).verify(WAIT);

		assertThat(report().outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(policy.breaker().state()).isEqualTo(BreakerState.OPEN);
		assertThat(mock.stats().requests()).as("the open breaker sent nothing").isEqualTo(4);
	}

	private static final int CONTEXT_LIMIT = 200;
	/** Retry rules set on a policy cap its truncated attempts too: room for one truncation. */
	private static final RetryRules TRUNCATED_RETRY = RetryRules.backoff(2, Duration.ofMillis(10));

	@Test
	void aContextLengthErrorIsRecoveredByTruncation() throws InterruptedException {
		String question = "What is a lane?";
		List<ChatMessage> conversation = MockModels.longConversation(question, 40);
		assertThat(TokenCounter.estimate().count(conversation)).isGreaterThan(CONTEXT_LIMIT * 3);
		mock.faults(mock.faults().withContextLimit(CONTEXT_LIMIT));
		GuardPolicy policy = policy("truncate").retry(TRUNCATED_RETRY)
			.truncation(TruncationSpec.defaults().reservedOutputTokens(20))
			.build();

		List<ChatChunk> chunks = AiGuard.of(policy)
			.call(dev.aiguard.chat.ChatRequest.of(null, conversation), LangChain4jStreams.of(MockModels.openAi(mock)))
			.collectList()
			.block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text(question));
		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
			.containsExactly(Outcome.CLIENT_ERROR, Outcome.SUCCESS);
		assertThat(report.attempts().get(0).error()).isInstanceOf(ContextLengthExceededException.class);
		assertThat(mock.stats().contextRejections()).isEqualTo(1);
		assertThat(mock.stats().requests()).isEqualTo(2);
	}

	@Test
	void langChain4jsOwnRequestIsTruncatedKeepingItsOriginalMessages() throws InterruptedException {
		String question = "What is a stall?";
		List<dev.langchain4j.data.message.ChatMessage> conversation = new ArrayList<>();
		for (ChatMessage m : MockModels.longConversation(question, 40)) {
			conversation.add(switch (m.role()) {
				case SYSTEM -> SystemMessage.from(m.content());
				case USER -> UserMessage.from(m.content());
				default -> AiMessage.from(m.content());
			});
		}
		dev.langchain4j.model.chat.request.ChatRequest request = dev.langchain4j.model.chat.request.ChatRequest.builder()
			.messages(conversation)
			.temperature(0.2)
			.build();
		mock.faults(mock.faults().withContextLimit(CONTEXT_LIMIT));
		RecordingModel model = new RecordingModel(MockModels.openAi(mock));
		AiGuard<ChatChunk> guard = AiGuard.of(policy("truncate-lc4j").retry(TRUNCATED_RETRY)
			.truncation(TruncationSpec.defaults().reservedOutputTokens(20))
			.build());

		List<ChatChunk> chunks = LangChain4jStreams.of(model).call(guard, request).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text(question));
		assertThat(report().outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(model.calls).hasSize(2);
		assertThat(model.calls.get(0).request()).as("the first attempt sends the request as written").isSameAs(request);
		dev.langchain4j.model.chat.request.ChatRequest shrunk = model.calls.get(1).request();
		assertThat(shrunk.messages()).hasSizeLessThan(conversation.size());
		assertThat(shrunk.messages().get(0)).as("a kept message is the original").isSameAs(conversation.get(0));
		assertThat(shrunk.messages().get(shrunk.messages().size() - 1)).isSameAs(conversation.get(conversation.size() - 1));
		assertThat(shrunk.temperature()).isEqualTo(0.2);
	}
}
