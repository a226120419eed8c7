package dev.aiguard;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.regex.Pattern;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ResponseFormat;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import dev.aiguard.validation.DegenerateOutputException;
import dev.aiguard.validation.InvalidOutputException;
import dev.aiguard.validation.OutputValidator;
import dev.aiguard.validation.RepetitionDetector;
import dev.aiguard.validation.Validators;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Output validation through the guard: a completed attempt whose answer a validator rejects is a
 * failed attempt (outcome INVALID, a breaker failure, a meter), retried when nothing reached the
 * subscriber, sent down the ladder, or ended partial when it was already delivered; a looping
 * answer is cut while it streams; structured output is held until it passed its schema. All time
 * is virtual.
 */
class GuardValidationTest {

	static final Duration BACKOFF = Duration.ofMillis(100);
	static final String CITY_SCHEMA = "{\"type\":\"object\",\"required\":[\"city\"],"
			+ "\"properties\":{\"city\":{\"type\":\"string\"}}}";
	static final ChatRequest ASK = ChatRequest.of("m", List.of(ChatMessage.user("weather in Paris?")));
	static final ChatRequest ASK_JSON = ASK.withResponseFormat(ResponseFormat.jsonSchema("weather", CITY_SCHEMA));

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	final RecordingMetrics metrics = new RecordingMetrics();

	@AfterEach
	void resetHooks() {
		Hooks.resetOnErrorDropped();
	}

	GuardPolicy.Builder policy() {
		return Policies.onVirtualTime("it-validation", vts, reports, metrics);
	}

	static RetryRules retries(int attempts) {
		return RetryRules.backoff(attempts, BACKOFF).jitter(0.0);
	}

