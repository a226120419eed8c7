package dev.aiguard;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.budget.BudgetSpec;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Source;
import dev.aiguard.core.StallPhase;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import dev.aiguard.validation.InvalidOutputException;
import dev.aiguard.validation.Validators;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.Scannable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;
import reactor.test.util.RaceTestUtils;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * With {@code Validators.emptyAnswer()}, an attempt's leading whitespace-only chunks are held until
 * its first visible character: a whitespace answer reaches nobody and is retried or sent down the
 * ladder, as documented; an answer that says something gets its whitespace first, in order, with
 * the subscriber's demand. All time is virtual.
 */
class GuardLeadingWhitespaceTest {

	static final Duration BACKOFF = Duration.ofMillis(100);
	static final Duration LONG = Duration.ofSeconds(10);
	static final ChatRequest ASK = ChatRequest.of("m", List.of(ChatMessage.user("weather in Paris?")));

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	final RecordingMetrics metrics = new RecordingMetrics();

	GuardPolicy.Builder policy() {
		return Policies.onVirtualTime("it-blank", vts, reports, metrics).validate(Validators.emptyAnswer());
	}

	static RetryRules retries(int attempts) {
		return RetryRules.backoff(attempts, BACKOFF).jitter(0.0);
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token)
				.concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()));
	}

	/** The answer: three chunks of whitespace, then a proper end. */
	static Flux<ChatChunk> whitespace() {
		return answer(" ", "\n", "  ");
	}

	static boolean stop(ChatChunk c) {
		return "stop".equals(c.finishReason());
	}

	static boolean blankText(ChatChunk c) {
		return c.hasContent() && !c.hasToolCalls() && c.text().isBlank();
	}

	static List<Outcome> attemptOutcomes(GuardReport report) {
		return report.attempts().stream().map(GuardReport.Attempt::outcome).toList();
	}

	/** Answers the n-th call with {@code answers[n]} (the last one repeats). */
	static Flux<ChatChunk> nth(AtomicInteger calls, List<Flux<ChatChunk>> answers) {
		return Flux.defer(() -> answers.get(Math.min(calls.getAndIncrement(), answers.size() - 1)));
	}

	// ---- the scenario: nothing delivered, so retried or served by the ladder ----

	@Test
	void aWhitespaceAnswerIsRetriedThroughCallAndTheNextAnswerServed() {
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().retry(retries(3)).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> nth(calls, List.of(whitespace(), answer("Sunny", ".")))),
						() -> vts, Long.MAX_VALUE)
				// the rejected attempt's chunks without content pass; its whitespace never does
				.expectNextMatches(GuardLeadingWhitespaceTest::stop)
				.expectNext(ChatChunk.done())
				.expectNoEvent(BACKOFF)
				.expectNext(ChatChunk.token("Sunny"), ChatChunk.token("."))
				.expectNextMatches(GuardLeadingWhitespaceTest::stop)
				.expectNext(ChatChunk.done())
				.verifyComplete();
		assertThat(calls).hasValue(2);
		GuardReport report = reports.last();
		assertThat(attemptOutcomes(report)).containsExactly(Outcome.INVALID, Outcome.SUCCESS);
		assertThat(report.attempts().get(0).tokens()).as("the held chunks count in their attempt").isEqualTo(3);
		assertThat(report.tokens()).as("only what reached the subscriber is delivered").isEqualTo(2);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(metrics.count("retried it-blank P1 InvalidOutputException")).isEqualTo(1);
	}

	@Test
	void aWhitespaceAnswerIsRetriedThroughTransform() {
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().retry(retries(3)).build());
		StepVerifier.withVirtualTime(() -> nth(calls, List.of(whitespace(), answer("Sunny"))).transform(guard), () -> vts,
						Long.MAX_VALUE)
				.expectNextMatches(GuardLeadingWhitespaceTest::stop)
				.expectNext(ChatChunk.done())
				.expectNoEvent(BACKOFF)
				.expectNext(ChatChunk.token("Sunny"))
				.expectNextMatches(GuardLeadingWhitespaceTest::stop)
				.expectNext(ChatChunk.done())
				.verifyComplete();
		assertThat(calls).hasValue(2);
		assertThat(attemptOutcomes(reports.last())).containsExactly(Outcome.INVALID, Outcome.SUCCESS);
	}

	@Test
	void aWhitespaceAnswerWithoutRetriesIsServedByTheLadder() {
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy")).build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().fallback(ladder).build());
		List<ChatChunk> seen = new CopyOnWriteArrayList<>();
		StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> whitespace()).doOnNext(seen::add), () -> vts,
						Long.MAX_VALUE)
				.expectNextMatches(GuardLeadingWhitespaceTest::stop)
				.expectNext(ChatChunk.done())
				.expectNext(ChatChunk.token("busy"))
				.thenConsumeWhile(c -> !c.hasContent())
				.verifyComplete();
		assertThat(seen).noneMatch(GuardLeadingWhitespaceTest::blankText);
		assertThat(reports.last().source()).isEqualTo(Source.STATIC);
		assertThat(attemptOutcomes(reports.last())).containsExactly(Outcome.INVALID);
	}

	@Test
	void aWhitespaceAnswerTwiceIsRetriedOnceThenServedByTheLadder() {
		AtomicInteger calls = new AtomicInteger();
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy")).build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().retry(retries(5)).fallback(ladder).build());
		List<ChatChunk> seen = new CopyOnWriteArrayList<>();
		StepVerifier.withVirtualTime(() -> nth(calls, List.of(whitespace())).transform(guard).doOnNext(seen::add),
						() -> vts, Long.MAX_VALUE)
				.expectNextCount(2)
				.expectNoEvent(BACKOFF)
				.expectNextCount(2)
				.expectNext(ChatChunk.token("busy"))
				.thenConsumeWhile(c -> !c.hasContent())
				.verifyComplete();
		assertThat(calls).hasValue(2);
		assertThat(seen).noneMatch(GuardLeadingWhitespaceTest::blankText);
		assertThat(attemptOutcomes(reports.last())).containsExactly(Outcome.INVALID, Outcome.INVALID);
		assertThat(reports.last().source()).isEqualTo(Source.STATIC);
	}

	@Test
	void withoutRetriesOrLadderTheRejectionIsTheRequestsErrorNotAPartialAnswer() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().build());
		StepVerifier.withVirtualTime(() -> whitespace().transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(2)
				.expectErrorSatisfies(e -> assertThat(e).isExactlyInstanceOf(InvalidOutputException.class)
						.hasMessageContaining("no content"))
				.verify();
		assertThat(reports.last().tokens()).isZero();
	}

	// ---- an answer that says something: the whitespace first, in order ----

	@Test
	void heldWhitespaceIsReleasedInOrderBeforeTheFirstVisibleChunk() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().build());
		StepVerifier.withVirtualTime(() -> answer(" ", "\n", "Hi", " ", "there").transform(guard), () -> vts,
						Long.MAX_VALUE)
				.expectNext(ChatChunk.token(" "), ChatChunk.token("\n"), ChatChunk.token("Hi"), ChatChunk.token(" "),
						ChatChunk.token("there"))
				.expectNextMatches(GuardLeadingWhitespaceTest::stop)
				.expectNext(ChatChunk.done())
				.verifyComplete();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(reports.last().tokens()).isEqualTo(5);
	}

	@Test
	void nothingIsDeliveredBeforeTheSubscriberAsksAndTheReleaseKeepsToItsDemand() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().build());
		StepVerifier.withVirtualTime(() -> answer(" ", "\n", "Hi", " there").transform(guard), () -> vts, 0)
				.expectSubscription()
				.expectNoEvent(LONG)
				.thenRequest(3)
				.expectNext(ChatChunk.token(" "), ChatChunk.token("\n"), ChatChunk.token("Hi"))
				.expectNoEvent(LONG)
				.thenRequest(1)
				.expectNext(ChatChunk.token(" there"))
				.expectNoEvent(LONG)
				.thenRequest(2)
				.expectNextMatches(GuardLeadingWhitespaceTest::stop)
				.expectNext(ChatChunk.done())
				.verifyComplete();
	}

	@Test
	void whitespaceTheSubscriberDidNotAskRoomForLeadsTheVisibleChunk() {
		// asked for one chunk, the subscriber gets one: the held whitespace in front of the visible text
		AiGuard<ChatChunk> guard = AiGuard.of(policy().build());
		StepVerifier.withVirtualTime(() -> answer(" ", "\n", "Hi", " there").transform(guard), () -> vts, 0)
				.thenRequest(1)
				.expectNext(ChatChunk.token(" \nHi"))
				.expectNoEvent(LONG)
				.thenRequest(1)
				.expectNext(ChatChunk.token(" there"))
				.expectNoEvent(LONG)
				.thenRequest(2)
				.expectNextCount(2)
				.verifyComplete();
		// asked for two: the first whitespace alone, the one that needed more demand with the text
		StepVerifier.withVirtualTime(() -> answer(" ", "\n", "Hi", " there").transform(guard), () -> vts, 0)
				.thenRequest(2)
				.expectNext(ChatChunk.token(" "), ChatChunk.token("\nHi"))
				.expectNoEvent(LONG)
				.thenRequest(Long.MAX_VALUE)
				.expectNext(ChatChunk.token(" there"))
				.expectNextCount(2)
				.verifyComplete();
	}

	@Test
	void aToolCallIsVisibleContent() {
		ChatChunk call = new ChatChunk("", null, null, null, List.of(new ToolCallDelta(0, "c1", "lookup", "{}")), false,
				false);
		AiGuard<ChatChunk> guard = AiGuard.of(policy().build());
		StepVerifier.withVirtualTime(
						() -> Flux.just(ChatChunk.token(" "), call, ChatChunk.finish("tool_calls"), ChatChunk.done())
								.transform(guard), () -> vts, 0)
				.thenRequest(2)
				.expectNext(ChatChunk.token(" "), call)
				.thenRequest(2)
				.expectNextCount(2)
				.verifyComplete();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.SUCCESS);
	}

	// ---- the attempt ends while whitespace is held ----

	@Test
	void theDemandTheDroppedWhitespaceTookGoesToTheNextAttempt() {
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().retry(retries(3)).build());
		// five asked for: two go to the rejected attempt's finish and marker, three are left for the next
		StepVerifier.withVirtualTime(() -> nth(calls, List.of(answer(" ", "\n"), answer("ok"))).transform(guard),
						() -> vts, 5)
				.expectNextCount(2)
				.thenAwait(BACKOFF)
				.expectNext(ChatChunk.token("ok"))
				.expectNextCount(2)
				.expectComplete()
				.verify(LONG);
		assertThat(calls).hasValue(2);
	}

	@Test
	void heldWhitespaceThatBorrowedItsDemandGivesNothingBack() {
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().retry(retries(3)).build());
		// one at a time: each held chunk asked the upstream for one more, so the subscriber's demand is untouched
		StepVerifier.withVirtualTime(() -> nth(calls, List.of(answer(" ", "\n"), answer("ok"))).transform(guard),
						() -> vts, 0)
				.thenRequest(1)
				.expectNextMatches(GuardLeadingWhitespaceTest::stop)
				.expectNoEvent(LONG)
				.thenRequest(1)
				.expectNext(ChatChunk.done())
				.expectNoEvent(LONG)
				.thenRequest(1)
				.expectNext(ChatChunk.token("ok"))
				.expectNoEvent(LONG)
				.thenRequest(2)
				.expectNextCount(2)
				.expectComplete()
				.verify(LONG);
		assertThat(calls).hasValue(2);
	}

	@Test
	void aStallWhileWhitespaceIsHeldIsRetriedAndTheWhitespaceNeverDelivered() {
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy()
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1)).idleTimeout(Duration.ofSeconds(1)))
				.retry(retries(3)).build());
		// whitespace at 0.5 s and 1.4 s: the first meets the first-token deadline, the second re-arms the idle one
		Flux<ChatChunk> stalls = Flux.concat(Flux.just(ChatChunk.token(" ")).delaySubscription(Duration.ofMillis(500), vts),
				Flux.just(ChatChunk.token("\n")).delaySubscription(Duration.ofMillis(900), vts), Flux.never());
		List<ChatChunk> seen = new CopyOnWriteArrayList<>();
		StepVerifier.withVirtualTime(() -> nth(calls, List.of(stalls, answer("ok"))).transform(guard).doOnNext(seen::add),
						() -> vts, Long.MAX_VALUE)
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(2400))
				.thenAwait(Duration.ofMillis(500).plus(BACKOFF))
				.expectNext(ChatChunk.token("ok"))
				.expectNextCount(2)
				.verifyComplete();
		assertThat(seen).noneMatch(GuardLeadingWhitespaceTest::blankText);
		GuardReport.Attempt stalled = reports.last().attempts().get(0);
		assertThat(stalled.outcome()).isEqualTo(Outcome.STALLED);
		assertThat(((StreamStalledException) stalled.error()).phase()).isEqualTo(StallPhase.IDLE);
		assertThat(reports.last().tokens()).isEqualTo(1);
	}

	@Test
	void anUpstreamErrorWhileWhitespaceIsHeldIsRetriedBeforeTheFirstToken() {
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().retry(retries(3)).build());
		Flux<ChatChunk> broken = Flux.concat(Flux.just(ChatChunk.token(" "), ChatChunk.token("\n")),
				Flux.error(new IOException("connection reset")));
		StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> nth(calls, List.of(broken, answer("ok")))), () -> vts,
						Long.MAX_VALUE)
				.expectSubscription()
				.expectNoEvent(BACKOFF)
				.expectNext(ChatChunk.token("ok"))
				.expectNextCount(2)
				.verifyComplete();
		assertThat(attemptOutcomes(reports.last())).containsExactly(Outcome.FAILURE, Outcome.SUCCESS);
	}

	@Test
	void aCancelWhileWhitespaceIsHeldDeliversNothingAndCancelsTheUpstream() {
		AtomicBoolean upstreamCancelled = new AtomicBoolean();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().retry(retries(3)).build());
		Flux<ChatChunk> slow = Flux.concat(Flux.just(ChatChunk.token(" "), ChatChunk.token("\n")), Flux.<ChatChunk>never())
				.doOnCancel(() -> upstreamCancelled.set(true));
		StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> slow), () -> vts, Long.MAX_VALUE)
				.expectSubscription()
				.expectNoEvent(LONG)
				.thenCancel()
				.verify();
		assertThat(upstreamCancelled).isTrue();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.CANCELLED);
		assertThat(reports.last().tokens()).isZero();
	}

	@Test
	void anAnswerTheOutputCapEndsWhileItsWhitespaceIsHeldStandsWithItsWhitespace() {
		// the cap ends an answer as complete without a verdict: what was held is delivered, in order
		AiGuard<ChatChunk> guard = AiGuard.of(policy().budget(BudgetSpec.defaults().outputCap(2)).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> answer(" ", "\n", "Hi")), () -> vts, 0)
				.expectSubscription()
				.expectNoEvent(LONG)
				.thenRequest(1)
				.expectNext(ChatChunk.token(" "))
				.expectNoEvent(LONG)
				.thenRequest(1)
				.expectNext(ChatChunk.token("\n"))
				.verifyComplete();
		GuardReport report = reports.last();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.outputCapped()).isTrue();
		assertThat(report.finishReason()).as("the cap's, not the release's").isEqualTo("length");
		assertThat(report.tokens()).isEqualTo(2);
	}

	@Test
	void requestsRacingHeldWhitespaceNeverOverDeliverAndLoseNoText() {
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("it-blank-race").validate(Validators.emptyAnswer())
				.build());
		for (int round = 0; round < 2_000; round++) {
			Sinks.Many<ChatChunk> model = Sinks.many().unicast().onBackpressureBuffer();
			AtomicLong requested = new AtomicLong();
			AtomicInteger overDelivered = new AtomicInteger();
			StringBuilder text = new StringBuilder();
			AtomicBoolean done = new AtomicBoolean();
			BaseSubscriber<ChatChunk> user = new BaseSubscriber<>() {
				long received;

				@Override
				protected void hookOnSubscribe(Subscription s) {
					ask(1);
				}

				private void ask(long n) {
					requested.addAndGet(n);
					request(n);
				}

				@Override
				protected void hookOnNext(ChatChunk c) {
					if (++received > requested.get()) {
						overDelivered.incrementAndGet();
					}
					text.append(c.text());
				}

				@Override
				protected void hookOnComplete() {
					done.set(true);
				}
			};
			guard.call(ASK, r -> model.asFlux()).subscribe(user);
			RaceTestUtils.race(() -> {
				model.tryEmitNext(ChatChunk.token(" "));
				model.tryEmitNext(ChatChunk.token("\n"));
				model.tryEmitNext(ChatChunk.token("Hi"));
			}, () -> {
				requested.addAndGet(1);
				user.request(1);
			});
			requested.addAndGet(100);
			user.request(100);
			model.tryEmitNext(ChatChunk.token("!"));
			model.tryEmitNext(ChatChunk.finish("stop"));
			model.tryEmitNext(ChatChunk.done());
			model.tryEmitComplete();
			assertThat(done).as("round " + round).isTrue();
			assertThat(overDelivered).as("round " + round).hasValue(0);
			assertThat(text.toString()).as("round " + round).isEqualTo(" \nHi!");
		}
	}

	// ---- what it costs, and the tap's other work ----

	@Test
	void aVisibleAnswerAllocatesNothingPerChunkWithOrWithoutLeadingWhitespace() {
		com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
		AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("it-blank-cost").validate(Validators.emptyAnswer())
				.build());
		ChatChunk word = ChatChunk.token("w");
		for (int leading : new int[] { 0, 3 }) {
			ChatChunk[] chunks = new ChatChunk[200_000];
			java.util.Arrays.fill(chunks, word);
			for (int i = 0; i < leading; i++) {
				chunks[i] = ChatChunk.token(" ");
			}
			chunks[chunks.length - 2] = ChatChunk.finish("stop");
			chunks[chunks.length - 1] = ChatChunk.done();
			Flux<ChatChunk> source = Flux.fromArray(chunks);
			long[] seen = new long[1];
			for (int warm = 0; warm < 3; warm++) {
				source.transform(guard).subscribe(c -> seen[0]++);
			}
			long tid = Thread.currentThread().getId();
			long before = threads.getThreadAllocatedBytes(tid);
			source.transform(guard).subscribe(c -> seen[0]++);
			long allocated = threads.getThreadAllocatedBytes(tid) - before;
			assertThat(seen[0]).isEqualTo(4L * chunks.length);
			// one object per chunk would be at least 16 bytes x 200 000 = 3.2 MB; a request's own objects are a few KiB
			assertThat(allocated).as("leading whitespace chunks: " + leading).isLessThan(64 * 1024L);
		}
	}

	@Test
	void theHoldStepsOutOfThePathWithTheFirstVisibleChunk() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().build());
		AtomicReference<Subscription> request = new AtomicReference<>();
		AtomicReference<Object> whileHeld = new AtomicReference<>();
		Flux<ChatChunk> later = Flux.concat(Flux.just(ChatChunk.token(" ")),
				answer("Hi", " there").delaySubscription(Duration.ofSeconds(1), vts));
		StepVerifier.withVirtualTime(() -> later.transform(guard), () -> vts, 0)
				.consumeSubscriptionWith(request::set)
				.thenRequest(1)
				.then(() -> whileHeld.set(deliveringTo(request.get())))
				.thenAwait(Duration.ofSeconds(1))
				.expectNext(ChatChunk.token(" Hi"))
				.then(() -> assertThat(deliveringTo(request.get())).as("after the first visible chunk")
						.isNotInstanceOf(AnswerTap.class))
				.thenRequest(Long.MAX_VALUE)
				.expectNextCount(3)
				.verifyComplete();
		assertThat(whileHeld.get()).as("while whitespace is held").isInstanceOf(AnswerTap.class);
	}

	/** @return whom the running attempt's watch delivers to */
	@Nullable
	static Object deliveringTo(Subscription request) {
		Scannable watch = Scannable.from(Scannable.from(request).scanUnsafe(Scannable.Attr.PARENT));
		return watch.scanUnsafe(Scannable.Attr.ACTUAL);
	}

	@Test
	void theValidatorsSeeEachTextOnceWhetherTheWatchOrTheTapFeedsThem() {
		// a response cache puts the tap in the path for the whole answer (it records it)
		for (boolean cached : new boolean[] { false, true }) {
			GuardValidationPathTest.Recorder texts = new GuardValidationPathTest.Recorder(null);
			GuardPolicy.Builder b = policy().validateStreaming(texts);
			if (cached) {
				b.responseCache(ResponseCache.caffeine());
			}
			AiGuard<ChatChunk> guard = AiGuard.of(b.build());
			StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> answer(" ", "\n", "Hi", "!")), () -> vts, 0)
					.thenRequest(1)
					.expectNext(ChatChunk.token(" \nHi"))
					.thenRequest(Long.MAX_VALUE)
					.expectNext(ChatChunk.token("!"))
					.expectNextCount(2)
					.verifyComplete();
			assertThat(texts.texts).as("cached: " + cached).containsExactly(" ", "\n", "Hi", "!");
		}
	}

	@Test
	void withTheTapInThePathAWhitespaceAnswerIsRetriedAndOnlyTheServedAnswerCached() {
		AtomicInteger calls = new AtomicInteger();
		ResponseCache<ChatChunk> cache = ResponseCache.caffeine();
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder().step(Fallback.cache(cache)).build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().responseCache(cache).retry(retries(3)).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> nth(calls, List.of(whitespace(), answer(" ", "Sunny")))),
						() -> vts, Long.MAX_VALUE)
				.expectNextCount(2)
				.expectNoEvent(BACKOFF)
				.expectNext(ChatChunk.token(" "), ChatChunk.token("Sunny"))
				.expectNextCount(2)
				.verifyComplete();
		AiGuard<ChatChunk> fromCache = AiGuard.of(policy().fallback(ladder).build());
		StepVerifier.withVirtualTime(() -> fromCache.call(ASK, r -> Flux.error(new IOException("down"))), () -> vts,
						Long.MAX_VALUE)
				.expectNext(ChatChunk.token(" "), ChatChunk.token("Sunny"))
				.expectNextCount(2)
				.verifyComplete();
		assertThat(reports.last().source()).isEqualTo(Source.CACHE);
	}
}
