package dev.aiguard.springai;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.GuardPolicy;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PreemptedException;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.core.Priority;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import dev.aiguard.truncation.TruncationSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.openai.OpenAiChatModel;
import org.springframework.ai.openai.OpenAiChatOptions;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * docs/spring-ai.md's recipe, built as the page writes it, against the mock model over HTTP: the
 * cases every client of the library must get right.
 */
class SpringAiRecipeTest {

	/**
	 * The recipe's durations are divided by this: a stall test of the page's 8 s idle deadline
	 * would take 8 s; at 1/10 it takes 800 ms, and every duration keeps its ratio to the others.
	 * (Not less: the first-token deadline, 1 s at this scale, must hold on a busy 2-core machine.)
	 */
	private static final long SCALE = 10;

	private static final String API_KEY = "sk-recipe-0123456789abcdefghij";

	@AutoClose
	SpringAiMock ai = fast(new SpringAiMock());
	private Recipe recipe;

	/**
	 * A token a millisecond: a call() is one "token" to the guard, so its whole answer must come
	 * within the scaled first-token deadline (1 s), with room for a busy machine.
	 */
	private static SpringAiMock fast(SpringAiMock mock) {
		mock.mock.faults(mock.mock.faults().withPace(0, 1));
		return mock;
	}

	/** What the recipe builds. */
	record Recipe(OpenAiChatModel model, GuardPolicy policy, ChatClient chat) {
	}

	private static Duration scaled(Duration recipeDuration) {
		return recipeDuration.dividedBy(SCALE);
	}

	/** The recipe of docs/spring-ai.md, line for line; only the durations go through {@link #scaled}. */
	static Recipe recipe(String baseUrl, String apiKey, String modelName) {
		// the model: no retries of its own (the guard's are the only ones), the whole call capped above
		// the longest answer, one read (the gap between two bytes) a little above the guard's deadlines,
		// finish reasons read in any letter case
		OpenAiChatModel model = OpenAiChatModel.builder()
			.options(OpenAiChatOptions.builder()
				.baseUrl(baseUrl)
				.apiKey(apiKey)
				.model(modelName)
				.maxRetries(0)
				.timeout(scaled(Duration.ofMinutes(10)))
				.build())
			.httpClientBuilderCustomizer(OpenAiHttpCustomizer.builder()
				.connectTimeout(scaled(Duration.ofSeconds(5)))
				.readTimeout(scaled(Duration.ofSeconds(12)))
				.build())
			.build();

		GuardPolicy policy = GuardPolicy.builder("chat")
			.stall(StallSpec.defaults()
				.firstTokenTimeout(scaled(Duration.ofSeconds(10)))
				.idleTimeout(scaled(Duration.ofSeconds(8))))
			.retry(RetryRules.backoff(3, scaled(Duration.ofMillis(500))))
			.breaker(BreakerConfig.custom()
				.failureRateThreshold(0.5)
				.minimumCalls(10)
				.build())
			.lanes(PriorityLanes.builder()
				.name("chat")
				.lane(Priority.P0, LaneSpec.of(4).lendToLower(0.5).preemptBorrowers(true))
				.lane(Priority.P1, LaneSpec.of(2))
				.lane(Priority.P2, LaneSpec.of(2))
				.build())
			.truncation(TruncationSpec.defaults())
			.build();

		ChatClient chat = ChatClient.builder(model)
			.defaultAdvisors(AiGuardAdvisor.builder(policy).secrets(apiKey).build())
			.build();
		return new Recipe(model, policy, chat);
	}

	private ChatClient chat() {
		if (recipe == null) {
			recipe = recipe(ai.mock.baseUrl(), API_KEY, MockModelServer.MODEL);
		}
		return recipe.chat();
	}

	@AfterEach
	void disposeLanes() {
		if (recipe != null) {
			recipe.policy().lanes().dispose();
		}
	}

