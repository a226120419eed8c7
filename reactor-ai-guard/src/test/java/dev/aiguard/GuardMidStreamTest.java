package dev.aiguard;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.UnaryOperator;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.retry.ContinuationStrategy;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Outcome;

/**
 * Failures after the first token reached the subscriber, through the composed guard: never a
 * resubscribe; {@code fail()} says how much was delivered, {@code notice(..)} ends the answer with
 * a notice, {@code continueWith(..)} (call form) sends a continuation request and splices its
 * answer so the subscriber reads one text with nothing repeated and nothing lost.
 */
class GuardMidStreamTest {

	static final ChatRequest QUESTION = ChatRequest.of("claude-sonnet", List.of(ChatMessage.system("Be playful."),
			ChatMessage.user("Write the pangram about the fox.")));

	final Reports reports = new Reports();
	final RecordingMetrics metrics = new RecordingMetrics();

	GuardPolicy.Builder policy(VirtualTimeScheduler vts) {
		return Policies.onVirtualTime("it-midstream", vts, reports, metrics)
				.retry(RetryRules.backoff(3, Duration.ofMillis(100)).jitter(0));
	}

	static Flux<ChatChunk> tokens(String... texts) {
		return Flux.fromArray(texts).map(ChatChunk::token);
	}

	static Flux<ChatChunk> answer(String... texts) {
		return tokens(texts).concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()));
	}

	static String text(List<ChatChunk> chunks) {
		StringBuilder sb = new StringBuilder();
		chunks.forEach(c -> sb.append(c.text()));
		return sb.toString();
	}

	/** Answers the n-th request (0-based) with {@code responses[n]}; keeps every request. */
	static final class Model implements Function<ChatRequest, Flux<ChatChunk>> {

		final List<Function<ChatRequest, Flux<ChatChunk>>> responses;
		final List<ChatRequest> received = new CopyOnWriteArrayList<>();

		@SafeVarargs
		Model(Function<ChatRequest, Flux<ChatChunk>>... responses) {
			this.responses = List.of(responses);
		}

		@Override
		public Flux<ChatChunk> apply(ChatRequest request) {
			int n = received.size();
			received.add(request);
			return responses.get(Math.min(n, responses.size() - 1)).apply(request);
		}
	}

	static List<ChatMessage> plus(List<ChatMessage> messages, ChatMessage last) {
		List<ChatMessage> all = new ArrayList<>(messages);
		all.add(last);
		return all;
	}

	/**
	 * Runs the call form with {@code configure} applied to the test policy and expects the answer to
	 * end as {@link PartialStreamException} caused by {@code cause}, after exactly {@code delivered}.
	 */
	void continuedUntilPartial(UnaryOperator<GuardPolicy.Builder> configure, Model model, Throwable cause,
			String... delivered) {
		ChatChunk[] expected = new ChatChunk[delivered.length];
		for (int i = 0; i < delivered.length; i++) {
			expected[i] = ChatChunk.token(delivered[i]);
		}
		StepVerifier.withVirtualTime(() -> AiGuard.of(configure.apply(policy(VirtualTimeScheduler.get())).build())
						.call(QUESTION, model))
				.expectNext(expected)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(((PartialStreamException) e).tokensDelivered()).isEqualTo(delivered.length);
					assertThat(e.getCause()).isSameAs(cause);
				})
				.verify(Duration.ofSeconds(5));
	}

	// ---- fail() ----

	@Test
	void failEndsWithPartialStreamExceptionCarryingTheTokensDeliveredAndNeverResubscribes() {
		IOException reset = new IOException("connection reset by peer");
		AtomicInteger subscriptions = new AtomicInteger();
		List<ChatChunk> seen = new CopyOnWriteArrayList<>();

		StepVerifier.withVirtualTime(() -> Flux.defer(() -> {
							subscriptions.incrementAndGet();
							return tokens("The", " quick").concatWith(Flux.error(reset));
						})
						.transform(AiGuard.of(policy(VirtualTimeScheduler.get()).midStream(MidStreamPolicy.fail()).build()))
						.doOnNext(seen::add))
				.expectNext(ChatChunk.token("The"), ChatChunk.token(" quick"))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					PartialStreamException partial = (PartialStreamException) e;
					assertThat(partial.partial()).isTrue();
					assertThat(partial.tokensDelivered()).isEqualTo(2);
					assertThat(partial.getCause()).isSameAs(reset);
					assertThat(partial.retryable()).isFalse();
				})
				.verify(Duration.ofSeconds(5));

		assertThat(text(seen)).isEqualTo("The quick");
		assertThat(subscriptions).as("retryable, retries left, still no resubscribe").hasValue(1);
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
			assertThat(r.tokens()).isEqualTo(2);
			assertThat(r.error()).isInstanceOf(PartialStreamException.class);
		});
		assertThat(metrics.retried()).isEmpty();
		assertThat(metrics.tokensWasted()).containsExactly(2L);
	}

	@Test
	void anIdleStallAfterTheFirstTokenFailsPartialWithTheStallAsCause() {
		StepVerifier.withVirtualTime(() -> tokens("The", " quick").concatWith(Flux.never())
						.transform(AiGuard.of(policy(VirtualTimeScheduler.get())
								.stall(StallSpec.defaults().idleTimeout(Duration.ofSeconds(2)))
								.build())))
				.expectNextCount(2)
				.thenAwait(Duration.ofSeconds(5))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(((PartialStreamException) e).tokensDelivered()).isEqualTo(2);
					assertThat(e.getCause()).isInstanceOfSatisfying(StreamStalledException.class,
							stall -> assertThat(stall.phase()).isEqualTo(StallPhase.IDLE));
				})
				.verify(Duration.ofSeconds(5));

		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.STALLED);
		assertThat(reports.get(0).attempts()).hasSize(1);
	}

	@Test
	void aStreamCutWithoutItsTerminalMarkerAfterTokensFailsPartialAsIncomplete() {
		StepVerifier.withVirtualTime(() -> tokens("The", " quick")
						.transform(AiGuard.of(policy(VirtualTimeScheduler.get()).build())))
				.expectNextCount(2)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(e.getCause()).isInstanceOf(IncompleteStreamException.class);
				})
				.verify(Duration.ofSeconds(5));

		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.INCOMPLETE);
		assertThat(reports.get(0).attempts()).hasSize(1);
	}

	// ---- notice(..) ----

	@Test
	void noticeEmitsTheNoticeChunkThenCompletesWhileTheReportStillSaysFailure() {
		String notice = "\n\n[The answer was interrupted.]";
		AtomicInteger subscriptions = new AtomicInteger();
		List<ChatChunk> seen = new CopyOnWriteArrayList<>();

		StepVerifier.withVirtualTime(() -> Flux.defer(() -> {
							subscriptions.incrementAndGet();
							return tokens("The", " quick").concatWith(Flux.error(ProviderErrors.fromHttp("openai", 502,
									header -> null, "")));
						})
						.transform(AiGuard.of(policy(VirtualTimeScheduler.get())
								.midStream(MidStreamPolicy.notice(notice))
								.build()))
						.doOnNext(seen::add))
				.expectNext(ChatChunk.token("The"), ChatChunk.token(" quick"), ChatChunk.token(notice))
				.verifyComplete();

		assertThat(text(seen)).isEqualTo("The quick" + notice);
		assertThat(subscriptions).hasValue(1);
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).as("the answer was still cut").isEqualTo(Outcome.FAILURE);
			assertThat(r.attempts()).singleElement().satisfies(a -> {
				assertThat(a.outcome()).isEqualTo(Outcome.FAILURE);
				assertThat(a.tokens()).isEqualTo(2);
			});
			// the notice is a content chunk the subscriber received
			assertThat(r.tokens()).isEqualTo(3);
		});
		assertThat(metrics.tokensWasted()).containsExactly(2L);
	}

	@Test
	void aThrowingNoticeFactoryFailsAsFailDoes() {
		Hooks.onErrorDropped(e -> { });
		try {
			StepVerifier.withVirtualTime(() -> tokens("The").concatWith(Flux.error(new IOException("reset")))
							.transform(AiGuard.of(policy(VirtualTimeScheduler.get())
									.midStream(MidStreamPolicy.<ChatChunk>notice(cause -> {
										throw new IllegalStateException("notice bug");
									}))
									.build())))
					.expectNextCount(1)
					.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class))
					.verify(Duration.ofSeconds(5));
		}
		finally {
			Hooks.resetOnErrorDropped();
		}
	}

	// ---- continueWith(..) ----

	@Test
	void aContinuationResumesTheAnswerAndItsRepeatedOverlapIsRemoved() {
		Model model = new Model(
				request -> tokens("The", " quick", " brown").concatWith(Flux.error(new IOException("reset"))),
				request -> answer("brown fox", " jumps"));
		List<ChatChunk> seen = new CopyOnWriteArrayList<>();

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 2))
								.build())
						.call(QUESTION, model)
						.doOnNext(seen::add))
				.expectNext(ChatChunk.token("The"), ChatChunk.token(" quick"), ChatChunk.token(" brown"),
						ChatChunk.token(" fox"), ChatChunk.token(" jumps"), ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();

		assertThat(text(seen)).isEqualTo("The quick brown fox jumps");
		assertThat(model.received).hasSize(2);
		assertThat(model.received.get(0)).isSameAs(QUESTION);
		ChatRequest continuation = model.received.get(1);
		assertThat(continuation.messages())
				.containsExactlyElementsOf(plus(QUESTION.messages(), ChatMessage.assistant("The quick brown")));
		assertThat(continuation.model()).isEqualTo(QUESTION.model());
		assertThat(metrics.continued()).isEqualTo(1);
		assertThat(metrics.retried()).isEmpty();
		assertThat(metrics.tokensWasted()).as("the first attempt's tokens are part of the answer").isEmpty();
		GuardReport report = reports.get(0);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.tokens()).isEqualTo(5);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::outcome)
				.containsExactly(Outcome.FAILURE, Outcome.SUCCESS);
		assertThat(report.attempts()).extracting(GuardReport.Attempt::tokens).containsExactly(3L, 2L);
	}

	@Test
	void anOverlapSplitAcrossChunksIsHeldBackUntilDecidedAndEmptyChunksAreNotEmitted() {
		Model model = new Model(
				request -> tokens("The", " quick", " brown").concatWith(Flux.error(new IOException("reset"))),
				request -> answer("bro", "wn", " fox", " jumps"));

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 1))
								.build())
						.call(QUESTION, model), 0)
				.thenRequest(4)
				.expectNext(ChatChunk.token("The"), ChatChunk.token(" quick"), ChatChunk.token(" brown"))
				// "bro" and "wn" repeat the end: dropped without using the subscriber's demand
				.expectNext(ChatChunk.token(" fox"))
				.expectNoEvent(Duration.ofSeconds(1))
				.thenRequest(Long.MAX_VALUE)
				.expectNext(ChatChunk.token(" jumps"), ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();

		assertThat(reports.get(0).tokens()).isEqualTo(5);
	}

	@Test
	void aContinuationAfterAnIdleStallCancelsTheStalledAttemptAndKeepsOneSpaceAtTheSeam() {
		AtomicInteger stalledCancelled = new AtomicInteger();
		Model model = new Model(
				request -> tokens("The", " quick", " brown ").concatWith(Flux.<ChatChunk>never()
						.doOnCancel(stalledCancelled::incrementAndGet)),
				request -> answer(" fox", " jumps"));
		List<ChatChunk> seen = new CopyOnWriteArrayList<>();

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.stall(StallSpec.defaults().idleTimeout(Duration.ofSeconds(2))
										.cancelOn(VirtualTimeScheduler.get()))
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 1))
								.build())
						.call(QUESTION, model)
						.doOnNext(seen::add))
				.expectNextCount(3)
				.thenAwait(Duration.ofSeconds(5))
				.expectNextCount(4)
				.verifyComplete();

		assertThat(stalledCancelled).hasValue(1);
		// the prefill lost its trailing space; the model wrote it again and the seam keeps only one
		assertThat(model.received.get(1).lastMessage()).isEqualTo(ChatMessage.assistant("The quick brown"));
		assertThat(text(seen)).isEqualTo("The quick brown fox jumps");
		assertThat(reports.get(0).attempts()).extracting(GuardReport.Attempt::outcome)
				.containsExactly(Outcome.STALLED, Outcome.SUCCESS);
	}

	/** Cuts {@code text} into 1 to 4 character deltas. */
	static Flux<ChatChunk> randomChunks(String text, Random random) {
		List<ChatChunk> chunks = new ArrayList<>();
		for (int i = 0; i < text.length();) {
			int end = Math.min(text.length(), i + 1 + random.nextInt(4));
			chunks.add(ChatChunk.token(text.substring(i, end)));
			i = end;
		}
		return Flux.fromIterable(chunks);
	}

	@Test
	void acrossRandomCutsOverlapsAndChunkingTheSubscriberReadsTheWholeAnswerOnce() {
		String[] words = "The quick brown fox jumps over the lazy dog while seven wizards hex".split("(?= )");
		String whole = String.join("", words);
		for (int seed = 0; seed < 200; seed++) {
			Random random = new Random(seed);
			// the first attempt breaks after `cut` words; each continuation repeats up to 3 words, then may break again
			int cut = 1 + random.nextInt(words.length - 2);
			int secondCut = cut + 1 + random.nextInt(words.length - cut - 1);
			boolean twice = random.nextBoolean();
			int overlap1 = random.nextInt(Math.min(cut, 3) + 1);
			int overlap2 = random.nextInt(Math.min(secondCut, 3) + 1);
			String first = String.join("", List.of(words).subList(0, cut));
			String resumed = String.join("", List.of(words).subList(cut - overlap1, twice ? secondCut : words.length));
			String last = String.join("", List.of(words).subList(secondCut - overlap2, words.length));
			Model model = new Model(
					request -> randomChunks(first, random).concatWith(Flux.error(new IOException("reset"))),
					request -> twice ? randomChunks(resumed, random).concatWith(Flux.error(new IOException("again")))
							: randomChunks(resumed, random).concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done())),
					request -> randomChunks(last, random).concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done())));
			reports.clear();
			List<ChatChunk> seen = new CopyOnWriteArrayList<>();

			StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
									.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 2))
									.build())
							.call(QUESTION, model)
							.doOnNext(seen::add))
					.thenConsumeWhile(c -> true)
					.verifyComplete();

			assertThat(text(seen)).as("seed " + seed).isEqualTo(whole);
			assertThat(model.received).as("seed " + seed).hasSize(twice ? 3 : 2);
			assertThat(model.received.get(model.received.size() - 1).lastMessage().content()).as("seed " + seed)
					.isEqualTo(twice ? String.join("", List.of(words).subList(0, secondCut)) : first);
		}
	}

	@Test
	void aSecondContinuationIsBuiltFromTheOriginalRequestAndEverythingDelivered() {
		Model model = new Model(
				request -> tokens("The", " quick").concatWith(Flux.error(new IOException("reset"))),
				request -> tokens("quick brown").concatWith(Flux.error(new IOException("reset again"))),
				request -> answer(" brown fox", " jumps"));
		List<ChatChunk> seen = new CopyOnWriteArrayList<>();

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 2))
								.build())
						.call(QUESTION, model)
						.doOnNext(seen::add))
				// "The", " quick" | " brown" | " fox", " jumps", finish, done
				.expectNextCount(7)
				.verifyComplete();

		assertThat(text(seen)).isEqualTo("The quick brown fox jumps");
		assertThat(model.received).hasSize(3);
		assertThat(model.received.get(1).messages())
				.containsExactlyElementsOf(plus(QUESTION.messages(), ChatMessage.assistant("The quick")));
		assertThat(model.received.get(2).messages()).as("not nested: one prefill with all the text")
				.containsExactlyElementsOf(plus(QUESTION.messages(), ChatMessage.assistant("The quick brown")));
		assertThat(metrics.continued()).isEqualTo(2);
	}

	@Test
	void userContinueSendsThePartialAnswerAndAnInstruction() {
		Model model = new Model(
				request -> tokens("The", " quick").concatWith(Flux.error(new IOException("reset"))),
				request -> answer(" brown fox"));

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.USER_CONTINUE, 1))
								.build())
						.call(QUESTION, model))
				.expectNextCount(5)
				.verifyComplete();

		List<ChatMessage> sent = model.received.get(1).messages();
		assertThat(sent).hasSize(QUESTION.messages().size() + 2);
		assertThat(sent.subList(0, QUESTION.messages().size())).containsExactlyElementsOf(QUESTION.messages());
		assertThat(sent.get(sent.size() - 2)).isEqualTo(ChatMessage.assistant("The quick"));
		assertThat(sent.get(sent.size() - 1)).isEqualTo(ChatMessage.user(ContinuationStrategy.DEFAULT_INSTRUCTION));
	}

	@Test
	void whenContinuationsRunOutTheSubscriberGetsPartialWithEveryTokenDelivered() {
		IOException last = new IOException("reset again");
		Model model = new Model(
				request -> tokens("The", " quick").concatWith(Flux.error(new IOException("reset"))),
				request -> tokens(" brown").concatWith(Flux.error(last)),
				request -> answer("never sent"));

		continuedUntilPartial(b -> b.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 1)),
				model, last, "The", " quick", " brown");

		assertThat(model.received).hasSize(2);
		assertThat(metrics.tokensWasted()).containsExactly(3L);
	}

	@Test
	void aContinuationDrawsOnTheRetryBudgetAndStopsWhenItIsSpent() {
		// one grant in the window, on a clock that does not move
		RetryBudget budget = RetryBudget.of(0.0, 1, Duration.ofSeconds(1), () -> 0L);
		IOException second = new IOException("reset again");
		Model model = new Model(
				request -> tokens("The", " quick").concatWith(Flux.error(new IOException("reset"))),
				request -> tokens(" brown").concatWith(Flux.error(second)),
				request -> answer(" fox"));

		continuedUntilPartial(b -> b.retryBudget(budget)
				.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 3)),
				model, second, "The", " quick", " brown");

		assertThat(model.received).as("the second continuation found the budget spent").hasSize(2);
		assertThat(metrics.continued()).isEqualTo(1);
		assertThat(metrics.retryBudgetExhausted()).isEqualTo(1);
	}

	@Test
	void anEmptyRetryBudgetSendsNoContinuationAtAll() {
		RetryBudget empty = RetryBudget.of(0.0, 0, Duration.ofSeconds(1), () -> 0L);
		IOException reset = new IOException("reset");
		Model model = new Model(
				request -> tokens("The", " quick").concatWith(Flux.error(reset)),
				request -> answer("never sent"));

		continuedUntilPartial(b -> b.retryBudget(empty)
				.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 3)),
				model, reset, "The", " quick");

		assertThat(model.received).hasSize(1);
		assertThat(metrics.continued()).isZero();
		assertThat(metrics.retryBudgetExhausted()).isEqualTo(1);
	}

	@Test
	void aContinuationRefusedByAnOpenBreakerFailsPartialWithTheStreamsOwnFailure() {
		CircuitBreaker breaker = CircuitBreaker.of("it-midstream", BreakerConfig.defaults());
		IOException reset = new IOException("reset");
		Model model = new Model(
				request -> tokens("The", " quick").concatWith(Flux.defer(() -> {
					breaker.transitionToForcedOpen();
					return Flux.error(reset);
				})),
				request -> answer("never sent"));

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.breaker(breaker)
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 2))
								.build())
						.call(QUESTION, model))
				.expectNextCount(2)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(((PartialStreamException) e).tokensDelivered()).isEqualTo(2);
					assertThat(e.getCause()).isSameAs(reset);
				})
				.verify(Duration.ofSeconds(5));

		assertThat(model.received).hasSize(1);
		assertThat(metrics.continued()).as("no continuation request was sent").isZero();
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.FAILURE);
	}

	@Test
	void aToolCallStreamIsNeverContinuedItFailsInstead() {
		ChatChunk toolCall = new ChatChunk("", null, null, null,
				List.of(new ToolCallDelta(0, "call_1", "get_weather", "{\"city\":\"Par")), false, false);
		IOException reset = new IOException("reset");
		Model model = new Model(
				request -> tokens("Let me check.").concatWith(Flux.just(toolCall)).concatWith(Flux.error(reset)),
				request -> answer("never sent"));

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 3))
								.build())
						.call(QUESTION, model))
				.expectNext(ChatChunk.token("Let me check."), toolCall)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(((PartialStreamException) e).tokensDelivered()).isEqualTo(2);
					assertThat(e.getCause()).isSameAs(reset);
				})
				.verify(Duration.ofSeconds(5));

		assertThat(model.received).hasSize(1);
		assertThat(metrics.continued()).isZero();
	}

	@Test
	void aFailureThatIsNotTransientIsNotContinued() {
		IllegalStateException bug = new IllegalStateException("decoder bug");
		Model model = new Model(request -> tokens("The").concatWith(Flux.error(bug)), request -> answer("never sent"));

		StepVerifier.withVirtualTime(() -> AiGuard.of(policy(VirtualTimeScheduler.get())
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 3))
								.build())
						.call(QUESTION, model))
				.expectNextCount(1)
				.expectErrorSatisfies(e -> assertThat(e.getCause()).isSameAs(bug))
				.verify(Duration.ofSeconds(5));

		assertThat(model.received).hasSize(1);
	}

	@Test
	void theTransformFormCannotContinueItFailsAsFailDoes() {
		AtomicInteger subscriptions = new AtomicInteger();

		StepVerifier.withVirtualTime(() -> Flux.defer(() -> {
							subscriptions.incrementAndGet();
							return tokens("The").concatWith(Flux.error(new IOException("reset")));
						})
						.transform(AiGuard.of(policy(VirtualTimeScheduler.get())
								.midStream(MidStreamPolicy.continueWith(ContinuationStrategy.ASSISTANT_PREFILL, 3))
								.build())))
				.expectNextCount(1)
				.expectError(PartialStreamException.class)
				.verify(Duration.ofSeconds(5));

		assertThat(subscriptions).hasValue(1);
	}
}
