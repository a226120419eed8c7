package dev.aiguard.openai;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.stream.Collectors;

import com.openai.client.OpenAIClientAsync;
import com.openai.client.okhttp.OpenAIOkHttpClientAsync;
import com.openai.core.Timeout;
import com.openai.models.ChatModel;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.truncation.TruncationSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The recipe of docs/openai-sdk.md ("The recipe"), built exactly as written, against the mock
 * model server: each scenario the docs promise, through the SDK's real async client.
 */
class OpenAiSdkRecipeTest {

	@RegisterExtension
	static final SdkMock sdk = SdkMock.shared();

	/** The recipe's stall deadline and read timeout: a stalled connection is closed 15 s after its last byte. */
	private static final Duration STALL_AND_CLOSE = Duration.ofSeconds(15);
	/** Waits that include the recipe's deadlines, read timeout or retry backoffs (0.5 to 8 s) get that much more. */
	private static final Duration LONG_WAIT = SdkMock.WAIT.plus(STALL_AND_CLOSE);

	private final List<GuardReport> reports = new CopyOnWriteArrayList<>();
	private final String baseUrl = sdk.mock.baseUrl();
	private final String key = "sk-recipe-test-key";

	// ---- the recipe, as docs/openai-sdk.md writes it ----

	private final OpenAIClientAsync client = OpenAIOkHttpClientAsync.builder()
		.baseUrl(baseUrl).apiKey(key)                                      // or fromEnv()
		.maxRetries(0)                                                     // the guard retries, not the SDK
		.timeout(Timeout.builder().read(Duration.ofSeconds(15)).build())   // the longest stall deadline + 5 s
		.build();

	private Function<ChatRequest, Flux<ChatChunk>> calls(ChatCompletionCreateParams params) {
		return OpenAiStreams.create(client)
			.secrets(key)                                                      // never shown in an error, even if echoed
			.calls(params);
	}