	static Flux<ChatChunk> answer(String finishReason, String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token)
				.concatWith(Flux.just(ChatChunk.finish(finishReason), ChatChunk.done()));
	}

	/** Answers the n-th request (0-based) with {@code answers[n]} (the last one repeats), keeping the requests. */
	static final class Upstream implements Function<ChatRequest, Publisher<ChatChunk>> {

		final List<Flux<ChatChunk>> answers;
		final List<ChatRequest> requests = new CopyOnWriteArrayList<>();

		@SafeVarargs
		Upstream(Flux<ChatChunk>... answers) {
			this.answers = List.of(answers);
		}

		@Override
		public Publisher<ChatChunk> apply(ChatRequest request) {
			int n = requests.size();
			requests.add(request);
			return answers.get(Math.min(n, answers.size() - 1));
		}

		Flux<ChatChunk> asSource() {
			return Flux.defer(() -> Flux.from(apply(ASK)));
		}
	}

	static List<Outcome> attemptOutcomes(GuardReport report) {
		return report.attempts().stream().map(GuardReport.Attempt::outcome).toList();
	}

	// ---- end of attempt, nothing delivered ----

	@Test
	void anEmptyAnswerIsRetriedAndTheNextAnswerDelivered() {
		Upstream upstream = new Upstream(answer("stop"), answer("stop", "Sunny", "."));
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).retry(retries(3)).build());
		StepVerifier.withVirtualTime(() -> upstream.asSource().transform(guard), () -> vts, Long.MAX_VALUE)
				.expectSubscription()
				// the empty attempt's chunks carry no content: they pass, and the request can still be retried
				.expectNextMatches(c -> "stop".equals(c.finishReason()))
				.expectNext(ChatChunk.done())
				.expectNoEvent(BACKOFF)
				.expectNextMatches(c -> c.text().equals("Sunny"))
				.expectNextMatches(c -> c.text().equals("."))
				.expectNextMatches(c -> "stop".equals(c.finishReason()))
				.expectNext(ChatChunk.done())
				.verifyComplete();
		assertThat(upstream.requests).hasSize(2);
		assertThat(attemptOutcomes(reports.last())).containsExactly(Outcome.INVALID, Outcome.SUCCESS);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(metrics.count("invalidAnswer it-validation P1 empty")).isEqualTo(1);
		assertThat(metrics.count("retried it-validation P1 InvalidOutputException")).isEqualTo(1);
		assertThat(metrics.ended(Outcome.INVALID)).isEqualTo(1);
	}

	@Test
	void aRejectedAnswerIsRetriedOncePerRequestAtMost() {
		Upstream upstream = new Upstream(answer("stop"));
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).retry(retries(5)).build());
		StepVerifier.withVirtualTime(() -> upstream.asSource().transform(guard), () -> vts, Long.MAX_VALUE)
				.expectSubscription()
				.thenAwait(BACKOFF.multipliedBy(10))
				.expectNextCount(4)
				.expectErrorSatisfies(e -> assertThat(e).isExactlyInstanceOf(InvalidOutputException.class)
						.hasMessageContaining("'empty'"))
				.verify();
		assertThat(upstream.requests).hasSize(2);
		assertThat(attemptOutcomes(reports.last())).containsExactly(Outcome.INVALID, Outcome.INVALID);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.INVALID);
	}

	@Test
	void anEmptyAnswerWithoutRetriesEntersTheLadderByInvalidOutput() {
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy")).build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).fallback(ladder).build());
		StepVerifier.withVirtualTime(() -> new Upstream(answer("stop")).asSource().transform(guard), () -> vts,
						Long.MAX_VALUE)
				.expectNextCount(2)
				.expectNextMatches(c -> c.text().equals("busy"))
				.thenConsumeWhile(c -> !c.hasContent())
				.verifyComplete();
		assertThat(reports.last().source()).isEqualTo(Source.STATIC);
		assertThat(attemptOutcomes(reports.last())).containsExactly(Outcome.INVALID);
	}

	@Test
	void aLadderThatDoesNotListInvalidOutputLetsTheRejectionThrough() {
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy"))
				.triggers(java.util.EnumSet.of(FallbackTrigger.BREAKER_OPEN)).build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).fallback(ladder).build());
		StepVerifier.withVirtualTime(() -> new Upstream(answer("stop")).asSource().transform(guard), () -> vts,
						Long.MAX_VALUE)
				.expectNextCount(2)
				.expectError(InvalidOutputException.class)
				.verify();
	}

	// ---- end of attempt, already delivered ----

	@Test
	void aFilteredAnswerThatReachedTheUserEndsPartialAndCountsAsABreakerFailure() {
		GuardPolicy p = policy().validate(Validators.finishReason())
				.breaker(BreakerConfig.custom().countWindow(100).minimumCalls(100).failureRateThreshold(1.0).build())
				.retry(retries(3)).build();
		AiGuard<ChatChunk> guard = AiGuard.of(p);
		Upstream upstream = new Upstream(answer("content_filter", "I", " can"));
		StepVerifier.withVirtualTime(() -> upstream.asSource().transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(4)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(((PartialStreamException) e).tokensDelivered()).isEqualTo(2);
					assertThat(e.getCause()).isInstanceOf(InvalidOutputException.class);
					assertThat(((InvalidOutputException) e.getCause()).validator()).isEqualTo("finish-reason");
				})
				.verify();
		assertThat(upstream.requests).as("delivered tokens are never sent again").hasSize(1);
		assertThat(p.breaker().snapshot().calls()).isEqualTo(1);
		assertThat(p.breaker().snapshot().failures()).isEqualTo(1);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.INVALID);
	}

	@Test
	void lengthIsInvalidOnlyWhenTheCallerSetNoCap() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.finishReason("content_filter", "length"))
				.build());
		Upstream cut = new Upstream(answer("length", "Once", " upon"));
		StepVerifier.withVirtualTime(() -> guard.call(ASK, cut), () -> vts, Long.MAX_VALUE)
				.expectNextCount(4)
				.expectErrorSatisfies(e -> assertThat(e.getCause()).hasMessageContaining("no maxTokens"))
				.verify();
		StepVerifier.withVirtualTime(() -> guard.call(ASK.withMaxTokens(2), cut), () -> vts, Long.MAX_VALUE)
				.expectNextCount(4)
				.verifyComplete();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.SUCCESS);
	}

	@Test
	void aToolCallWithoutArgumentsIsRejected() {
		ChatChunk call = new ChatChunk("", null, null, null, List.of(new ToolCallDelta(0, "c1", "lookup", "")), false,
				false);
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).build());
		StepVerifier.withVirtualTime(() -> Flux.just(call, ChatChunk.finish("tool_calls"), ChatChunk.done())
						.transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(3)
				.expectErrorSatisfies(e -> assertThat(e.getCause()).hasMessageContaining("tool call 'lookup' has no arguments"))
				.verify();
	}

	@Test
	void aToolCallWithArgumentsAssembledFromDeltasPasses() {
		ChatChunk first = new ChatChunk("", null, null, null, List.of(new ToolCallDelta(0, "c1", "lookup", "")), false,
				false);
		ChatChunk args = new ChatChunk("", null, null, null, List.of(new ToolCallDelta(0, null, null, "{\"q\":1}")),
				false, false);
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).build());
		StepVerifier.withVirtualTime(() -> Flux.just(first, args, ChatChunk.finish("tool_calls"), ChatChunk.done())
						.transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(4)
				.verifyComplete();
	}

	@Test
	void refusalsAreRejectedOnlyWhenTheUserAsks() {
		Upstream sorry = new Upstream(answer("stop", "I'm sorry", ", I can't."));
		AiGuard<ChatChunk> plain = AiGuard.of(policy().validate(Validators.emptyAnswer()).build());
		StepVerifier.withVirtualTime(() -> sorry.asSource().transform(plain), () -> vts, Long.MAX_VALUE)
				.expectNextCount(4)
				.verifyComplete();
		AiGuard<ChatChunk> strict = AiGuard.of(policy()
				.validate(Validators.refusal(Pattern.compile("^I'm sorry"))).build());
		StepVerifier.withVirtualTime(() -> sorry.asSource().transform(strict), () -> vts, Long.MAX_VALUE)
				.expectNextCount(4)
				.expectErrorSatisfies(e -> assertThat(((InvalidOutputException) e.getCause()).validator())
						.isEqualTo("refusal"))
				.verify();
	}

	@Test
	void aValidatorThatThrowsIsSkippedAndTheAnswerStands() {
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		OutputValidator broken = new OutputValidator() {
			@Override
			public String name() {
				return "broken";
			}

			@Override
			public String check(dev.aiguard.validation.Answer answer) {
				throw new IllegalStateException("validator bug");
			}
		};
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(broken, Validators.emptyAnswer()).build());
		StepVerifier.withVirtualTime(() -> answer("stop", "fine").transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(3)
				.verifyComplete();
		assertThat(dropped).singleElement().satisfies(e -> assertThat(e).hasMessage("validator bug"));
	}

	// ---- per chunk: repetition ----

	static Flux<ChatChunk> looping(AtomicBoolean cancelled, AtomicInteger sent) {
		return Flux.range(0, 5000).map(i -> i < 3 ? ChatChunk.token("intro" + i + ' ') : ChatChunk.token("la "))
				.doOnNext(c -> sent.incrementAndGet())
				.concatWith(Flux.just(ChatChunk.finish("length"), ChatChunk.done()))
				.doOnCancel(() -> cancelled.set(true));
	}

	@Test
	void aLoopingAnswerIsCutWhileItStreamsAndEndsPartial() {
		AtomicBoolean cancelled = new AtomicBoolean();
		AtomicInteger sent = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validateStreaming(RepetitionDetector.defaults()).build());
		StepVerifier.withVirtualTime(() -> looping(cancelled, sent).transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(3 + 64)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(e.getCause()).isInstanceOf(DegenerateOutputException.class);
					assertThat(((DegenerateOutputException) e.getCause()).period()).isEqualTo(1);
				})
				.verify();
		assertThat(cancelled).as("the upstream is cut").isTrue();
		assertThat(sent.get()).isEqualTo(3 + 64);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.INVALID);
		assertThat(reports.last().tokens()).isEqualTo(3 + 64);
		assertThat(metrics.count("invalidAnswer it-validation P1 repetition")).isEqualTo(1);
	}

	@Test
	void aCutLoopGetsTheMidStreamNoticeAndIsNeverContinued() {
		AtomicBoolean cancelled = new AtomicBoolean();
		Upstream upstream = new Upstream(looping(cancelled, new AtomicInteger()));
		AiGuard<ChatChunk> noticing = AiGuard.of(policy().validateStreaming(RepetitionDetector.defaults())
				.midStream(MidStreamPolicy.notice(" [cut]")).build());
		StepVerifier.withVirtualTime(() -> noticing.call(ASK, upstream), () -> vts, Long.MAX_VALUE)
				.expectNextCount(3 + 64)
				.expectNextMatches(c -> c.text().equals(" [cut]"))
				.thenConsumeWhile(c -> !c.hasContent())
				.verifyComplete();
		AiGuard<ChatChunk> continuing = AiGuard.of(policy().validateStreaming(RepetitionDetector.defaults())
				.midStream(MidStreamPolicy.continueWith(dev.aiguard.retry.ContinuationStrategy.ASSISTANT_PREFILL, 2))
				.build());
		StepVerifier.withVirtualTime(() -> continuing.call(ASK, upstream), () -> vts, Long.MAX_VALUE)
				.expectNextCount(3 + 64)
				.expectError(PartialStreamException.class)
				.verify();
		assertThat(upstream.requests).as("no continuation request").hasSize(2);
	}

	// ---- structured output, held until it passed ----

	@Test
	void aHeldJsonAnswerThatFailsItsSchemaIsRetriedWithTheErrorsAndOnlyTheValidOneIsDelivered() {
		Upstream upstream = new Upstream(answer("stop", "{\"da", "ys\":0}"), answer("stop", "{\"city\":", "\"Paris\"}"));
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer(), Validators.jsonSchema())
				.retry(retries(3)).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK_JSON, upstream), () -> vts, 0)
				.expectSubscription()
				.thenRequest(1)
				.expectNoEvent(BACKOFF)
				.expectNextMatches(c -> c.text().equals("{\"city\":"))
				.expectNoEvent(Duration.ofSeconds(1))
				.thenRequest(2)
				.expectNextMatches(c -> c.text().equals("\"Paris\"}"))
				.expectNextMatches(c -> "stop".equals(c.finishReason()))
				.expectNoEvent(Duration.ofSeconds(1))
				.thenRequest(1)
				.expectNext(ChatChunk.done())
				.verifyComplete();
		assertThat(upstream.requests).hasSize(2);
		ChatRequest retry = upstream.requests.get(1);
		assertThat(retry.messages()).hasSize(3);
		assertThat(retry.messages().get(1).content()).isEqualTo("{\"days\":0}");
		assertThat(retry.lastMessage().content()).contains("does not match the schema").contains("city");
		GuardReport report = reports.last();
		assertThat(attemptOutcomes(report)).containsExactly(Outcome.INVALID, Outcome.SUCCESS);
		assertThat(report.tokens()).as("only the delivered answer's tokens").isEqualTo(2);
		assertThat(report.source()).isEqualTo(Source.REALTIME);
		assertThat(metrics.count("invalidAnswer it-validation P1 json-schema")).isEqualTo(1);
		assertThat(metrics.count("answered it-validation P1 REALTIME")).isEqualTo(1);
	}

	@Test
	void aHeldAnswerRejectedTwiceGoesDownTheLadderWithNothingDelivered() {
		Upstream upstream = new Upstream(answer("stop", "not json"));
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder()
				.step(Fallback.staticText("{\"city\":\"unknown\"}")).build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.jsonSchema()).retry(retries(5))
				.fallback(ladder).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK_JSON, upstream), () -> vts, Long.MAX_VALUE)
				.expectSubscription()
				.thenAwait(BACKOFF)
				.expectNextMatches(c -> c.text().equals("{\"city\":\"unknown\"}"))
				.thenConsumeWhile(c -> !c.hasContent())
				.verifyComplete();
		assertThat(upstream.requests).as("retried once, not up to maxAttempts").hasSize(2);
		assertThat(reports.last().source()).isEqualTo(Source.STATIC);
		assertThat(attemptOutcomes(reports.last())).containsExactly(Outcome.INVALID, Outcome.INVALID);
	}

	@Test
	void aValidHeldAnswerIsDeliveredWholeAndCached() {
		Upstream upstream = new Upstream(answer("stop", "{\"city\":", "\"Rome\"}"));
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.jsonSchema()).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK_JSON, upstream), () -> vts, Long.MAX_VALUE)
				.expectNextCount(4)
				.verifyComplete();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(reports.last().tokens()).isEqualTo(2);
		assertThat(metrics.count("invalidAnswer")).isZero();
	}

	@Test
	void aHeldAnswerTheOutputCapEndedIsReleasedWithTheCapsFinishReason() {
		Upstream upstream = new Upstream(answer("stop", "{\"city\":", "\"Rome\"}", " "));
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.jsonSchema())
				.budget(dev.aiguard.budget.BudgetSpec.defaults().outputCap(2)).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK_JSON, upstream), () -> vts, Long.MAX_VALUE)
				.expectNext(ChatChunk.token("{\"city\":"), ChatChunk.token("\"Rome\"}"))
				.verifyComplete();
		GuardReport report = reports.last();
		assertThat(report.outputCapped()).isTrue();
		assertThat(report.finishReason()).as("the attempt's, though the release saw none").isEqualTo("length");
		assertThat(report.outputTruncated()).isTrue();
	}

	@Test
	void aCancelWhileTheAnswerIsHeldEndsTheRequestCancelled() {
		Upstream upstream = new Upstream(Flux.concat(Flux.just(ChatChunk.token("{\"city\":")),
				Flux.just(ChatChunk.token("\"Rome\"}")).delayElements(Duration.ofSeconds(1), vts),
				Flux.just(ChatChunk.finish("stop"), ChatChunk.done())));
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.jsonSchema()).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK_JSON, upstream), () -> vts, Long.MAX_VALUE)
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(500))
				.thenCancel()
				.verify();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.CANCELLED);
		assertThat(reports.last().tokens()).isZero();
	}

	// ---- wiring ----

	@Test
	void validatorsNeedChatChunks() {
		GuardPolicy p = policy().validate(Validators.emptyAnswer()).build();
		ChunkInspector<String> strings = ChunkInspector.of(String.class, s -> !s.isEmpty(), s -> false, s -> false,
				s -> null);
		assertThatIllegalArgumentException().isThrownBy(() -> AiGuard.of(p, strings))
				.withMessageContaining("output validators").withMessageContaining("java.lang.String");
		assertThatIllegalArgumentException().isThrownBy(() -> GuardPolicy.builder("x").validate((OutputValidator) null))
				.withMessageContaining("validate");
	}

	@Test
	void aPolicyCopyKeepsItsValidators() {
		GuardPolicy p = policy().validate(Validators.emptyAnswer()).validateStreaming(RepetitionDetector.defaults())
				.build();
		GuardPolicy copy = p.toBuilder().build();
		assertThat(copy.validators()).containsExactlyElementsOf(p.validators());
		assertThat(copy.streamingValidators()).containsExactlyElementsOf(p.streamingValidators());
	}

	@Test
	void aCopyWithoutValidationFitsAGuardOfAnotherChunkType() {
		GuardPolicy p = policy().validate(Validators.emptyAnswer()).validateStreaming(RepetitionDetector.defaults())
				.build();
		GuardPolicy plain = p.toBuilder().withoutValidation().build();
		assertThat(plain.validators()).isEmpty();
		assertThat(plain.streamingValidators()).isEmpty();
		assertThat(p.validators()).as("the original keeps its own").hasSize(1);
		ChunkInspector<String> strings = ChunkInspector.of(String.class, s -> !s.equals("."), s -> false,
				s -> s.equals("."), s -> s.equals(".") ? "stop" : null);
		StepVerifier.create(Flux.just("a", "b", ".").transform(AiGuard.of(plain, strings)))
				.expectNext("a", "b", ".")
				.verifyComplete();
	}

	@Test
	void micrometerCountsInvalidAnswersByValidator() {
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("meters").timer(vts)
				.metrics(new MicrometerGuardMetrics(registry)).validate(Validators.emptyAnswer()).build());
		StepVerifier.withVirtualTime(() -> answer("stop").transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(2)
				.expectError(InvalidOutputException.class)
				.verify();
		assertThat(registry.get("aiguard.answers.invalid").tag("validator", "empty").tag("policy", "meters")
				.counter().count()).isEqualTo(1.0);
	}
}
