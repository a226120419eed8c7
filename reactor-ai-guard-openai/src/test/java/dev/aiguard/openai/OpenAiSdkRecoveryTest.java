package dev.aiguard.openai;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

import com.openai.client.OpenAIClientAsync;
import com.openai.client.okhttp.OpenAIOkHttpClientAsync;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import dev.aiguard.truncation.TokenCounter;
import dev.aiguard.truncation.TruncationSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the guard recovers from when the real SDK client talks to the mock model over loopback:
 * a stream without its end, a rate limit with {@code Retry-After}, a storm of 500s (breaker and
 * fallback), a prompt too long for the context (truncation in the call form). Also why the SDK's
 * own retries must be off.
 */
class OpenAiSdkRecoveryTest {

	@RegisterExtension
	static final SdkMock sdk = SdkMock.shared();

	private final List<GuardReport> reports = new CopyOnWriteArrayList<>();

	/**
	 * No stall deadlines here: these tests are about errors, and a deadline would only turn a slow
	 * moment of a busy machine into a stall. {@link OpenAiSdkStallTest} covers the deadlines.
	 */
	private GuardPolicy.Builder policy(String name) {
		return GuardPolicy.builder(name).onReport(reports::add);
	}

	private static Flux<String> text(Flux<ChatChunk> answer) {
		return answer.filter(ChatChunk::hasContent).map(ChatChunk::text).reduce(String::concat).flux();
	}

	private GuardReport onlyReport() {
		SdkMock.await(() -> reports.size(), 1);
		return reports.get(0);
	}

	/**
	 * The stream ends without finish reason and without {@code [DONE]}: the guard calls it
	 * INCOMPLETE. Every token had reached the subscriber, so there is no retry (it would show them
	 * twice): the subscriber gets the whole text, then a {@code PartialStreamException} around the
	 * {@code IncompleteStreamException}.
	 */
	@Test
	void aStreamWithoutItsEndIsIncomplete() {
		sdk.mock.faults(SdkMock.FAST.withOmitTerminal(true));
		String question = "Where is the end?";
		long requestsBefore = sdk.mock.stats().requests();
		AiGuard<ChatChunk> guard = AiGuard.of(policy("sdk-incomplete").retry(RetryRules.backoff(2, Duration.ofMillis(50)))
			.build());
		StringBuilder received = new StringBuilder();

		StepVerifier.create(guard.call(SdkMock.request(question), OpenAiStreams.of(sdk.client, SdkMock.params(question)))
				.doOnNext(c -> received.append(c.text())))
			.thenConsumeWhile(c -> true)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.hasCauseInstanceOf(IncompleteStreamException.class))
			.verify(SdkMock.WAIT);

