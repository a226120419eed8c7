package dev.aiguard;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.retry.ContinuationStrategy;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.truncation.TokenCounter;
import dev.aiguard.truncation.TruncationSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Outcome;

/**
 * Prompt truncation through the guard's call form: a context-length error from the provider makes
 * the guard send a smaller request (reaching a parsed limit in one step), gives up with
 * {@link PromptTooLargeException} when the prompt cannot fit, and never touches the request in
 * the transform form.
 */
class GuardTruncationTest {

	static final TokenCounter ESTIMATE = TokenCounter.estimate();
	static final int CONTEXT_LIMIT = 8192;

	final Reports reports = new Reports();
	final RecordingMetrics metrics = new RecordingMetrics();

	GuardPolicy.Builder policy(VirtualTimeScheduler vts) {
		return Policies.onVirtualTime("it-truncation", vts, reports, metrics);
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token)
				.concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()));
	}

	/** A conversation of about 20 000 estimated tokens: a system prompt, 20 long rounds, a short question. */
	static ChatRequest longConversation(Integer maxTokens) {
		List<ChatMessage> messages = new ArrayList<>();
		messages.add(ChatMessage.system("You are a terse assistant."));
		for (int i = 0; i < 20; i++) {
			messages.add(ChatMessage.user("question " + i + " " + "q".repeat(2000)));
			messages.add(ChatMessage.assistant("answer " + i + " " + "a".repeat(2000)));
		}
		messages.add(ChatMessage.user("Summarise our conversation."));
		return ChatRequest.of("gpt-4o", messages).withMaxTokens(maxTokens);
	}

	/** The provider's tokenizer counts 30 % more than the estimate. */
	static int providerTokens(ChatRequest request) {
		return (int) Math.ceil(ESTIMATE.count(request.messages()) * 1.3d);
	}

	static int reservedOutput(ChatRequest request, int reservedByDefault) {
		return request.maxTokens() != null ? request.maxTokens() : reservedByDefault;
	}

	static ProviderException openAiContextError(int actual) {
		String body = "{\"error\":{\"message\":\"This model's maximum context length is " + CONTEXT_LIMIT
				+ " tokens. However, your messages resulted in " + actual + " tokens. Please reduce the length of the "
				+ "messages.\",\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}";
		return ProviderErrors.fromHttp("openai", 400, header -> null, body);
	}

	static ProviderException anthropicContextError(int actual) {
		String body = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: "
				+ actual + " tokens > " + CONTEXT_LIMIT + " maximum\"}}";
		return ProviderErrors.fromHttp("anthropic", 400, header -> null, body);
	}

	/** Refuses a request whose prompt plus reserved output exceeds the window, as providers do; answers otherwise. */
	static final class Provider implements Function<ChatRequest, Flux<ChatChunk>> {

		final Function<Integer, ProviderException> contextError;
		final int reservedByDefault;
		final List<ChatRequest> received = new CopyOnWriteArrayList<>();

		Provider(Function<Integer, ProviderException> contextError, int reservedByDefault) {
			this.contextError = contextError;
			this.reservedByDefault = reservedByDefault;
		}

		@Override
		public Flux<ChatChunk> apply(ChatRequest request) {
			received.add(request);
			int prompt = providerTokens(request);
			if (prompt + reservedOutput(request, reservedByDefault) > CONTEXT_LIMIT) {
				return Flux.error(contextError.apply(prompt));
			}
			return answer("Short", " summary.");
		}
	}

	static Stream<Arguments> providers() {
		return Stream.of(
				Arguments.of("openai, maxTokens on the request", (Function<Integer, ProviderException>) GuardTruncationTest::openAiContextError, 512),
				Arguments.of("openai, reservedOutputTokens", (Function<Integer, ProviderException>) GuardTruncationTest::openAiContextError, null),
				Arguments.of("anthropic, maxTokens on the request", (Function<Integer, ProviderException>) GuardTruncationTest::anthropicContextError, 1024),
				Arguments.of("anthropic, reservedOutputTokens", (Function<Integer, ProviderException>) GuardTruncationTest::anthropicContextError, null));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("providers")
	void aParsedLimitIsReachedInOneStepWithASmallerRequestWithinLimitMinusReserved(String name,
			Function<Integer, ProviderException> contextError, Integer maxTokens) {
		int reservedByDefault = 1000;
		ChatRequest original = longConversation(maxTokens);
		Provider provider = new Provider(contextError, reservedByDefault);
		TruncationSpec truncation = TruncationSpec.defaults().reservedOutputTokens(reservedByDefault);

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get()).truncation(truncation).build())
						.call(original, provider))
				.expectNext(ChatChunk.token("Short"), ChatChunk.token(" summary."), ChatChunk.finish("stop"),
						ChatChunk.done())
				.verifyComplete();

		assertThat(provider.received).as("one truncation step").hasSize(2);
		ChatRequest first = provider.received.get(0);
		ChatRequest second = provider.received.get(1);
		assertThat(first).isSameAs(original);
		int reserved = reservedOutput(original, reservedByDefault);
		assertThat(providerTokens(second)).as("the provider's count of the smaller prompt")
				.isLessThanOrEqualTo(CONTEXT_LIMIT - reserved);
		int before = ESTIMATE.count(first.messages());
		int after = ESTIMATE.count(second.messages());
		assertThat(after).isLessThan(before);
		// only the messages change; the system prompt and the question stay
		assertThat(second.model()).isEqualTo(original.model());
		assertThat(second.maxTokens()).isEqualTo(original.maxTokens());
		assertThat(second.messages().get(0)).isEqualTo(original.messages().get(0));
		assertThat(second.lastMessage()).isEqualTo(original.lastMessage());
		assertThat(metrics.promptTruncated()).containsExactly((long) (before - after));

		GuardReport report = reports.get(0);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
				.containsExactly(Outcome.CLIENT_ERROR, Outcome.SUCCESS);
		assertThat(report.attempts().get(0).error()).isInstanceOf(ContextLengthExceededException.class);
		assertThat(report.tokens()).isEqualTo(2);
	}

	@Test
	void whenTheLastUserMessageAloneIsTooBigTheSubscriberGetsPromptTooLarge() {
		ChatRequest hugeQuestion = ChatRequest.of("gpt-4o", List.of(ChatMessage.system("Be brief."),
				ChatMessage.user("old question"), ChatMessage.assistant("old answer"),
				ChatMessage.user("x".repeat(40_000)))).withMaxTokens(512);
		Provider provider = new Provider(GuardTruncationTest::openAiContextError, 0);

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.truncation(TruncationSpec.defaults())
								.retry(RetryRules.backoff(3, Duration.ofMillis(100)))
								.build())
						.call(hugeQuestion, provider))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PromptTooLargeException.class);
					PromptTooLargeException tooLarge = (PromptTooLargeException) e;
					assertThat(tooLarge.smallestSize()).isGreaterThan(tooLarge.limit().orElseThrow());
					assertThat(tooLarge.getCause()).as("the provider's refusal")
							.isInstanceOf(ContextLengthExceededException.class);
				})
				.verify(Duration.ofSeconds(5));

		assertThat(provider.received).as("nothing sent that could not fit").hasSize(1);
		assertThat(metrics.promptTruncated()).isEmpty();
		assertThat(metrics.retried()).isEmpty();
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.CLIENT_ERROR);
			assertThat(r.error()).isInstanceOf(PromptTooLargeException.class);
			assertThat(r.attempts()).hasSize(1);
		});
	}

	@Test
	void aContinuationAfterATruncationBuildsOnThePromptThatFit() {
		ChatRequest original = longConversation(512);
		List<ChatRequest> received = new CopyOnWriteArrayList<>();
		Function<ChatRequest, Flux<ChatChunk>> model = request -> {
			received.add(request);
			int prompt = providerTokens(request);
			if (prompt + reservedOutput(request, 0) > CONTEXT_LIMIT) {
				return Flux.error(openAiContextError(prompt));
			}
			// the first answer that fits breaks after three tokens; the continuation repeats one word
			return received.size() == 2
					? Flux.just(ChatChunk.token("The"), ChatChunk.token(" quick"), ChatChunk.token(" brown"))
							.concatWith(Flux.error(new IOException("reset")))
					: answer("brown fox", " jumps");
		};
		List<ChatChunk> seen = new CopyOnWriteArrayList<>();

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.truncation(TruncationSpec.defaults())
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 1))
								.build())
						.call(original, model)
						.doOnNext(seen::add))
				.thenConsumeWhile(c -> true)
				.verifyComplete();

		assertThat(received).hasSize(3);
		ChatRequest truncated = received.get(1);
		ChatRequest continuation = received.get(2);
		assertThat(continuation.messages().subList(0, truncated.messages().size()))
				.as("the continuation extends the truncated prompt, not the one that did not fit")
				.containsExactlyElementsOf(truncated.messages());
		assertThat(continuation.lastMessage()).isEqualTo(ChatMessage.assistant("The quick brown"));
		StringBuilder text = new StringBuilder();
		seen.forEach(c -> text.append(c.text()));
		assertThat(text.toString()).isEqualTo("The quick brown fox jumps");
		assertThat(reports.get(0).attempts()).extracting(GuardReport.Attempt::outcome)
				.containsExactly(Outcome.CLIENT_ERROR, Outcome.FAILURE, Outcome.SUCCESS);
	}

	@Test
	void maxTruncationsZeroTurnsTruncationOffAndPassesTheContextErrorOn() {
		ChatRequest original = longConversation(512);
		Provider provider = new Provider(GuardTruncationTest::openAiContextError, 0);

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.truncation(TruncationSpec.defaults().maxTruncations(0))
								.build())
						.call(original, provider))
				.expectError(ContextLengthExceededException.class)
				.verify(Duration.ofSeconds(5));

		assertThat(provider.received).hasSize(1);
		assertThat(metrics.promptTruncated()).isEmpty();
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.CLIENT_ERROR);
	}

	@Test
	void withoutALimitInTheErrorEachTruncationShrinksUntilMaxTruncationsThenPromptTooLarge() {
		ChatRequest original = longConversation(null);
		List<ChatRequest> received = new CopyOnWriteArrayList<>();
		// the provider names the error but not the numbers, and keeps refusing
		ProviderException refusal = ProviderErrors.fromHttp("openai", 400, header -> null,
				"{\"error\":{\"message\":\"Too long.\",\"type\":\"invalid_request_error\",\"code\":\"context_length_exceeded\"}}");
		assertThat(refusal).isInstanceOf(ContextLengthExceededException.class);

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.truncation(TruncationSpec.defaults().maxTruncations(2).shrinkFactor(0.5))
								.build())
						.call(original, request -> {
							received.add(request);
							return Flux.error(refusal);
						}))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PromptTooLargeException.class);
					assertThat(e.getCause()).as("the provider's last refusal").isSameAs(refusal);
				})
				.verify(Duration.ofSeconds(5));

		assertThat(received).hasSize(3);
		int[] sizes = received.stream().mapToInt(r -> ESTIMATE.count(r.messages())).toArray();
		assertThat(sizes[1]).isLessThanOrEqualTo(sizes[0] / 2);
		assertThat(sizes[2]).isLessThanOrEqualTo(sizes[1] / 2);
		assertThat(metrics.promptTruncated()).hasSize(2);
		assertThat(reports.get(0).attempts()).extracting(GuardReport.Attempt::outcome)
				.containsOnly(Outcome.CLIENT_ERROR).hasSize(3);
	}

	@Test
	void aRetryAfterATruncationResendsTheTruncatedRequestAndTruncationsCountAsAttempts() {
		ChatRequest original = longConversation(512);
		Provider answering = new Provider(GuardTruncationTest::openAiContextError, 0);
		List<ChatRequest> received = new CopyOnWriteArrayList<>();
		List<Long> sentAt = new CopyOnWriteArrayList<>();
		ProviderException unavailable = ProviderErrors.fromHttp("openai", 503, header -> null, "");

		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					return AiGuard.of(policy(vts)
									.truncation(TruncationSpec.defaults())
									.retry(RetryRules.backoff(3, Duration.ofMillis(100)).jitter(0))
									.build())
							.call(original, request -> {
								received.add(request);
								sentAt.add(vts.now(TimeUnit.MILLISECONDS));
								// the smaller request first meets a 503, then gets its answer
								return received.size() == 2 ? Flux.error(unavailable) : answering.apply(request);
							});
				})
				.thenAwait(Duration.ofSeconds(1))
				.expectNextCount(4)
				.verifyComplete();

		assertThat(received).hasSize(3);
		assertThat(received.get(2)).as("the retry sends the truncated request").isSameAs(received.get(1));
		// the truncated request was the 2nd attempt, so its retry waits the 2nd backoff: 200 ms
		assertThat(sentAt).containsExactly(0L, 0L, 200L);
		assertThat(reports.get(0).attempts()).extracting(GuardReport.Attempt::outcome)
				.containsExactly(Outcome.CLIENT_ERROR, Outcome.FAILURE, Outcome.SUCCESS);
		assertThat(metrics.retried()).containsExactly("ProviderServerException");
	}

	@Test
	void aTruncationDoesNotDrawOnTheRetryBudget() {
		ChatRequest original = longConversation(512);
		Provider provider = new Provider(GuardTruncationTest::openAiContextError, 0);

		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler vts = VirtualTimeScheduler.get();
					return AiGuard.of(policy(vts)
									.truncation(TruncationSpec.defaults())
									.retry(RetryRules.defaults())
									.retryBudget(RetryBudget.of(0, 0, Duration.ofSeconds(10), vts))
									.build())
							.call(original, provider);
				})
				.expectNextCount(4)
				.verifyComplete();

		assertThat(provider.received).hasSize(2);
		assertThat(metrics.retryBudgetExhausted()).isZero();
	}

	@Test
	void theTransformFormNeverTruncatesAndPassesTheContextErrorOn() {
		ProviderException tooLong = openAiContextError(9013);
		List<Integer> subscriptions = new CopyOnWriteArrayList<>();

		StepVerifier.withVirtualTime(() -> Flux.defer(() -> {
							subscriptions.add(1);
							return Flux.<ChatChunk>error(tooLong);
						})
						.transform(AiGuard.of(policy(VirtualTimeScheduler.get())
								.truncation(TruncationSpec.defaults())
								.retry(RetryRules.defaults())
								.build())))
				.expectErrorSatisfies(e -> assertThat(e).isSameAs(tooLong))
				.verify(Duration.ofSeconds(5));

		assertThat(subscriptions).hasSize(1);
		assertThat(metrics.promptTruncated()).isEmpty();
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.CLIENT_ERROR);
	}

	@Test
	void withoutATruncationSpecTheCallFormPassesTheContextErrorOn() {
		ChatRequest original = longConversation(512);
		Provider provider = new Provider(GuardTruncationTest::openAiContextError, 0);

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get()).build()).call(original, provider))
				.expectError(ContextLengthExceededException.class)
				.verify(Duration.ofSeconds(5));

		assertThat(provider.received).hasSize(1);
	}
}
