package dev.aiguard.test;

import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.Usage;
import dev.aiguard.core.Outcome;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import dev.aiguard.truncation.TokenCounter;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The scripted model: the chunks the library's client makes, delays in virtual time, stalls,
 * failures and missing terminals per call, queued scripts, recorded requests.
 */
class ScriptedModelTest {

	private static final ChatRequest HELLO = ChatRequest.of(null,
			List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hello")));

	private static final ChatChunk ROLE = new ChatChunk("", "assistant", null, null, List.of(), false, false);

	private static ProviderServerException serverError() {
		return new ProviderServerException("openai", 500, "server_error", null, "HTTP 500: boom", null);
	}

	@Test
	void mockAnswersAreTheChunksTheLibrarysClientReadsFromTheMockServer() {
		List<ChatChunk> scripted = ScriptedModel.of(ModelScript.mockAnswers()).apply(HELLO).collectList().block();
		List<ChatChunk> overHttp;
		try (MockModelServer mock = MockModelServer.builder().start()) {
			overHttp = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build()
				.stream(HELLO).collectList().block(Duration.ofSeconds(10));
		}

		assertThat(scripted).isEqualTo(overHttp);
		assertThat(scripted).first().isEqualTo(ROLE);
		assertThat(scripted).filteredOn(ChatChunk::hasContent).extracting(ChatChunk::text)
			.containsExactlyElementsOf(MockAnswers.tokens("Hello"));
	}

	@Test
	void anAnswerIsSplitIntoWordsAndEndsWithFinishUsageAndDone() {
		StepVerifier.create(ScriptedModel.of(ModelScript.answer("Hello there world")).apply(HELLO))
			.expectNext(ROLE, ChatChunk.token("Hello "), ChatChunk.token("there "), ChatChunk.token("world"),
					ChatChunk.finish("stop"),
					ChatChunk.usage(new Usage(TokenCounter.estimate().count(HELLO.messages()), 3)),
					ChatChunk.done())
			.verifyComplete();
		StepVerifier.create(ScriptedModel.of(ModelScript.tokens("Hel", "lo").finishReason("length")).apply(HELLO))
			.expectNext(ROLE, ChatChunk.token("Hel"), ChatChunk.token("lo"), ChatChunk.finish("length"))
			.expectNextCount(2)
			.verifyComplete();
	}

	@Test
	void delaysRunInVirtualTime() {
		ScriptedModel model = ScriptedModel.of(ModelScript.tokens("a", "b")
			.firstTokenDelay(Duration.ofSeconds(10))
			.tokenInterval(Duration.ofSeconds(1)));

		StepVerifier.withVirtualTime(() -> ChatSteps.tokens(model.apply(HELLO)))
			.expectSubscription()
			.expectNoEvent(Duration.ofMillis(9_999))
			.thenAwait(Duration.ofMillis(1))
			.expectNext("a")
			.expectNoEvent(Duration.ofMillis(999))
			.thenAwait(Duration.ofMillis(1))
			.expectNext("b")
			.verifyComplete();
	}

	@Test
	void aGivenSchedulerTimesTheDelays() {
		VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		ScriptedModel model = ScriptedModel.of(ModelScript.tokens("a").firstTokenDelay(Duration.ofMinutes(1)), clock);

		StepVerifier.create(ChatSteps.tokens(model.apply(HELLO)))
			.expectSubscription()
			.then(() -> clock.advanceTimeBy(Duration.ofMinutes(1)))
			.expectNext("a")
			.expectComplete()
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void aStallSendsItsTokensThenNothingUntilCancelled() {
		ScriptedModel model = ScriptedModel.of(ModelScript.answer("one two three four").stallAfter(2));

		StepVerifier.withVirtualTime(() -> model.apply(HELLO))
			.expectNext(ROLE, ChatChunk.token("one "), ChatChunk.token("two "))
			.expectNoEvent(Duration.ofHours(1))
			.thenCancel()
			.verify(Duration.ofSeconds(5));
		assertThat(model.cancellations()).isEqualTo(1);
	}

	@Test
	void aFailureBeforeTheFirstTokenComesAfterTheFirstTokenDelayWithNoChunkAtAll() {
		ScriptedModel model = ScriptedModel.of(ModelScript.answer("one two")
			.firstTokenDelay(Duration.ofSeconds(3))
			.failAfter(0, ScriptedModelTest::serverError));

		StepVerifier.withVirtualTime(() -> model.apply(HELLO))
			.expectSubscription()
			.expectNoEvent(Duration.ofMillis(2_999))
			.thenAwait(Duration.ofMillis(1))
			.expectError(ProviderServerException.class)
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void aFailureAfterTokensComesWhenTheNextTokenWouldHave() {
		ScriptedModel model = ScriptedModel.of(ModelScript.answer("one two three")
			.tokenInterval(Duration.ofSeconds(1))
			.failAfter(2, ScriptedModelTest::serverError));

		StepVerifier.withVirtualTime(() -> ChatSteps.tokens(model.apply(HELLO)))
			.expectNext("one ")
			.thenAwait(Duration.ofSeconds(1))
			.expectNext("two ")
			.expectNoEvent(Duration.ofMillis(999))
			.thenAwait(Duration.ofMillis(1))
			.expectError(ProviderServerException.class)
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void eachCallMakesItsOwnException() {
		ScriptedModel model = ScriptedModel.of(ModelScript.tokens("x").failAfter(1, ScriptedModelTest::serverError));
		Flux<ChatChunk> call = model.apply(HELLO);

		Throwable first = call.then().materialize().block().getThrowable();
		Throwable second = call.then().materialize().block().getThrowable();

		assertThat(first).isInstanceOf(ProviderServerException.class).isNotSameAs(second);
		assertThat(model.calls()).as("resubscribing is another call").isEqualTo(2);
	}

	@Test
	void omitTerminalCompletesAfterTheTokensWithoutFinishUsageOrDone() {
		StepVerifier.create(ScriptedModel.of(ModelScript.tokens("a", "b").omitTerminal()).apply(HELLO))
			.expectNext(ROLE, ChatChunk.token("a"), ChatChunk.token("b"))
			.verifyComplete();
	}

	@Test
	void queuedScriptsApplyOncePerCallInOrderThenTheDefault() {
		ScriptedModel model = ScriptedModel.of(ModelScript.tokens("default"))
			.enqueue(ModelScript.tokens("first"), ModelScript.tokens("second"));
		assertThat(model.queued()).isEqualTo(2);

		List<String> answers = Flux.range(0, 4)
			.concatMap(i -> ChatSteps.text(model.apply(HELLO.withModel("m" + i))))
			.collectList().block();

		assertThat(answers).containsExactly("first", "second", "default", "default");
		assertThat(model.queued()).isZero();
		assertThat(model.requests()).extracting(ChatRequest::model).containsExactly("m0", "m1", "m2", "m3");
		assertThat(model.lastRequest().model()).isEqualTo("m3");
	}

	@Test
	void aGuardRetriesAStalledCallAndTheModelSeesBothCalls() {
		ReportRecorder reports = new ReportRecorder();
		GuardPolicy policy = GuardPolicy.builder("scripted")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(2)).idleTimeout(Duration.ofSeconds(1)))
			.retry(RetryRules.backoff(2, Duration.ofMillis(100)))
			.onReport(reports)
			.build();
		ScriptedModel model = ScriptedModel.of(ModelScript.answer("Hello there").tokenInterval(Duration.ofMillis(100)))
			.enqueue(ModelScript.answer("Hello there").firstTokenDelay(Duration.ofSeconds(30)));

		ChatSteps.expectAnswer(StepVerifier.withVirtualTime(() -> AiGuard.of(policy).call(HELLO, model))
			.thenAwait(Duration.ofSeconds(5)), "Hello there")
			.verify(Duration.ofSeconds(5));

		assertThat(reports.expectOutcome(Outcome.SUCCESS).attempts()).extracting(a -> a.outcome())
			.containsExactly(Outcome.STALLED, Outcome.SUCCESS);
		assertThat(model.calls()).isEqualTo(2);
		assertThat(model.cancellations()).as("the stalled call was cancelled").isEqualTo(1);
	}

	@Test
	void concurrentCallsEachTakeADistinctQueuedScript() {
		for (int round = 0; round < 500; round++) {
			ScriptedModel model = ScriptedModel.of(ModelScript.tokens("default"))
				.enqueue(ModelScript.tokens("a"), ModelScript.tokens("b"));
			Queue<String> answers = new ConcurrentLinkedQueue<>();

			RaceTestUtils.race(() -> ChatSteps.text(model.apply(HELLO)).subscribe(answers::add),
					() -> ChatSteps.text(model.apply(HELLO)).subscribe(answers::add),
					() -> ChatSteps.text(model.apply(HELLO)).subscribe(answers::add));

			assertThat(answers).containsExactlyInAnyOrder("a", "b", "default");
			assertThat(model.calls()).isEqualTo(3);
		}
	}

	@Test
	void badScriptsNameTheFieldAndTheValue() {
		ModelScript ok = ModelScript.tokens("a");
		assertThatThrownBy(() -> ok.firstTokenDelay(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class)
			.hasMessage("firstTokenDelay must be 0 or more, was PT-0.001S");
		assertThatThrownBy(() -> ok.tokenInterval(null)).hasMessage("tokenInterval must be 0 or more, was null");
		assertThatThrownBy(() -> ok.stallAfter(-2)).hasMessage("stallAfter must be 0 or more tokens, was -2");
		assertThatThrownBy(() -> ok.failAfter(-1, ScriptedModelTest::serverError))
			.hasMessage("failAfter must be 0 or more tokens, was -1");
		assertThatThrownBy(() -> ok.finishReason(" ")).hasMessage("finishReason must not be blank, was ' '");
		assertThatThrownBy(() -> ModelScript.tokens("a", null)).hasMessage("tokens[1] must not be null");
		assertThatThrownBy(() -> ScriptedModel.of(ok).enqueue(ok, null)).hasMessage("next[1] must not be null");
		assertThatThrownBy(() -> ScriptedModel.of(ok).lastRequest()).isInstanceOf(IllegalStateException.class)
			.hasMessage("the scripted model has not been called");
	}

	@Test
	void aStalledFirstTokenEndsAsStalledInVirtualTime() {
		ReportRecorder reports = new ReportRecorder();
		GuardPolicy policy = GuardPolicy.builder("chat")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(2)))
			.onReport(reports)
			.build();
		ScriptedModel model = ScriptedModel.of(ModelScript.answer("Too late").firstTokenDelay(Duration.ofSeconds(5)));

		StepVerifier.withVirtualTime(() -> ChatSteps.tokens(AiGuard.of(policy).call(HELLO, model)))
			.expectSubscription()
			.expectNoEvent(Duration.ofMillis(1_999))
			.thenAwait(Duration.ofMillis(100))
			.expectError(StreamStalledException.class)
			.verify(Duration.ofSeconds(5));
		reports.expectOutcome(Outcome.STALLED);
	}
}
