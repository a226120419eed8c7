package dev.aiguard.langchain4j;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

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
import dev.aiguard.chat.ChatMessage;
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
import dev.aiguard.test.mock.MockModelServer;
import dev.aiguard.truncation.TruncationSpec;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static dev.aiguard.langchain4j.MockModels.WAIT;
import static dev.aiguard.langchain4j.MockModels.await;
import static dev.aiguard.langchain4j.MockModels.awaitNoneInProgress;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The recipe of docs/langchain4j.md ("The recipe"), built exactly as written, against the mock
 * model server: each scenario the docs promise, through LangChain4j's real OpenAI model.
 */
class LangChain4jRecipeTest {

	/** The stall deadlines of the recipe: a stall is reported 10 s after the last token. */
	private static final Duration IDLE = Duration.ofSeconds(10);
	/** Waits that include the recipe's 10 s deadline (or its 0.5 to 8 s retry backoffs) get that much more. */
	private static final Duration LONG_WAIT = WAIT.plus(IDLE);

	@AutoClose
	private final MockModelServer mock = MockModels.startMock();
	private final BlockingQueue<GuardReport> reports = new LinkedBlockingQueue<>();

	private final String baseUrl = mock.baseUrl();
	private final String key = "sk-recipe-test-key";

	// ---- the recipe, as docs/langchain4j.md writes it ----

	private final StreamingChatModel model = OpenAiStreamingChatModel.builder()
		.httpClientBuilder(AbortableHttpClientBuilder.create())   // cancel before the first token, Retry-After
		.baseUrl(baseUrl).apiKey(key).modelName("gpt-4o-mini").build();
	private final LangChain4jStreams streams = LangChain4jStreams.builder(model)
		.secrets(key)                                             // never shown in an error, even if echoed
		.build();

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
	private final AiGuard<ChatChunk> guard = AiGuard.of(policy);                // build once, share

	private Flux<ChatChunk> answer(ChatRequest request, Priority priority) {
		return guard.call(request, streams)
			.contextWrite(priority.asContext());                   // the request's priority
	}

	// ---- the scenarios ----

	private static ChatRequest ask(String question) {
		return ChatRequest.of(null, List.of(ChatMessage.system("Be brief."), ChatMessage.user(question)));
	}

	private static String text(List<ChatChunk> chunks) {
		return chunks.stream().filter(ChatChunk::hasContent).map(ChatChunk::text).collect(Collectors.joining());
	}

	private GuardReport report() throws InterruptedException {
		GuardReport report = reports.poll(LONG_WAIT.toMillis(), TimeUnit.MILLISECONDS);
		assertThat(report).as("a report within " + LONG_WAIT).isNotNull();
		return report;
	}

	@Test
	void aNormalAnswer() throws InterruptedException {
		List<ChatChunk> chunks = answer(ask("Hello"), Priority.P0).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		assertThat(chunks.get(chunks.size() - 1)).isEqualTo(ChatChunk.done());
		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo("stop");
		assertThat(mock.lastRequest().body()).contains("gpt-4o-mini");
	}

