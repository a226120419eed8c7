package dev.aiguard;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.core.Source;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.http.codec.ServerSentEvent;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;

import static dev.aiguard.GuardFallbackTest.REQUEST;
import static dev.aiguard.GuardFallbackTest.answer;
import static dev.aiguard.GuardFallbackTest.chunks;
import static dev.aiguard.GuardFallbackTest.unavailable;
import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Outcome;

/**
 * {@link GuardSignals} as a handler uses it: the source is known before the first chunk of the
 * answer that source gives, it is never {@code REALTIME} for an answer the model did not give, and
 * the report arrives once the request ended.
 */
@Timeout(30)
class GuardSignalsTest {

	static final ChatChunk ROLE = new ChatChunk("", "assistant", null, null, null, false, false);

	final Reports reports = new Reports();

	GuardPolicy.Builder policy() {
		return Policies.reporting("signals", reports);
	}

	static FallbackChain<ChatChunk> staticLadder() {
		return FallbackChain.<ChatChunk>builder().step(Fallback.staticAnswer(chunks("busy"))).build();
	}

	/**
	 * Subscribes to the signals' source first, then to the guarded stream, and notes for each chunk
	 * the source known when that chunk arrived.
	 */
	static Flux<String> sourceSeenPerChunk(Flux<ChatChunk> guarded, GuardSignals signals) {
		AtomicReference<Source> known = new AtomicReference<>();
		signals.source().subscribe(known::set);
		return guarded.map(c -> known.get() + ":" + (c.terminal() ? "[DONE]" : c.text()))
				.contextWrite(signals::into);
	}

	@Test
	void theSourceIsRealtimeBeforeTheFirstTokenOfALiveAnswerArrives() {
		GuardSignals signals = GuardSignals.create();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().fallback(staticLadder()).build());

		StepVerifier.create(sourceSeenPerChunk(guard.call(REQUEST, r -> answer("We ", "open")), signals))
				.expectNext("REALTIME:We ", "REALTIME:open", "REALTIME:", "REALTIME:[DONE]")
				.verifyComplete();

