package dev.aiguard.springai;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.StallPhase;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.truncation.TruncationSpec;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisor;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisorChain;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.messages.Message;
import org.springframework.ai.chat.messages.SystemMessage;
import org.springframework.ai.chat.messages.UserMessage;
import org.springframework.ai.openai.OpenAiChatOptions;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ChatClient.stream()} guarded by {@link AiGuardAdvisor}, against Spring AI's real
 * {@code OpenAiChatModel} talking HTTP to the mock model.
 */
class AiGuardAdvisorStreamTest extends AdvisorFixture {

	private static final Duration IDLE = Duration.ofMillis(400);
	private static final Duration FIRST_TOKEN = Duration.ofMillis(400);
	/** How late a deadline may be seen: the idle check's granularity (1/20 of it) and scheduling. */
	private static final long SLACK_MILLIS = 100;

	AiGuardAdvisorStreamTest() {
		super("spring-ai-stream");
	}

	@Test
	void aHealthyAnswerStreamsThroughWithOneSuccessfulAttempt() {
		ChatClient chat = client(policy().stall(StallSpec.defaults().idleTimeout(IDLE)).build());

		List<String> tokens = chat.prompt("Why do streams stall?").stream().content().collectList().block(WAIT);

		assertThat(String.join("", tokens)).isEqualTo(MockAnswers.text("Why do streams stall?"));
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).hasSize(1);
		assertThat(report.tokens()).isEqualTo(MockAnswers.tokens("Why do streams stall?").size());
		assertThat(report.finishReason()).isEqualTo("STOP");
		assertThat(report.outputTruncated()).isFalse();
		assertThat(probe.attempts).hasSize(1);
	}

	/** Behind the guard: records the thread each attempt's chain is subscribed on. */
	static final class SubscribingThread implements StreamAdvisor {

		final List<String> threads = new CopyOnWriteArrayList<>();

		@Override
		public Flux<ChatClientResponse> adviseStream(ChatClientRequest request, StreamAdvisorChain chain) {
			return Flux.defer(() -> {
				threads.add(Thread.currentThread().getName());
				return chain.nextStream(request);
			});
		}

		@Override
		public String getName() {
			return "subscribing-thread";
		}

		@Override
		public int getOrder() {
			return AiGuardAdvisor.DEFAULT_ORDER + 1;
		}
	}

	@Test
	void theChainIsSubscribedOnTheStreamSchedulerNeverOnTheSubscribersThread() {
		Scheduler single = Schedulers.newSingle("stream-subscribe");
		try {
			SubscribingThread defaults = new SubscribingThread();
			ChatClient chat = ChatClient.builder(ai.model)
				.defaultAdvisors(AiGuardAdvisor.of(policy().build()), defaults)
				.build();
			// subscribed from a non-blocking thread, as a WebFlux handler would
			assertThat(String.join("", chat.prompt("Hello").stream().content().subscribeOn(Schedulers.parallel())
					.collectList().block(WAIT))).isEqualTo(MockAnswers.text("Hello"));
			assertThat(defaults.threads).singleElement().asString().startsWith("boundedElastic");

			SubscribingThread chosen = new SubscribingThread();
			ChatClient onSingle = ChatClient.builder(ai.model)
				.defaultAdvisors(AiGuardAdvisor.builder(policy().build()).streamScheduler(single).build(), chosen)
				.build();
			assertThat(String.join("", onSingle.prompt("Hello").stream().content().collectList().block(WAIT)))
				.isEqualTo(MockAnswers.text("Hello"));
			assertThat(chosen.threads).singleElement().asString().startsWith("stream-subscribe");
		}
		finally {
			single.dispose();
		}
	}

	@Test
	void aStallMidStreamEndsWithinTheIdleDeadlineAndClosesTheUpstreamConnection() {
		ai.mock.faults(ai.mock.faults().withStallAfter(3));
		ChatClient chat = client(policy().stall(StallSpec.defaults().idleTimeout(IDLE).idleChecks(20)).build());
		AtomicLong lastToken = new AtomicLong();
		AtomicLong failed = new AtomicLong();

		StepVerifier.create(chat.prompt("Hello").stream().content()
				.doOnNext(t -> lastToken.set(System.nanoTime()))
				.doOnError(e -> failed.set(System.nanoTime())))
			.expectNextCount(3)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.cause().isInstanceOfSatisfying(StreamStalledException.class,
						s -> assertThat(s.phase()).isEqualTo(StallPhase.IDLE)))
			.verify(WAIT);

		assertThat(Duration.ofNanos(failed.get() - lastToken.get())).isLessThanOrEqualTo(IDLE.plusMillis(SLACK_MILLIS));
		assertThat(reports.next().block(WAIT).outcome()).isEqualTo(Outcome.STALLED);
		// the connection is closed, at the latest when the SDK's blocked read times out
		assertThat(ai.noneInProgress().block(WAIT)).isZero();
		assertThat(ai.mock.stats().cancelled()).isEqualTo(1);
	}

	@Test
	void aFirstTokenStallEndsWithinTheFirstTokenDeadlineAndClosesTheUpstreamConnection() {
		ai.mock.faults(ai.mock.faults().withPace(5_000, 5));
		ChatClient chat = client(policy().stall(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN)).build());
		AtomicLong subscribed = new AtomicLong();
		AtomicLong failed = new AtomicLong();

		StepVerifier.create(chat.prompt("Hello").stream().content()
				.doOnSubscribe(s -> subscribed.set(System.nanoTime()))
				.doOnError(e -> failed.set(System.nanoTime())))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(StreamStalledException.class,
					s -> assertThat(s.phase()).isEqualTo(StallPhase.FIRST_TOKEN)))
			.verify(WAIT);

		assertThat(Duration.ofNanos(failed.get() - subscribed.get()))
			.isLessThanOrEqualTo(FIRST_TOKEN.plusMillis(SLACK_MILLIS));
		assertThat(reports.next().block(WAIT).outcome()).isEqualTo(Outcome.STALLED);
		assertThat(ai.noneInProgress().block(WAIT)).isZero();
	}

	@Test
	void anAnswerWithoutFinishReasonIsIncomplete() {
		ai.mock.faults(ai.mock.faults().withOmitTerminal(true));
		ChatClient chat = client(policy().build());

		StepVerifier.create(chat.prompt("Hello").stream().content())
			.expectNextCount(MockAnswers.tokens("Hello").size())
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.cause().isInstanceOf(IncompleteStreamException.class))
			.verify(WAIT);

		assertThat(reports.next().block(WAIT).outcome()).isEqualTo(Outcome.INCOMPLETE);
	}

	@Test
	void a429IsARateLimitedExceptionWithTheRetryAfterOfTheResponse() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 429, 2));
		ChatClient chat = client(policy().build());

		StepVerifier.create(chat.prompt("Hello").stream().content())
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class, r -> {
				assertThat(r.status()).isEqualTo(429);
				assertThat(r.retryAfter()).contains(Duration.ofSeconds(2));
			}))
			.verify(WAIT);

		GuardReport report = reports.next().block(WAIT);
		assertThat(report.outcome()).isEqualTo(Outcome.FAILURE);
		assertThat(report.attempts()).hasSize(1);
	}

	@Test
	void theGuardsRetryWaitsTheRetryAfterOfA429AndCallsTheChainAgain() {
		ai.close();
		// the first request draws an error, every later one does not
		AtomicInteger draws = new AtomicInteger();
		ai = new SpringAiMock(() -> draws.getAndIncrement() == 0 ? 0.0 : 0.99);
		ai.mock.faults(ai.mock.faults().withErrors(0.5, 429, 1));
		ChatClient chat = client(policy().retry(RetryRules.backoff(3, Duration.ofMillis(10))).build());

		List<String> tokens = chat.prompt("Hello").stream().content().collectList().block(WAIT);

		assertThat(String.join("", tokens)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
			.containsExactly(Outcome.FAILURE, Outcome.SUCCESS);
		assertThat(report.attempts().get(0).error()).isInstanceOf(RateLimitedException.class);
		assertThat(probe.attempts).hasSize(2);
		assertThat(Duration.ofNanos(probe.attempts.get(1).nanos() - probe.attempts.get(0).nanos()))
			.isGreaterThanOrEqualTo(Duration.ofSeconds(1));
		assertThat(ai.mock.stats().requests()).isEqualTo(2);
	}

	@Test
	void a500StormOpensTheBreakerAndTheModelIsNoLongerCalled() {
		ai.mock.faults(ai.mock.faults().withErrors(1.0, 500, 0));
		GuardPolicy policy = policy().breaker(BreakerConfig.custom()
			.failureRateThreshold(0.5)
			.minimumCalls(3)
			.countWindow(5)
			.openWait(Duration.ofMinutes(1))
			.build()).build();
		ChatClient chat = client(policy);

		for (int i = 0; i < 3; i++) {
			StepVerifier.create(chat.prompt("Hello").stream().content())
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderServerException.class,
						s -> assertThat(s.status()).isEqualTo(500)))
				.verify(WAIT);
		}
		assertThat(policy.breaker().state()).isEqualTo(BreakerState.OPEN);

		StepVerifier.create(chat.prompt("Hello").stream().content())
			.expectError(BreakerOpenException.class)
			.verify(WAIT);
		assertThat(ai.mock.stats().requests()).isEqualTo(3);
		List<Outcome> outcomes = new ArrayList<>();
		for (int i = 0; i < 4; i++) {
			outcomes.add(reports.next().block(WAIT).outcome());
		}
		// reports follow their streams' ends, so the last two may come in either order
		assertThat(outcomes).containsExactlyInAnyOrder(Outcome.FAILURE, Outcome.FAILURE, Outcome.FAILURE,
				Outcome.REJECTED);
	}

	@Test
	void aContextLengthErrorIsRecoveredByTruncatingThePromptThroughTheAdvisor() {
		ai.mock.faults(ai.mock.faults().withContextLimit(120));
		ChatClient chat = client(policy()
			.truncation(TruncationSpec.defaults().reservedOutputTokens(10))
			.build());
		List<Message> history = new ArrayList<>();
		history.add(new SystemMessage("Answer briefly."));
		for (int i = 0; i < 6; i++) {
			history.add(new UserMessage("Earlier question " + i + ": " + "tell me about circuit breakers ".repeat(6)));
			history.add(new AssistantMessage("Earlier answer " + i + ": " + "breakers open when calls fail ".repeat(6)));
		}
		OpenAiChatOptions.Builder options = OpenAiChatOptions.builder().temperature(0.3);

		List<String> tokens = chat.prompt()
			.messages(history)
			.user("What is a stall?")
			.options(options)
			.stream()
			.content()
			.collectList()
			.block(WAIT);

		assertThat(String.join("", tokens)).isEqualTo(MockAnswers.text("What is a stall?"));
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
			.containsExactly(Outcome.CLIENT_ERROR, Outcome.SUCCESS);
		assertThat(report.attempts().get(0).error()).isInstanceOf(ContextLengthExceededException.class);
		assertThat(probe.attempts).hasSize(2);
		List<Message> first = probe.attempts.get(0).prompt().getInstructions();
		List<Message> second = probe.attempts.get(1).prompt().getInstructions();
		assertThat(first).hasSize(history.size() + 1);
		assertThat(second).hasSizeLessThan(first.size());
		// the system prompt and the question survive, as the types they were
		assertThat(second.get(0)).isInstanceOf(SystemMessage.class).isSameAs(first.get(0));
		assertThat(second.get(second.size() - 1)).isInstanceOf(UserMessage.class)
			.extracting(Message::getText).isEqualTo("What is a stall?");
		assertThat(second).allMatch(m -> m.getClass() == SystemMessage.class || m.getClass() == UserMessage.class
				|| m.getClass() == AssistantMessage.class);
		// the options the prompt was sent with, unchanged
		assertThat(probe.attempts.get(1).prompt().getOptions()).isSameAs(probe.attempts.get(0).prompt().getOptions());
		assertThat(probe.attempts.get(1).prompt().getOptions().getTemperature()).isEqualTo(0.3);
		assertThat(ai.mock.stats().contextRejections()).isEqualTo(1);
	}

	@Test
	void anAnswerCutByTheOutputLimitReportsLengthAsTruncated() {
		ChatClient chat = ChatClient.builder(ai.model(ai.options().maxTokens(4).build()))
			.defaultAdvisors(AiGuardAdvisor.of(policy().build()))
			.build();

		List<String> tokens = chat.prompt("Why do streams stall?").stream().content().collectList().block(WAIT);

		assertThat(tokens).hasSize(4);
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo("LENGTH");
		assertThat(report.outputTruncated()).isTrue();
	}

	@Test
	void theRawResponsesOfTheStreamAreReadAsTheGuardNeeds() {
		// what Spring AI 2.0.1's OpenAiChatModel streams for one answer, read by the inspector
		List<Integer> flags = Flux.from(ai.model.stream(new org.springframework.ai.chat.prompt.Prompt("Hello")))
			.map(SpringAiChunks::flags)
			.collectList()
			.block(WAIT);
		int n = flags.size();
		int content = dev.aiguard.core.ChunkInspector.CONTENT;
		int terminal = dev.aiguard.core.ChunkInspector.TERMINAL | dev.aiguard.core.ChunkInspector.FINISH;

		assertThat(flags.get(0)).as("the role announcement").isZero();
		assertThat(flags.subList(1, n - 2)).hasSize(MockAnswers.tokens("Hello").size()).containsOnly(content);
		assertThat(flags.get(n - 2)).as("empty text, finish reason STOP").isEqualTo(terminal);
		assertThat(flags.get(n - 1)).as("usage only, no generation").isZero();
	}
}