	@Test
	void aStallAfterFiveTokens() throws InterruptedException {
		mock.faults(mock.faults().withStallAfter(5));

		StepVerifier.create(answer(ask("Hello"), Priority.P0).filter(ChatChunk::hasContent))
			.expectNextCount(5)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.hasCauseInstanceOf(StreamStalledException.class))
			.verify(LONG_WAIT);

		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.STALLED);
		assertThat(report.attempts()).as("tokens were shown: no retry").hasSize(1);
		awaitNoneInProgress(mock);
		assertThat(mock.stats().cancelled()).as("the stalled connection was closed").isEqualTo(1);
	}

	/**
	 * The mock sends three chunks and closes the connection. The client shows what it read before it
	 * heard of the close: the JDK client behind LangChain4j gives up the chunks it has received but not
	 * yet handed over once the close is signalled, so on a busy machine an attempt may show fewer than
	 * three tokens, or none. The rule decides from what was shown: an attempt that failed before its
	 * first token is retried, one that showed a token never is.
	 */
	@Test
	void aDroppedConnection() throws InterruptedException {
		mock.faults(mock.faults().withDropAfter(3));
		List<ChatChunk> shown = new CopyOnWriteArrayList<>();
		AtomicReference<Throwable> error = new AtomicReference<>();

		StepVerifier.create(answer(ask("Hello"), Priority.P0).filter(ChatChunk::hasContent).doOnNext(shown::add))
			.thenConsumeWhile(chunk -> true)
			.expectErrorSatisfies(error::set)
			.verify(LONG_WAIT);                                    // retries wait their backoff

		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.FAILURE);
		List<GuardReport.Attempt> attempts = report.attempts();
		GuardReport.Attempt last = attempts.get(attempts.size() - 1);
		assertThat(attempts.subList(0, attempts.size() - 1)).as("retried only before a first token")
			.allSatisfy(a -> assertThat(a.tokens()).isZero());
		assertThat(attempts).allSatisfy(a -> assertThat(a.error()).isInstanceOf(ProviderConnectionException.class));
		assertThat(last.tokens()).as("the last attempt's tokens are the ones shown").isEqualTo(shown.size())
			.isLessThanOrEqualTo(3);
		assertThat(MockAnswers.text("Hello")).startsWith(text(shown));
		if (shown.isEmpty()) {
			assertThat(attempts).as("nothing shown: every attempt was made").hasSize(RetryRules.defaults().maxAttempts());
			assertThat(error.get()).isInstanceOf(ProviderConnectionException.class);
		}
		else {
			assertThat(error.get()).as("tokens were shown: not retried").isInstanceOf(PartialStreamException.class)
				.hasCauseInstanceOf(ProviderConnectionException.class);
		}
		assertThat(mock.stats().requests()).as("one request per attempt").isEqualTo(attempts.size());
		assertThat(mock.stats().dropped()).isEqualTo(attempts.size());
	}

	@Test
	void aRateLimitWithRetryAfterIsRetriedAfterThatWait() throws InterruptedException {
		mock.enqueue(mock.faults().withErrors(1.0, 429, 1));

		long start = System.nanoTime();
		List<ChatChunk> chunks = answer(ask("Hello"), Priority.P0).collectList().block(LONG_WAIT);
		Duration took = Duration.ofNanos(System.nanoTime() - start);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).hasSize(2);
		assertThat(report.attempts().get(0).error()).isInstanceOfSatisfying(RateLimitedException.class,
				r -> assertThat(r.retryAfter()).contains(Duration.ofSeconds(1)));
		assertThat(took).as("the retry waited the second the server asked for").isGreaterThanOrEqualTo(Duration.ofSeconds(1));
		assertThat(mock.stats().requests()).isEqualTo(2);
	}

	@Test
	void aServerErrorThenSuccess() throws InterruptedException {
		mock.enqueue(mock.faults().withErrors(1.0, 500, 0));

		List<ChatChunk> chunks = answer(ask("Hello"), Priority.P0).collectList().block(LONG_WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
			.containsExactly(Outcome.FAILURE, Outcome.SUCCESS);
		assertThat(report.attempts().get(0).error()).isInstanceOf(ProviderServerException.class);
	}

	@Test
	void aContextLengthErrorIsTruncatedAndAnswered() throws InterruptedException {
		// room for the recipe's default 1024 reserved output tokens, and a history far over the limit
		mock.faults(mock.faults().withContextLimit(2_000));
		List<ChatMessage> conversation = MockModels.longConversation("What is a lane?", 400);

		List<ChatChunk> chunks = answer(ChatRequest.of(null, conversation), Priority.P0).collectList().block(LONG_WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("What is a lane?"));
		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts().get(0).error()).isInstanceOf(ContextLengthExceededException.class);
		assertThat(mock.stats().contextRejections()).isEqualTo(1);
	}

	@ParameterizedTest
	@CsvSource({ "stop, stop", "STOP, stop", "Stop, stop", "LENGTH, length", "content_filter, content_filter",
			"Tool_Calls, tool_calls" })
	void aFinishReasonInEitherCase(String sent, String reported) throws InterruptedException {
		mock.faults(mock.faults().withFinishReason(sent));

		List<ChatChunk> chunks = answer(ask("Hello"), Priority.P0).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = report();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo(reported);
	}

	@Test
	void aUserCancelClosesTheConnection() throws InterruptedException {
		mock.faults(mock.faults().withPace(0, 50));

		List<ChatChunk> first = answer(ask("Hello"), Priority.P0).filter(ChatChunk::hasContent).take(3)
			.collectList().block(WAIT);

		assertThat(first).hasSize(3);
		assertThat(report().outcome()).isEqualTo(Outcome.CANCELLED);
		awaitNoneInProgress(mock);
		assertThat(mock.stats().cancelled()).as("the mock saw the connection close").isEqualTo(1);
		assertThat(mock.stats().completed()).isZero();
	}

	@Test
	void aStormOfServerErrorsOpensTheBreaker() throws InterruptedException {
		mock.faults(mock.faults().withErrors(1.0, 500, 0));

		for (int request = 0; request < 3 && policy.breaker().state() != BreakerState.OPEN; request++) {
			StepVerifier.create(answer(ask("Hello"), Priority.P0))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOfAny(ProviderServerException.class,
						BreakerOpenException.class))
				.verify(LONG_WAIT);
			report();
		}
		assertThat(policy.breaker().state()).isEqualTo(BreakerState.OPEN);
		long sent = mock.stats().requests();

		StepVerifier.create(answer(ask("Hello"), Priority.P0)).expectError(BreakerOpenException.class).verify(WAIT);

		assertThat(report().outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(mock.stats().requests()).as("the open breaker sent nothing").isEqualTo(sent);
	}

	@Test
	void aP0RequestPreemptsAP2RequestOnALentPermit() throws InterruptedException {
		// long answers: every lane stays busy while the next request arrives
		mock.faults(mock.faults().withPace(0, 100));
		Disposable p1 = answer(ask("Hello"), Priority.P1).subscribe(c -> { }, e -> { });
		await("P1's permit in use", () -> mock.stats().inProgress() == 1);
		List<Throwable> p2Errors = new CopyOnWriteArrayList<>();
		Disposable p2own = answer(ask("Hello"), Priority.P2).subscribe(c -> { }, p2Errors::add);
		Disposable p2lent = answer(ask("Hello"), Priority.P2).subscribe(c -> { }, p2Errors::add);
		await("P2 on its own permit and on the one P0 lends", () -> mock.stats().inProgress() == 3);
		Disposable p0first = answer(ask("Hello"), Priority.P0).subscribe(c -> { }, e -> { });
		await("P0 on its own free permit", () -> mock.stats().inProgress() == 4);

		Mono<String> urgent = answer(ask("Hi"), Priority.P0).filter(ChatChunk::hasContent).map(ChatChunk::text)
			.reduce(String::concat);

		StepVerifier.create(urgent).expectNext(MockAnswers.text("Hi")).expectComplete().verify(LONG_WAIT);
		assertThat(p2Errors).singleElement().satisfies(e -> assertThat(e).satisfiesAnyOf(
				p -> assertThat(p).isInstanceOf(PreemptedException.class),
				p -> assertThat(p).isInstanceOf(PartialStreamException.class).hasCauseInstanceOf(PreemptedException.class)));
		p1.dispose();
		p2own.dispose();
		p2lent.dispose();
		p0first.dispose();
		awaitNoneInProgress(mock);
	}
}