	private final PriorityLanes lanes = PriorityLanes.builder()
		.lane(Priority.P0, LaneSpec.of(2).lendToLower(0.5).preemptBorrowers(true))   // chat; lends one permit while idle
		.lane(Priority.P1, LaneSpec.of(1))
		.lane(Priority.P2, LaneSpec.of(1))                                            // batch
		.build();
	private final GuardPolicy policy = GuardPolicy.builder("chat")
		.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(10)).idleTimeout(Duration.ofSeconds(10)))
		.retry(RetryRules.defaults())
		.truncation(TruncationSpec.defaults())
		.breaker(BreakerConfig.custom().countWindow(20).minimumCalls(6).failureRateThreshold(0.5).build())
		.lanes(lanes)
		.onReport(reports::add)                                   // the test's only addition: it reads the reports
		.build();
	private final AiGuard<ChatChunk> guard = AiGuard.of(policy);                                  // build once, share

	private Flux<ChatChunk> answer(ChatCompletionCreateParams params, Priority priority) {
		return guard.call(OpenAiRequests.toChatRequest(params), calls(params))
			.contextWrite(priority.asContext());                                     // the request's priority
	}

	private static ChatCompletionCreateParams params(String question) {
		return ChatCompletionCreateParams.builder()
			.model(ChatModel.GPT_4O_MINI).addUserMessage(question).build();
	}

	// ---- the scenarios ----

	@AfterEach
	void closeClient() {
		client.close();
	}

	private static String text(List<ChatChunk> chunks) {
		return chunks.stream().filter(ChatChunk::hasContent).map(ChatChunk::text).collect(Collectors.joining());
	}

	private GuardReport report(int n) {
		await("report " + n, () -> reports.size() >= n);
		return reports.get(n - 1);
	}

	private static void await(String what, BooleanSupplier condition) {
		Flux.interval(Duration.ZERO, Duration.ofMillis(10))
			.filter(i -> condition.getAsBoolean())
			.next()
			.timeout(LONG_WAIT, Mono.error(() -> new AssertionError("timed out waiting for: " + what)))
			.block();
	}

	@Test
	void aNormalAnswer() {
		List<ChatChunk> chunks = answer(params("Hello"), Priority.P0).collectList().block(SdkMock.WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		assertThat(chunks.get(chunks.size() - 1)).isEqualTo(ChatChunk.done());
		GuardReport report = report(1);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo("stop");
		assertThat(sdk.mock.lastRequest().body()).contains("gpt-4o-mini");
	}

	@Test
	void aStallAfterFiveTokens() {
		sdk.mock.faults(SdkMock.FAST.withStallAfter(5));

		StepVerifier.create(answer(params("Hello"), Priority.P0).filter(ChatChunk::hasContent))
			.expectNextCount(5)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.hasCauseInstanceOf(StreamStalledException.class))
			.verify(LONG_WAIT);

		GuardReport report = report(1);
		assertThat(report.outcome()).isEqualTo(Outcome.STALLED);
		assertThat(report.attempts()).as("tokens were shown: no retry").hasSize(1);
		await("the read timeout closed the stalled connection", () -> sdk.mock.stats().inProgress() == 0);
	}

	@Test
	void aDroppedConnection() {
		sdk.mock.faults(SdkMock.FAST.withDropAfter(3));
		long before = sdk.mock.stats().requests();

		StepVerifier.create(answer(params("Hello"), Priority.P0).filter(ChatChunk::hasContent))
			.expectNextCount(3)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.hasCauseInstanceOf(ProviderConnectionException.class))
			.verify(SdkMock.WAIT);

		assertThat(report(1).outcome()).isEqualTo(Outcome.FAILURE);
		assertThat(sdk.mock.stats().requests()).isEqualTo(before + 1);
	}

	@Test
	void aRateLimitWithRetryAfterIsRetriedAfterThatWait() {
		sdk.mock.enqueue(SdkMock.FAST.withErrors(1.0, 429, 1));
		long before = sdk.mock.stats().requests();

		long start = System.nanoTime();
		List<ChatChunk> chunks = answer(params("Hello"), Priority.P0).collectList().block(LONG_WAIT);
		Duration took = Duration.ofNanos(System.nanoTime() - start);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = report(1);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).hasSize(2);
		assertThat(report.attempts().get(0).error()).isInstanceOfSatisfying(RateLimitedException.class,
				r -> assertThat(r.retryAfter()).contains(Duration.ofSeconds(1)));
		assertThat(took).as("the retry waited the second the server asked for").isGreaterThanOrEqualTo(Duration.ofSeconds(1));
		assertThat(sdk.mock.stats().requests()).as("the SDK did not retry on its own").isEqualTo(before + 2);
	}

	@Test
	void aServerErrorThenSuccess() {
		sdk.mock.enqueue(SdkMock.FAST.withErrors(1.0, 500, 0));

		List<ChatChunk> chunks = answer(params("Hello"), Priority.P0).collectList().block(LONG_WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = report(1);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
			.containsExactly(Outcome.FAILURE, Outcome.SUCCESS);
		assertThat(report.attempts().get(0).error()).isInstanceOf(ProviderServerException.class);
	}

	@Test
	void aContextLengthErrorIsTruncatedAndAnswered() {
		// room for the recipe's default 1024 reserved output tokens, and a history far over the limit
		sdk.mock.faults(SdkMock.FAST.withContextLimit(2_000));
		long rejectionsBefore = sdk.mock.stats().contextRejections();
		ChatCompletionCreateParams.Builder conversation = ChatCompletionCreateParams.builder()
			.model(ChatModel.GPT_4O_MINI).addSystemMessage("Be brief.");
		for (int i = 0; i < 6; i++) {
			conversation.addUserMessage("Earlier question " + i + ": " + "context ".repeat(400))
				.addAssistantMessage("Earlier answer " + i + ": " + "detail ".repeat(400));
		}
		ChatCompletionCreateParams params = conversation.addUserMessage("What is a lane?").build();

		List<ChatChunk> chunks = answer(params, Priority.P0).collectList().block(LONG_WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("What is a lane?"));
		GuardReport report = report(1);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts().get(0).error()).isInstanceOf(ContextLengthExceededException.class);
		assertThat(sdk.mock.stats().contextRejections()).isEqualTo(rejectionsBefore + 1);
	}

	@ParameterizedTest
	@CsvSource({ "stop, stop", "STOP, stop", "Stop, stop", "LENGTH, length", "content_filter, content_filter",
			"Tool_Calls, tool_calls" })
	void aFinishReasonInEitherCase(String sent, String reported) {
		sdk.mock.faults(SdkMock.FAST.withFinishReason(sent));

		List<ChatChunk> chunks = answer(params("Hello"), Priority.P0).collectList().block(SdkMock.WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = report(1);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo(reported);
	}

	@Test
	void aUserCancelClosesTheConnection() {
		sdk.mock.faults(SdkMock.FAST.withPace(0, 50));
		long cancelledBefore = sdk.mock.stats().cancelled();

		List<ChatChunk> first = answer(params("Hello"), Priority.P0).filter(ChatChunk::hasContent).take(3)
			.collectList().block(SdkMock.WAIT);

		assertThat(first).hasSize(3);
		assertThat(report(1).outcome()).isEqualTo(Outcome.CANCELLED);
		await("the mock saw the connection close", () -> sdk.mock.stats().inProgress() == 0);
		assertThat(sdk.mock.stats().cancelled()).isEqualTo(cancelledBefore + 1);
	}

	@Test
	void aStormOfServerErrorsOpensTheBreaker() {
		sdk.mock.faults(SdkMock.FAST.withErrors(1.0, 500, 0));

		for (int request = 1; request <= 3 && policy.breaker().state() != BreakerState.OPEN; request++) {
			StepVerifier.create(answer(params("Hello"), Priority.P0))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOfAny(ProviderServerException.class,
						BreakerOpenException.class))
				.verify(LONG_WAIT);
			report(request);
		}
		assertThat(policy.breaker().state()).isEqualTo(BreakerState.OPEN);
		int reported = reports.size();
		long sent = sdk.mock.stats().requests();

		StepVerifier.create(answer(params("Hello"), Priority.P0)).expectError(BreakerOpenException.class)
			.verify(SdkMock.WAIT);

		assertThat(report(reported + 1).outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(sdk.mock.stats().requests()).as("the open breaker sent nothing").isEqualTo(sent);
	}

	@Test
	void aP0RequestPreemptsAP2RequestOnALentPermit() {
		// long answers: every lane stays busy while the next request arrives
		sdk.mock.faults(SdkMock.FAST.withPace(0, 100));
		Disposable p1 = answer(params("Hello"), Priority.P1).subscribe(c -> { }, e -> { });
		await("P1's permit in use", () -> sdk.mock.stats().inProgress() == 1);
		List<Throwable> p2Errors = new CopyOnWriteArrayList<>();
		Disposable p2own = answer(params("Hello"), Priority.P2).subscribe(c -> { }, p2Errors::add);
		Disposable p2lent = answer(params("Hello"), Priority.P2).subscribe(c -> { }, p2Errors::add);
		await("P2 on its own permit and on the one P0 lends", () -> sdk.mock.stats().inProgress() == 3);
		Disposable p0first = answer(params("Hello"), Priority.P0).subscribe(c -> { }, e -> { });
		await("P0 on its own free permit", () -> sdk.mock.stats().inProgress() == 4);

		Mono<String> urgent = answer(params("Hi"), Priority.P0).filter(ChatChunk::hasContent).map(ChatChunk::text)
			.reduce(String::concat);

		StepVerifier.create(urgent).expectNext(MockAnswers.text("Hi")).expectComplete().verify(LONG_WAIT);
		assertThat(p2Errors).singleElement().satisfies(e -> assertThat(e).satisfiesAnyOf(
				p -> assertThat(p).isInstanceOf(PreemptedException.class),
				p -> assertThat(p).isInstanceOf(PartialStreamException.class).hasCauseInstanceOf(PreemptedException.class)));
		p1.dispose();
		p2own.dispose();
		p2lent.dispose();
		p0first.dispose();
		await("every connection closed", () -> sdk.mock.stats().inProgress() == 0);
	}
}