		StepVerifier.create(signals.source()).expectNext(Source.REALTIME).verifyComplete();
		StepVerifier.create(signals.report()).assertNext(r -> assertThat(r).isSameAs(reports.get(0))).verifyComplete();
	}

	@Test
	void theSourceIsNotRealtimeWhenTheModelFailedBeforeAnyContentAndAFallbackAnswered() {
		GuardSignals signals = GuardSignals.create();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().fallback(staticLadder()).build());

		// the model announces its role and pings, then fails: nothing the user could read came from it
		StepVerifier.create(sourceSeenPerChunk(guard.call(REQUEST,
						r -> Flux.just(ROLE, ChatChunk.keepAlive()).concatWith(Flux.error(unavailable()))), signals))
				.expectNext("null:", "null:")
				.expectNext("STATIC:busy", "STATIC:", "STATIC:[DONE]")
				.verifyComplete();

		StepVerifier.create(signals.source()).expectNext(Source.STATIC).verifyComplete();
		assertThat(reports.get(0).source()).isEqualTo(Source.STATIC);
	}

	@Test
	void theSourceOfAnAnswerAfterAStallBeforeTheFirstTokenIsTheFallbacks() {
		GuardSignals signals = GuardSignals.create();

		StepVerifier.withVirtualTime(() -> sourceSeenPerChunk(AiGuard.of(policy().fallback(staticLadder())
										.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1))).build())
								.call(REQUEST, r -> Flux.just(ChatChunk.keepAlive()).concatWith(Flux.never())), signals))
				.expectNext("null:")
				.thenAwait(Duration.ofSeconds(2))
				.expectNext("STATIC:busy", "STATIC:", "STATIC:[DONE]")
				.verifyComplete();

		StepVerifier.create(signals.source()).expectNext(Source.STATIC).verifyComplete();
	}

	@Test
	void aRetryThatSucceedsIsRealtime() {
		GuardSignals signals = GuardSignals.create();
		AtomicInteger calls = new AtomicInteger();

		StepVerifier.withVirtualTime(() -> sourceSeenPerChunk(AiGuard.of(policy().fallback(staticLadder())
										.retry(RetryRules.backoff(2, Duration.ofMillis(100)).jitter(0)).build())
								.call(REQUEST, r -> calls.getAndIncrement() == 0
										? Flux.just(ROLE).concatWith(Flux.error(unavailable()))
										: answer("nine")), signals))
				.expectNext("null:")
				.thenAwait(Duration.ofSeconds(1))
				.expectNext("REALTIME:nine", "REALTIME:", "REALTIME:[DONE]")
				.verifyComplete();

		assertThat(reports.get(0).source()).isEqualTo(Source.REALTIME);
		assertThat(reports.get(0).attempts()).hasSize(2);
	}

	@Test
	void theSourceIsAnnouncedBeforeAnyFallbackChunkEvenWhenTheStepStartsWithoutContent() {
		GuardSignals signals = GuardSignals.create();
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder()
				.step(Fallback.lightweight(r -> Flux.just(ROLE, ChatChunk.token("faq"), ChatChunk.done()), false))
				.build();
		CircuitBreaker open = CircuitBreaker.builder("main").build();
		open.transitionToForcedOpen();

		StepVerifier.create(sourceSeenPerChunk(AiGuard.of(policy().fallback(ladder).breaker(open).build())
						.call(REQUEST, r -> answer("never")), signals))
				.expectNext("LIGHTWEIGHT:", "LIGHTWEIGHT:faq", "LIGHTWEIGHT:[DONE]")
				.verifyComplete();
	}

	@Test
	void aFailedRequestHasNoSourceAndItsReportCarriesTheError() {
		GuardSignals signals = GuardSignals.create();

		StepVerifier.create(AiGuard.of(policy().build()).call(REQUEST, r -> Flux.<ChatChunk>error(unavailable()))
						.contextWrite(signals::into))
				.verifyError();

		StepVerifier.create(signals.source()).verifyComplete();
		StepVerifier.create(signals.report())
				.assertNext(r -> {
					assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
					assertThat(r.error()).hasMessage("overloaded");
				})
				.verifyComplete();
	}

	@Test
	void aRequestCancelledBeforeAnyContentHasNoSourceAndACancelledReport() {
		GuardSignals signals = GuardSignals.create();
		TestPublisher<ChatChunk> upstream = TestPublisher.create();

		StepVerifier.create(AiGuard.of(policy().fallback(staticLadder()).build()).call(REQUEST, r -> upstream.flux())
						.contextWrite(signals::into))
				.then(() -> upstream.next(ROLE))
				.expectNext(ROLE)
				.thenCancel()
				.verify(Duration.ofSeconds(5));

		StepVerifier.create(signals.source()).verifyComplete();
		StepVerifier.create(signals.report()).assertNext(r -> assertThat(r.outcome()).isEqualTo(Outcome.CANCELLED))
				.verifyComplete();
	}

	@Test
	void aNoticeAfterAMidStreamFailureKeepsTheRealtimeSource() {
		GuardSignals signals = GuardSignals.create();

		StepVerifier.create(sourceSeenPerChunk(AiGuard.of(policy().fallback(staticLadder())
								.midStream(MidStreamPolicy.notice(" [cut]")).build())
						.call(REQUEST, r -> Flux.just(ChatChunk.token("We")).concatWith(Flux.error(unavailable()))), signals))
				.expectNext("REALTIME:We", "REALTIME: [cut]")
				.verifyComplete();

		StepVerifier.create(signals.report()).assertNext(r -> {
			assertThat(r.source()).isEqualTo(Source.REALTIME);
			assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
		}).verifyComplete();
	}

	@Test
	void theTransformFormSignalsToo() {
		GuardSignals signals = GuardSignals.create();
		CircuitBreaker open = CircuitBreaker.builder("main").build();
		open.transitionToForcedOpen();

		StepVerifier.create(sourceSeenPerChunk(answer("never").transform(AiGuard.of(policy().fallback(staticLadder())
						.breaker(open).build())), signals))
				.expectNext("STATIC:busy", "STATIC:", "STATIC:[DONE]")
				.verifyComplete();
	}

	/** What a WebFlux handler does: tokens as they come, then a done event naming the source. */
	static Flux<ServerSentEvent<String>> chatEndpoint(AiGuard<ChatChunk> guard, ChatRequest request,
			java.util.function.Function<ChatRequest, Flux<ChatChunk>> client) {
		GuardSignals signals = GuardSignals.create();
		Flux<ServerSentEvent<String>> tokens = guard.call(request, client)
				.filter(ChatChunk::hasContent)
				.map(c -> ServerSentEvent.builder(c.text()).event("token").build());
		Flux<ServerSentEvent<String>> done = signals.report()
				.map(r -> ServerSentEvent.builder(r.source() + "," + r.finishReason() + "," + r.tokens())
						.event("done").build())
				.flux();
		return Flux.concat(tokens, done).contextWrite(signals::into);
	}

	@Test
	void aHandlerCanAnnounceAFallbackSourceBeforeItsFirstToken() {
		CircuitBreaker open = CircuitBreaker.builder("main").build();
		open.transitionToForcedOpen();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().fallback(FallbackChain.<ChatChunk>builder()
				.step(Fallback.staticText("Busy, sorry.")).build()).breaker(open).build());
		GuardSignals signals = GuardSignals.create();
		Flux<String> banner = signals.source().filter(s -> s != Source.REALTIME).map(s -> "source=" + s).flux();
		Flux<String> tokens = guard.call(REQUEST, r -> answer("never")).filter(ChatChunk::hasContent)
				.map(c -> "token=" + c.text());
		Flux<String> done = signals.report().map(r -> "done=" + r.source()).flux();

		StepVerifier.create(Flux.merge(banner, Flux.concat(tokens, done)).contextWrite(signals::into))
				.expectNext("source=STATIC", "token=Busy, ", "token=sorry.", "done=STATIC")
				.verifyComplete();
	}

	@Test
	void aHandlerNamesTheSourceInItsDoneEvent() {
		ResponseCache<ChatChunk> cache = ResponseCache.caffeine();
		CircuitBreaker breaker = CircuitBreaker.builder("main").build();
		AiGuard<ChatChunk> guard = AiGuard.of(policy()
				.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.cache(cache))
						.step(Fallback.staticText("Busy, sorry.")).build())
				.breaker(breaker).responseCache(cache).build());

		StepVerifier.create(chatEndpoint(guard, REQUEST, r -> answer("We ", "open")).map(e -> e.event() + "=" + e.data()))
				.expectNext("token=We ", "token=open", "done=REALTIME,stop,2")
				.verifyComplete();
		breaker.transitionToForcedOpen();
		StepVerifier.create(chatEndpoint(guard, REQUEST, r -> answer("never")).map(e -> e.event() + "=" + e.data()))
				.expectNext("token=We ", "token=open", "done=CACHE,stop,2")
				.verifyComplete();
		StepVerifier.create(chatEndpoint(guard, GuardFallbackTest.question(9), r -> answer("never"))
						.map(e -> e.event() + "=" + e.data()))
				.expectNext("token=Busy, ", "token=sorry.", "done=STATIC,stop,2")
				.verifyComplete();
	}
}