		assertThat(received.toString()).isEqualTo(MockAnswers.text(question));
		GuardReport report = onlyReport();
		assertThat(report.outcome()).isEqualTo(Outcome.INCOMPLETE);
		assertThat(report.attempts()).hasSize(1);
		assertThat(report.finishReason()).isNull();
		assertThat(sdk.mock.stats().requests()).isEqualTo(requestsBefore + 1);
	}

	/**
	 * A complete answer whose finish reason the server spelled in upper or mixed case is a
	 * success: the subscriber gets every token and the completion, the report the lower-case reason.
	 */
	@ParameterizedTest
	@CsvSource({ "STOP, stop", "stop, stop", "Stop, stop", "LENGTH, length", "Content_Filter, content_filter",
			"TOOL_CALLS, tool_calls" })
	void aFinishReasonInAnyCaseEndsTheAnswer(String sent, String reported) {
		sdk.mock.faults(SdkMock.FAST.withFinishReason(sent));
		String question = "Is this the end?";

		StepVerifier.create(text(AiGuard.of(policy("sdk-finish").build())
				.call(SdkMock.request(question), OpenAiStreams.of(sdk.client, SdkMock.params(question)))))
			.expectNext(MockAnswers.text(question))
			.expectComplete()
			.verify(SdkMock.WAIT);

		GuardReport report = onlyReport();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo(reported);
	}

	/**
	 * An error event in a 200 stream keeps its type, as with the library's own client: one that
	 * blames the request is not sent again, an overload is retried like an HTTP 529.
	 */
	@ParameterizedTest
	@CsvSource({ "invalid_request_error, ProviderStreamException, 1", "overloaded_error, ProviderOverloadedException, 3" })
	void anInBandErrorKeepsItsTypeAndIsRetriedOnlyWhenRetryable(String type, String typed, int requests) {
		sdk.mock.faults(SdkMock.FAST.withInBandError(0, type));
		long requestsBefore = sdk.mock.stats().requests();
		AiGuard<ChatChunk> guard = AiGuard.of(policy("sdk-in-band").retry(RetryRules.backoff(3, Duration.ofMillis(10))).build());

		StepVerifier.create(guard.call(SdkMock.request("Hello"), OpenAiStreams.of(sdk.client, SdkMock.params("Hello")))
				.filter(ChatChunk::hasContent))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderException.class, p -> {
				assertThat(p.getClass().getSimpleName()).isEqualTo(typed);
				assertThat(p.errorType()).isEqualTo(type);
				assertThat(p.inBand()).isTrue();
			}))
			.verify(SdkMock.WAIT);

		assertThat(onlyReport().attempts()).hasSize(requests);
		assertThat(sdk.mock.stats().requests()).isEqualTo(requestsBefore + requests);
	}

	@Test
	void aRateLimitIsRetriedAfterTheRetryAfterTheServerAskedFor() {
		sdk.mock.faults(SdkMock.FAST.withErrors(0.5, 429, 1));
		sdk.failNext(1);
		String question = "Am I too fast?";
		long requestsBefore = sdk.mock.stats().requests();
		List<Long> subscribedAt = new CopyOnWriteArrayList<>();
		List<Long> failedAt = new CopyOnWriteArrayList<>();
		Function<ChatRequest, Flux<ChatChunk>> streams = OpenAiStreams.of(sdk.client, SdkMock.params(question));
		Function<ChatRequest, Publisher<ChatChunk>> timed = request -> streams.apply(request)
			.doOnSubscribe(s -> subscribedAt.add(System.nanoTime()))
			.doOnError(e -> failedAt.add(System.nanoTime()));
		AiGuard<ChatChunk> guard = AiGuard.of(policy("sdk-429")
			.retry(RetryRules.backoff(2, Duration.ofMillis(50)).jitter(0))
			.build());

		StepVerifier.create(text(guard.call(SdkMock.request(question), timed)))
			.expectNext(MockAnswers.text(question))
			.expectComplete()
			.verify(SdkMock.WAIT);

		GuardReport report = onlyReport();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).hasSize(2);
		assertThat(report.attempts().get(0).error()).isInstanceOfSatisfying(RateLimitedException.class, e -> {
			assertThat(e.status()).isEqualTo(429);
			assertThat(e.retryAfter()).contains(Duration.ofSeconds(1));
		});
		assertThat(subscribedAt).hasSize(2);
		assertThat(failedAt).hasSize(1);
		Duration waited = Duration.ofNanos(subscribedAt.get(1) - failedAt.get(0));
		assertThat(waited).as("the server asked for 1 s, the backoff alone is 50 ms")
			.isGreaterThanOrEqualTo(Duration.ofMillis(990))
			.isLessThan(Duration.ofMillis(1500));
		assertThat(sdk.mock.stats().requests()).isEqualTo(requestsBefore + 2);
	}

	@Test
	void aStormOf500sOpensTheBreakerAndThenTheFallbackAnswers() {
		sdk.mock.faults(SdkMock.FAST.withErrors(1.0, 500, 0));
		CircuitBreaker breaker = CircuitBreaker.builder("openai-sdk")
			.config(BreakerConfig.custom()
				.countWindow(4)
				.minimumCalls(3)
				.failureRateThreshold(0.5)
				.openWait(Duration.ofSeconds(30))
				.build())
			.build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy("sdk-storm").breaker(breaker).build());
		long requestsBefore = sdk.mock.stats().requests();

		for (int i = 0; i < 3; i++) {
			StepVerifier.create(guard.call(SdkMock.request("storm " + i), OpenAiStreams.of(sdk.client,
						SdkMock.params("storm " + i))))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderServerException.class,
						p -> assertThat(p.status()).isEqualTo(500)))
				.verify(SdkMock.WAIT);
		}
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		// reports come after the terminal signal: the storm's three are in before the refused one
		SdkMock.await(() -> reports.size(), 3);

		StepVerifier.create(guard.call(SdkMock.request("storm 3"), OpenAiStreams.of(sdk.client, SdkMock.params("storm 3"))))
			.expectError(BreakerOpenException.class)
			.verify(SdkMock.WAIT);
		SdkMock.await(() -> reports.size(), 4);
		assertThat(reports.get(3).outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(reports.get(3).attempts()).isEmpty();
		assertThat(sdk.mock.stats().requests()).as("the open breaker sent nothing").isEqualTo(requestsBefore + 3);

		AiGuard<ChatChunk> withFallback = AiGuard.of(policy("sdk-storm-fallback")
			.breaker(breaker)
			.fallback(FallbackChain.<ChatChunk>builder()
				.step(Fallback.staticText("The assistant is busy, please try again in a minute."))
				.build())
			.build());
		StepVerifier.create(text(withFallback.call(SdkMock.request("storm 4"), OpenAiStreams.of(sdk.client,
					SdkMock.params("storm 4")))))
			.expectNext("The assistant is busy, please try again in a minute.")
			.expectComplete()
			.verify(SdkMock.WAIT);
		SdkMock.await(() -> reports.size(), 5);
		assertThat(reports.get(4).source()).isEqualTo(Source.STATIC);
		assertThat(sdk.mock.stats().requests()).isEqualTo(requestsBefore + 3);
	}

	@Test
	void aPromptTooLongForTheContextIsTruncatedAndAnswered() {
		int limit = 120;
		sdk.mock.faults(SdkMock.FAST.withContextLimit(limit));
		ChatRequest conversation = new ChatRequest("mock-1", List.of(
				ChatMessage.system("Answer briefly."),
				ChatMessage.user("an old question that goes on and on ".repeat(12)),
				ChatMessage.assistant("an old answer that goes on and on as well ".repeat(12)),
				ChatMessage.user("And now?")), null, null);
		ChatCompletionCreateParams template = ChatCompletionCreateParams.builder()
			.model("mock-1")
			.addUserMessage("replaced by the request's messages")
			.temperature(0.2)
			.build();
		List<ChatRequest> sent = new CopyOnWriteArrayList<>();
		Function<ChatRequest, Flux<ChatChunk>> streams = OpenAiStreams.of(sdk.client, template);
		Function<ChatRequest, Publisher<ChatChunk>> recorded = request -> {
			sent.add(request);
			return streams.apply(request);
		};
		AiGuard<ChatChunk> guard = AiGuard.of(policy("sdk-truncation")
			.truncation(TruncationSpec.defaults().reservedOutputTokens(20))
			.build());
		MockModelServer.Stats before = sdk.mock.stats();

		StepVerifier.create(text(guard.call(conversation, recorded)))
			.expectNext(MockAnswers.text("And now?"))
			.expectComplete()
			.verify(SdkMock.WAIT);

		MockModelServer.Stats after = sdk.mock.stats();
		assertThat(after.requests() - before.requests()).isEqualTo(2);
		assertThat(after.contextRejections() - before.contextRejections()).isEqualTo(1);
		// the count follows the last byte written: the client may have read it first
		StepVerifier.create(Flux.interval(Duration.ofMillis(10)).map(i -> sdk.mock.stats().completed() - before.completed())
				.filter(n -> n >= 1).take(1).timeout(SdkMock.WAIT))
			.expectNext(1L)
			.verifyComplete();
		assertThat(sent).hasSize(2);
		// the mock counts a prompt's tokens with this estimate; the first was over its limit, the second within
		TokenCounter counter = TokenCounter.estimate();
		int first = counter.count(OpenAiRequests.toChatRequest(OpenAiRequests.toParams(template, sent.get(0))).messages());
		int second = counter.count(OpenAiRequests.toChatRequest(OpenAiRequests.toParams(template, sent.get(1))).messages());
		assertThat(first).isGreaterThan(limit);
		assertThat(second).isLessThanOrEqualTo(limit).isLessThan(first);
		assertThat(sent.get(1).lastMessage()).isEqualTo(ChatMessage.user("And now?"));
		GuardReport report = onlyReport();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).hasSize(2);
	}

	/**
	 * Why the docs say {@code maxRetries(0)}: by default the SDK retries a 500 twice on its own, so
	 * one guarded attempt is three requests, and every retry of the guard three more.
	 */
	@Test
	void theSdksOwnRetriesMultiplyRequestsUnlessTurnedOff() {
		sdk.mock.faults(SdkMock.FAST.withErrors(1.0, 500, 0));
		OpenAIClientAsync retrying = OpenAIOkHttpClientAsync.builder()
			.baseUrl(sdk.mock.baseUrl())
			.apiKey("test-key")
			.build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy("sdk-own-retries").build());
		try {
			long before = sdk.mock.stats().requests();
			StepVerifier.create(guard.call(SdkMock.request("retry storm"), OpenAiStreams.of(retrying,
						SdkMock.params("retry storm"))))
				.expectError(ProviderServerException.class)
				.verify(SdkMock.WAIT);
			assertThat(sdk.mock.stats().requests() - before).as("the SDK's default: 1 + 2 retries").isEqualTo(3);

			long beforeOff = sdk.mock.stats().requests();
			StepVerifier.create(guard.call(SdkMock.request("retry storm"), OpenAiStreams.of(sdk.client,
						SdkMock.params("retry storm"))))
				.expectError(ProviderServerException.class)
				.verify(SdkMock.WAIT);
			assertThat(sdk.mock.stats().requests() - beforeOff).as("maxRetries(0)").isEqualTo(1);
		}
		finally {
			retrying.close();
		}
	}
}