	/** A mock whose first request draws an error (when its profile has some) and every later one not. */
	private void firstRequestFails() {
		ai.close();
		AtomicInteger draws = new AtomicInteger();
		ai = fast(new SpringAiMock(() -> draws.getAndIncrement() == 0 ? 0.0 : 0.99));
	}

	@Test
	void aNormalAnswerStreamsAndCalls() {
		assertThat(String.join("", chat().prompt("Hello").stream().content().collectList().block(WAIT)))
			.isEqualTo(MockAnswers.text("Hello"));
		assertThat(chat().prompt("Hello").call().content()).isEqualTo(MockAnswers.text("Hello"));
		assertThat(ai.mock.stats().requests()).isEqualTo(2);
	}

	@Test
	void aStallAfterFiveTokensEndsAtTheIdleDeadlineAndClosesTheConnection() {
		ai.mock.faults(ai.mock.faults().withStallAfter(5));

		StepVerifier.create(chat().prompt("Hello").stream().content())
			.expectNextCount(5)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.cause().isInstanceOf(StreamStalledException.class))
			.verify(WAIT);
		assertThat(ai.noneInProgress().block(WAIT)).isZero();
	}

	@Test
	void aDroppedConnectionAfterTokensFailsAsPartial() {
		ai.mock.faults(ai.mock.faults().withDropAfter(5));

		StepVerifier.create(chat().prompt("Hello").stream().content())
			.expectNextCount(5)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.cause().isInstanceOf(ProviderException.class))
			.verify(WAIT);
		assertThat(ai.mock.stats().requests()).as("no retry after tokens were delivered").isEqualTo(1);
	}

	@Test
	void a429WithRetryAfterIsWaitedAndRetried() {
		firstRequestFails();
		ai.mock.faults(ai.mock.faults().withErrors(0.5, 429, 1));
		long start = System.nanoTime();

		String answer = chat().prompt("Hello").stream().content().collectList().map(t -> String.join("", t)).block(WAIT);

		assertThat(answer).isEqualTo(MockAnswers.text("Hello"));
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofSeconds(1));
		assertThat(ai.mock.stats().requests()).isEqualTo(2);
	}

	@Test
	void a500ThenSuccessIsRetriedOnStreamAndCall() {
		firstRequestFails();
		ai.mock.faults(ai.mock.faults().withErrors(0.5, 500, 0));

		assertThat(chat().prompt("Hello").call().content()).isEqualTo(MockAnswers.text("Hello"));
		assertThat(ai.mock.stats().requests()).isEqualTo(2);
	}

	@Test
	void aContextLengthErrorIsRecoveredByTruncation() {
		// the recipe's truncation keeps 1024 tokens for the answer: a window of 1500 leaves the prompt ~470
		ai.mock.faults(ai.mock.faults().withContextLimit(1500));
		List<Message> history = new ArrayList<>();
		history.add(new SystemMessage("Answer briefly."));
		for (int i = 0; i < 10; i++) {
			history.add(new UserMessage("Earlier question " + i + ": " + "tell me about circuit breakers ".repeat(30)));
			history.add(new AssistantMessage("Earlier answer " + i + ": " + "breakers open when calls fail ".repeat(30)));
		}

		String answer = chat().prompt().messages(history).user("What is a stall?").stream().content()
			.collectList().map(t -> String.join("", t)).block(WAIT);

		assertThat(answer).isEqualTo(MockAnswers.text("What is a stall?"));
		assertThat(ai.mock.stats().contextRejections()).isEqualTo(1);
	}

	@ParameterizedTest(name = "{0} on {1}")
	@CsvSource({ "STOP, stream", "stop, stream", "Stop, call", "STOP, call", "LENGTH, stream", "Length, call",
			"content_filter, stream", "TOOL_CALLS, call" })
	void finishReasonsInEitherCaseEndTheAnswer(String reason, String form) {
		ai.mock.faults(ai.mock.faults().withFinishReason(reason));

		if (form.equals("stream")) {
			assertThat(String.join("", chat().prompt("Hello").stream().content().collectList().block(WAIT)))
				.isEqualTo(MockAnswers.text("Hello"));
		}
		else {
			ChatResponse response = chat().prompt("Hello").call().chatResponse();
			assertThat(response.getResult().getOutput().getText()).isEqualTo(MockAnswers.text("Hello"));
			assertThat(response.getResult().getMetadata().getFinishReason()).isEqualToIgnoringCase(reason);
		}
		assertThat(ai.mock.stats().requests()).as("one attempt: the answer was complete").isEqualTo(1);
	}

	@Test
	void aUserCancelClosesTheConnection() {
		ai.mock.faults(ai.mock.faults().withPace(0, 50));

		StepVerifier.create(chat().prompt("Hello").stream().content(), 3)
			.expectNextCount(3)
			.thenCancel()
			.verify(WAIT);

		assertThat(ai.noneInProgress().block(WAIT)).isZero();
		assertThat(ai.mock.stats().cancelled()).isEqualTo(1);
		assertThat(ai.mock.stats().completed()).isZero();
	}

	@Test
	void aFailingModelOpensTheBreakerAndIsNoLongerCalled() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 500, 0));
		ChatClient chat = chat();

		Throwable last = null;
		for (int i = 0; i < 10 && !(last instanceof BreakerOpenException); i++) {
			last = catchThrowable(() -> chat.prompt("Hello").call().content());
		}
		assertThat(recipe.policy().breaker().state()).isEqualTo(BreakerState.OPEN);
		long calls = ai.mock.stats().requests();

		assertThatThrownBy(() -> chat.prompt("Hello").call().content()).isInstanceOf(BreakerOpenException.class);
		StepVerifier.create(chat.prompt("Hello").stream().content()).expectError(BreakerOpenException.class).verify(WAIT);
		assertThat(ai.mock.stats().requests()).isEqualTo(calls);
	}

	@Test
	void aP0RequestPreemptsAP2StreamOnALentPermit() {
		// slow answers keep every lane busy: a token every 100 ms, well inside the idle deadline
		ai.mock.faults(ai.mock.faults().withPace(0, 100));
		ChatClient chat = chat();
		List<Disposable> running = new ArrayList<>();
		List<Throwable> p2Errors = new java.util.concurrent.CopyOnWriteArrayList<>();
		try {
			// P2's own 2 permits and the 2 P0 lends (half of 4), P1's 2, then P0's 2 left
			for (int i = 0; i < 4; i++) {
				running.add(stream(chat, Priority.P2).subscribe(t -> { }, p2Errors::add));
			}
			awaitInProgress(4);
			assertThat(recipe.policy().lanes().borrowedInFlight(Priority.P2)).isEqualTo(2);
			for (int i = 0; i < 2; i++) {
				running.add(stream(chat, Priority.P1).subscribe());
			}
			for (int i = 0; i < 2; i++) {
				running.add(stream(chat, Priority.P0).subscribe());
			}
			awaitInProgress(8);

			// no permit left anywhere: the P0 request takes one lent to P2 back
			StepVerifier.create(stream(chat, Priority.P0).take(3))
				.expectNextCount(3)
				.verifyComplete();

			assertThat(p2Errors).singleElement().satisfies(e -> assertThat(e)
				.isInstanceOf(PartialStreamException.class).cause().isInstanceOf(PreemptedException.class));
		}
		finally {
			running.forEach(Disposable::dispose);
		}
		assertThat(ai.noneInProgress().block(WAIT)).isZero();
	}

	private static Flux<String> stream(ChatClient chat, Priority priority) {
		return chat.prompt("Hello").advisors(a -> a.param(AiGuardAdvisor.PRIORITY, priority)).stream().content();
	}

	private void awaitInProgress(long streams) {
		Flux.interval(Duration.ofMillis(10)).filter(i -> ai.mock.stats().inProgress() >= streams).next()
			.then(Mono.just(true)).block(WAIT);
	}
}
