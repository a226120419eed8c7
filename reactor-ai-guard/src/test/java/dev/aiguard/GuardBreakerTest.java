package dev.aiguard;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerEvent;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerPermit;
import dev.aiguard.breaker.BreakerSnapshot;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.core.Source;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static java.util.concurrent.TimeUnit.NANOSECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Outcome;

/**
 * The circuit breaker as the guard drives it: one permission per attempt, exactly one outcome per
 * attempt, slow judged by the first token, cancellations handed back (a half-open probe slot too),
 * refusals typed, and an open circuit ending the retrying. All time is the virtual scheduler's.
 */
@Timeout(60)
class GuardBreakerTest {

	static final Duration OPEN_WAIT = Duration.ofSeconds(10);
	static final Duration CONFIRM = Duration.ofNanos(dev.aiguard.stall.watch.StallWatch.CONFIRM_DELAY_NANOS);

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	final List<BreakerEvent.StateTransition> transitions = new CopyOnWriteArrayList<>();

	@AfterEach
	void disposeClock() {
		vts.dispose();
	}

	/** Trips after two failures out of the last two calls; one probe, which closes it when healthy. */
	static BreakerConfig.Builder tripsAfterTwoFailures() {
		return BreakerConfig.custom()
				.countWindow(2)
				.minimumCalls(2)
				.failureRateThreshold(0.5)
				.openWait(OPEN_WAIT)
				.openWaitMultiplier(2.0)
				.maxOpenWait(Duration.ofMinutes(10))
				.openWaitJitter(0)
				.minimumDwell(Duration.ZERO)
				.halfOpenProbes(1)
				.successesToClose(1);
	}

	/** Never trips within a test: only counts. */
	static BreakerConfig.Builder countsOnly() {
		return BreakerConfig.custom().countWindow(100).minimumCalls(100).failureRateThreshold(1.0);
	}

	CircuitBreaker breaker(BreakerConfig config) {
		return CircuitBreaker.builder("llm")
				.config(config)
				.clock(() -> vts.now(NANOSECONDS))
				.listener(e -> {
					if (e instanceof BreakerEvent.StateTransition) {
						transitions.add((BreakerEvent.StateTransition) e);
					}
				})
				.build();
	}

	GuardPolicy.Builder policy(CircuitBreaker breaker) {
		return Policies.onVirtualTime("chat", vts, reports).breaker(breaker);
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token).concatWith(end());
	}

	static Flux<ChatChunk> end() {
		return Flux.just(ChatChunk.finish("stop"), ChatChunk.done());
	}

	static ProviderServerException serverError() {
		return new ProviderServerException("test", 503, "server_error", null, "HTTP 503: unavailable", null);
	}

	/** A source whose n-th subscription (0-based) gets {@code perAttempt[n]}, the last one repeated. */
	@SafeVarargs
	static Flux<ChatChunk> attempts(AtomicInteger subscriptions, Flux<ChatChunk>... perAttempt) {
		return Flux.defer(() -> {
			int n = subscriptions.getAndIncrement();
			return perAttempt[Math.min(n, perAttempt.length - 1)];
		});
	}

	/** Runs a request that fails with a provider error, so the breaker records one failure. */
	void fail(AiGuard<ChatChunk> guard) {
		StepVerifier.create(Flux.<ChatChunk>error(serverError()).transform(guard))
				.expectError(ProviderServerException.class)
				.verify(Duration.ofSeconds(5));
	}

	// ---- permission and outcome per attempt ----

	@Test
	void everyAttemptTakesAPermissionAndRecordsExactlyOneOutcome() {
		CircuitBreaker breaker = breaker(countsOnly().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker)
				.retry(RetryRules.backoff(3, Duration.ofSeconds(1)).jitter(0))
				.build());
		AtomicInteger subscriptions = new AtomicInteger();

		StepVerifier.create(attempts(subscriptions, Flux.error(serverError()), Flux.error(serverError()), answer("ok"))
						.transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(10)))
				.expectNext(ChatChunk.token("ok"), ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();

		assertThat(subscriptions).hasValue(3);
		BreakerSnapshot s = breaker.snapshot();
		assertThat(s.calls()).as("one outcome per attempt").isEqualTo(3);
		assertThat(s.failures()).isEqualTo(2);
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.SUCCESS);
			assertThat(r.attempts()).extracting(GuardReport.Attempt::outcome)
					.containsExactly(Outcome.FAILURE, Outcome.FAILURE, Outcome.SUCCESS);
		});
	}

	@Test
	void successIsRecordedWhenTheStreamEndsWithItsTerminalChunk() {
		CircuitBreaker breaker = breaker(countsOnly().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		TestPublisher<ChatChunk> upstream = TestPublisher.create();

		StepVerifier.create(upstream.flux().transform(guard))
				.then(() -> upstream.next(ChatChunk.token("a"), ChatChunk.token("b")))
				.expectNextCount(2)
				.then(() -> assertThat(breaker.snapshot().calls()).as("nothing settled mid-stream").isZero())
				.then(() -> upstream.next(ChatChunk.finish("stop"), ChatChunk.done()))
				.expectNextCount(2)
				.then(() -> assertThat(breaker.snapshot().calls()).as("settled at the end, not at the marker").isZero())
				.then(upstream::complete)
				.verifyComplete();

		assertThat(breaker.snapshot().calls()).isEqualTo(1);
		assertThat(breaker.snapshot().failures()).isZero();
	}

	@Test
	void aStreamThatEndsWithoutItsTerminalChunkIsAFailureNotASuccess() {
		CircuitBreaker breaker = breaker(countsOnly().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());

		StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.token("b")).transform(guard))
				.expectNextCount(2)
				.verifyErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
						.hasCauseInstanceOf(IncompleteStreamException.class));

		BreakerSnapshot s = breaker.snapshot();
		assertThat(s.calls()).isEqualTo(1);
		assertThat(s.failures()).isEqualTo(1);
		assertThat(s.incomplete()).isEqualTo(1);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.INCOMPLETE);
	}

	// ---- slow calls ----

	@Test
	void slowMeansASlowFirstTokenNotALongAnswer() {
		CircuitBreaker breaker = breaker(countsOnly().slowTimeToFirstToken(Duration.ofSeconds(2)).build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());

		// first token after 100 ms, then 600 tokens over a minute
		Flux<ChatChunk> longAnswer = Flux.interval(Duration.ofMillis(100), vts)
				.take(600)
				.map(i -> ChatChunk.token("t" + i))
				.concatWith(end());
		StepVerifier.create(longAnswer.transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofMinutes(2)))
				.expectNextCount(602)
				.verifyComplete();
		assertThat(reports.last().duration()).isEqualTo(Duration.ofSeconds(60));
		assertThat(breaker.snapshot().slowCalls()).as("a long answer with a fast first token").isZero();

		// a short answer whose first token took 3 s
		StepVerifier.create(Mono.delay(Duration.ofSeconds(3), vts).thenMany(answer("late")).transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(3)))
				.expectNextCount(3)
				.verifyComplete();
		assertThat(breaker.snapshot().slowCalls()).isEqualTo(1);

		// exactly at the threshold counts as slow
		StepVerifier.create(Mono.delay(Duration.ofSeconds(2), vts).thenMany(answer("edge")).transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(2)))
				.expectNextCount(3)
				.verifyComplete();

		BreakerSnapshot s = breaker.snapshot();
		assertThat(s.calls()).isEqualTo(3);
		assertThat(s.slowCalls()).isEqualTo(2);
		assertThat(s.failures()).isZero();
		assertThat(reports).extracting(GuardReport::timeToFirstToken)
				.containsExactly(Duration.ofMillis(100), Duration.ofSeconds(3), Duration.ofSeconds(2));
	}

	@Test
	void slowFirstTokensTripTheBreakerWhenTheSlowRateIsReached() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures()
				.failureRateThreshold(1.0)
				.slowCallRateThreshold(1.0)
				.slowTimeToFirstToken(Duration.ofSeconds(1))
				.build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());

		for (int i = 0; i < 2; i++) {
			StepVerifier.create(Mono.delay(Duration.ofSeconds(1), vts).thenMany(answer("slow")).transform(guard))
					.then(() -> vts.advanceTimeBy(Duration.ofSeconds(1)))
					.expectNextCount(3)
					.verifyComplete();
		}

		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(reports).extracting(GuardReport::outcome).containsOnly(Outcome.SUCCESS);
	}

	// ---- what counts as a failure ----

	@Test
	void stallsIncompleteStreamsAndProviderErrorsAreFailures() {
		CircuitBreaker breaker = breaker(countsOnly().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker)
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5)).idleTimeout(Duration.ofSeconds(5)))
				.build());

		StepVerifier.create(Flux.<ChatChunk>never().transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(5).plus(CONFIRM)))
				.verifyError(StreamStalledException.class);
		StepVerifier.create(Flux.just(ChatChunk.token("a")).concatWith(Flux.never()).transform(guard))
				.expectNextCount(1)
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(10)))
				.verifyErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
						.hasCauseInstanceOf(StreamStalledException.class));
		StepVerifier.create(Flux.<ChatChunk>empty().transform(guard))
				.verifyError(IncompleteStreamException.class);
		fail(guard);

		BreakerSnapshot s = breaker.snapshot();
		assertThat(s.calls()).isEqualTo(4);
		assertThat(s.failures()).isEqualTo(4);
		assertThat(s.stalls()).isEqualTo(2);
		assertThat(s.incomplete()).isEqualTo(1);
		assertThat(reports).extracting(GuardReport::outcome)
				.containsExactly(Outcome.STALLED, Outcome.STALLED, Outcome.INCOMPLETE, Outcome.FAILURE);
	}

	@Test
	void clientErrorsAreIgnoredByDefault() {
		CircuitBreaker breaker = breaker(countsOnly().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());

		StepVerifier.create(Flux.<ChatChunk>error(contextTooLong()).transform(guard))
				.verifyError(ContextLengthExceededException.class);
		StepVerifier.create(Flux.<ChatChunk>error(badKey()).transform(guard))
				.verifyError(ProviderClientException.class);

		assertThat(breaker.snapshot().calls()).isZero();
		assertThat(reports).extracting(GuardReport::outcome).containsExactly(Outcome.CLIENT_ERROR, Outcome.CLIENT_ERROR);
		assertThat(reports).allSatisfy(r -> assertThat(r.attempts()).hasSize(1));
	}

	@Test
	void clientErrorsCountAsFailuresWhenTheBreakerIsToldTo() {
		CircuitBreaker breaker = breaker(countsOnly().recordClientErrors(true).build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());

		StepVerifier.create(Flux.<ChatChunk>error(contextTooLong()).transform(guard))
				.verifyError(ContextLengthExceededException.class);
		StepVerifier.create(Flux.<ChatChunk>error(badKey()).transform(guard))
				.verifyError(ProviderClientException.class);

		assertThat(breaker.snapshot().calls()).isEqualTo(2);
		assertThat(breaker.snapshot().failures()).isEqualTo(2);
	}

	@Test
	void anIgnoredClientErrorGivesTheHalfOpenProbeSlotBack() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		openAndWait(guard, breaker);

		StepVerifier.create(Flux.<ChatChunk>error(badKey()).transform(guard))
				.verifyError(ProviderClientException.class);
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);

		StepVerifier.create(answer("probe").transform(guard)).expectNextCount(3).verifyComplete();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	static ContextLengthExceededException contextTooLong() {
		return new ContextLengthExceededException("test", 400, "invalid_request_error", "context_length_exceeded",
				"HTTP 400: maximum context length is 8192 tokens", 8192, 9000);
	}

	static ProviderClientException badKey() {
		return new ProviderClientException("test", 401, "authentication_error", null, "HTTP 401: bad key");
	}

	// ---- cancellation ----

	@Test
	void aCancelledStreamReleasesItsPermissionWithoutRecording() {
		CircuitBreaker breaker = breaker(countsOnly().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		TestPublisher<ChatChunk> upstream = TestPublisher.create();

		StepVerifier.create(upstream.flux().transform(guard))
				.then(() -> upstream.next(ChatChunk.token("a")))
				.expectNextCount(1)
				.thenCancel()
				.verify(Duration.ofSeconds(5));

		upstream.assertWasCancelled();
		assertThat(breaker.snapshot().calls()).isZero();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.CANCELLED);
		assertThat(reports.last().attempts()).extracting(GuardReport.Attempt::outcome).containsExactly(Outcome.CANCELLED);
	}

	@Test
	void aCancelledHalfOpenProbeGivesItsSlotBack() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		openAndWait(guard, breaker);

		TestPublisher<ChatChunk> probe = TestPublisher.create();
		TestSubscriber<ChatChunk> user = TestSubscriber.create();
		probe.flux().transform(guard).subscribe(user);
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
		probe.assertSubscribers(1);

		// the one probe slot is taken: a second request is refused meanwhile
		StepVerifier.create(answer("second").transform(guard))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(BreakerOpenException.class)
						.satisfies(x -> assertThat(((BreakerOpenException) x).state()).isEqualTo(BreakerState.HALF_OPEN)))
				.verify(Duration.ofSeconds(5));

		long callsBefore = breaker.snapshot().calls();
		user.cancel(); // the user closed the tab
		probe.assertWasCancelled();
		assertThat(breaker.snapshot().calls()).as("nothing recorded").isEqualTo(callsBefore);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.CANCELLED);

		// the slot came back: the next request probes, succeeds and closes the breaker
		StepVerifier.create(answer("third").transform(guard)).expectNextCount(3).verifyComplete();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	@Test
	void aCancelBeforeTheAttemptIsSubscribedGivesTheProbeSlotBack() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		openAndWait(guard, breaker);

		// the user leaves while the request is being sent: after the permission, before the stream
		AtomicReference<TestSubscriber<ChatChunk>> user = new AtomicReference<>();
		AtomicInteger sent = new AtomicInteger();
		user.set(TestSubscriber.create());
		guard.call(request(), r -> {
			sent.incrementAndGet();
			user.get().cancel();
			return answer("never seen");
		}).subscribe(user.get());

		assertThat(sent).hasValue(1);
		assertThat(user.get().getReceivedOnNext()).isEmpty();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.CANCELLED);
		assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);

		StepVerifier.create(answer("probe").transform(guard)).expectNextCount(3).verifyComplete();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
	}

	static ChatRequest request() {
		return ChatRequest.of("test-model", List.of(ChatMessage.user("hello")));
	}

	// ---- refusal ----

	@Test
	void anOpenBreakerRefusesWithBreakerOpenExceptionAndNoAttempt() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		fail(guard);
		fail(guard);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		AtomicInteger subscriptions = new AtomicInteger();

		StepVerifier.create(attempts(subscriptions, answer("x")).transform(guard))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(BreakerOpenException.class);
					assertThat(((BreakerOpenException) e).breakerName()).isEqualTo("llm");
					assertThat(((BreakerOpenException) e).state()).isEqualTo(BreakerState.OPEN);
				})
				.verify(Duration.ofSeconds(5));

		assertThat(subscriptions).as("the upstream is never subscribed").hasValue(0);
		assertThat(breaker.rejectedCalls()).isEqualTo(1);
		GuardReport r = reports.last();
		assertThat(r.outcome()).isEqualTo(Outcome.REJECTED);
		assertThat(r.attempts()).isEmpty();
		assertThat(r.error()).isInstanceOf(BreakerOpenException.class);
		assertThat(r.source()).isEqualTo(Source.REALTIME);
	}

	@Test
	void aForcedOpenBreakerRefusesEveryRequest() {
		CircuitBreaker breaker = breaker(countsOnly().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		breaker.transitionToForcedOpen();

		StepVerifier.create(answer("x").transform(guard))
				.expectErrorSatisfies(e -> assertThat(((BreakerOpenException) e).state()).isEqualTo(BreakerState.FORCED_OPEN))
				.verify(Duration.ofSeconds(5));
		assertThat(reports.last().outcome()).isEqualTo(Outcome.REJECTED);
	}

	@Test
	void anOpenBreakerSendsTheRequestDownTheFallbackLadderWhenThereIsOne() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker)
				.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy, try later")).build())
				.build());
		breaker.transitionToForcedOpen();
		AtomicInteger subscriptions = new AtomicInteger();

		StringBuilder text = new StringBuilder();
		StepVerifier.create(attempts(subscriptions, answer("x")).transform(guard))
				.thenConsumeWhile(c -> true, c -> text.append(c.text()))
				.verifyComplete();

		assertThat(text).hasToString("busy, try later");

		assertThat(subscriptions).hasValue(0);
		GuardReport r = reports.last();
		assertThat(r.source()).isEqualTo(Source.STATIC);
		assertThat(r.attempts()).isEmpty();
	}

	@Test
	void theCallFormAllowsALongPromptALaterFirstToken() {
		// 1 s for a short prompt, +7.2 ms per token: 5000 characters (about 1250 tokens) may take 10 s
		CircuitBreaker breaker = breaker(countsOnly().slowTimeToFirstToken(Duration.ofSeconds(1))
				.slowTimeToFirstTokenPerPromptToken(Duration.ofNanos(7_200_000)).build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		ChatRequest longPrompt = ChatRequest.of("m", List.of(ChatMessage.user("x".repeat(5000))));
		ChatRequest shortPrompt = ChatRequest.of("m", List.of(ChatMessage.user("hi")));

		StepVerifier.create(guard.call(longPrompt, r -> Mono.delay(Duration.ofSeconds(8), vts).thenMany(answer("a"))))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(8)))
				.expectNextCount(3)
				.verifyComplete();
		assertThat(breaker.snapshot().slowCalls()).as("8 s for 5000 characters is normal").isZero();

		StepVerifier.create(guard.call(shortPrompt, r -> Mono.delay(Duration.ofSeconds(8), vts).thenMany(answer("a"))))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(8)))
				.expectNextCount(3)
				.verifyComplete();
		assertThat(breaker.snapshot().slowCalls()).as("8 s for a short prompt is slow").isEqualTo(1);

		// the operator form has no request: the base threshold alone
		StepVerifier.create(Mono.delay(Duration.ofSeconds(8), vts).thenMany(answer("a")).transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(8)))
				.expectNextCount(3)
				.verifyComplete();
		assertThat(breaker.snapshot().slowCalls()).isEqualTo(2);
	}

	@Test
	void aRampUpRefusalTakesTheFallbackLadderAndIsNoFailure() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().rampUp(Duration.ofSeconds(10)).build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker)
				.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy, try later")).build())
				.build());
		openAndWait(AiGuard.of(policy(breaker).build()), breaker);
		StepVerifier.create(answer("probe").transform(guard)).expectNextCount(3).verifyComplete();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);

		// the ramp's first instant admits nothing: the ladder answers
		AtomicInteger subscriptions = new AtomicInteger();
		StringBuilder text = new StringBuilder();
		StepVerifier.create(attempts(subscriptions, answer("x")).transform(guard))
				.thenConsumeWhile(c -> true, c -> text.append(c.text()))
				.verifyComplete();
		assertThat(text).hasToString("busy, try later");
		assertThat(subscriptions).hasValue(0);
		assertThat(reports.last().source()).isEqualTo(Source.STATIC);
		assertThat(breaker.snapshot().failures()).isZero();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);

		// half-way through the ramp, half the requests go live
		vts.advanceTimeBy(Duration.ofSeconds(5));
		for (int i = 0; i < 10; i++) {
			StepVerifier.create(attempts(subscriptions, answer("x")).transform(guard)).thenConsumeWhile(c -> true)
					.verifyComplete();
		}
		assertThat(subscriptions).hasValue(5);
	}

	// ---- the state machine in virtual time ----

	/** Opens the breaker with two failures and lets its open wait pass. */
	void openAndWait(AiGuard<ChatChunk> guard, CircuitBreaker breaker) {
		fail(guard);
		fail(guard);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		vts.advanceTimeBy(OPEN_WAIT);
	}

	@Test
	void openWaitHalfOpenProbesAndGrowingReopenWaitsInVirtualTime() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		AtomicInteger subscriptions = new AtomicInteger();
		Flux<ChatChunk> failing = attempts(subscriptions, Flux.error(serverError()));

		fail(guard);
		fail(guard);
		long openedAt = vts.now(NANOSECONDS);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);

		// refused until the whole open wait has passed
		vts.advanceTimeBy(OPEN_WAIT.minusMillis(1));
		StepVerifier.create(failing.transform(guard)).verifyError(BreakerOpenException.class);
		assertThat(subscriptions).hasValue(0);

		// then one probe; it fails and re-opens with twice the wait
		vts.advanceTimeBy(Duration.ofMillis(1));
		StepVerifier.create(failing.transform(guard)).verifyError(ProviderServerException.class);
		assertThat(subscriptions).hasValue(1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		long reopenedAt = vts.now(NANOSECONDS);

		vts.advanceTimeBy(OPEN_WAIT.multipliedBy(2).minusMillis(1));
		StepVerifier.create(failing.transform(guard)).verifyError(BreakerOpenException.class);
		assertThat(subscriptions).hasValue(1);

		// the next probe succeeds and closes
		vts.advanceTimeBy(Duration.ofMillis(1));
		StepVerifier.create(answer("back").transform(guard)).expectNextCount(3).verifyComplete();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);

		assertThat(transitions).extracting(t -> t.from() + "->" + t.to())
				.containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN", "HALF_OPEN->OPEN", "OPEN->HALF_OPEN",
						"HALF_OPEN->CLOSED");
		assertThat(transitions.get(1).nanoTime() - openedAt).isEqualTo(OPEN_WAIT.toNanos());
		assertThat(transitions.get(3).nanoTime() - reopenedAt).isEqualTo(OPEN_WAIT.multipliedBy(2).toNanos());
		assertThat(reports).extracting(GuardReport::outcome).containsExactly(Outcome.FAILURE, Outcome.FAILURE,
				Outcome.REJECTED, Outcome.FAILURE, Outcome.REJECTED, Outcome.SUCCESS);
	}

	@Test
	void stepVerifierWithVirtualTimeDrivesTheOpenWaitThroughTheGuard() {
		AtomicReference<CircuitBreaker> built = new AtomicReference<>();
		StepVerifier.withVirtualTime(() -> {
					VirtualTimeScheduler clock = VirtualTimeScheduler.get();
					CircuitBreaker breaker = CircuitBreaker.builder("llm")
							.config(tripsAfterTwoFailures().build())
							.clock(() -> clock.now(NANOSECONDS))
							.build();
					built.set(breaker);
					AiGuard<ChatChunk> guard = AiGuard.of(Policies.reporting("chat", reports).breaker(breaker).build());
					Flux<ChatChunk> failing = Flux.error(serverError());
					return Flux.concat(
							failing.transform(guard).onErrorResume(ProviderServerException.class, e -> Flux.empty()),
							failing.transform(guard).onErrorResume(ProviderServerException.class, e -> Flux.empty()),
							answer("x").transform(guard)
									.onErrorResume(BreakerOpenException.class, e -> Flux.just(ChatChunk.token("open"))),
							Mono.delay(OPEN_WAIT).thenMany(answer("back").transform(guard)));
				})
				.expectNext(ChatChunk.token("open"))
				.expectNoEvent(OPEN_WAIT)
				.expectNext(ChatChunk.token("back"), ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();

		assertThat(built.get().state()).isEqualTo(BreakerState.CLOSED);
		assertThat(reports).extracting(GuardReport::outcome)
				.containsExactly(Outcome.FAILURE, Outcome.FAILURE, Outcome.REJECTED, Outcome.SUCCESS);
	}

	@Test
	void halfOpenLetsOnlyItsProbesThroughAndClosesWhenTheyEndHealthy() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().halfOpenProbes(2).successesToClose(2).build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
		openAndWait(guard, breaker);

		TestPublisher<ChatChunk> first = TestPublisher.create();
		TestPublisher<ChatChunk> second = TestPublisher.create();
		TestSubscriber<ChatChunk> a = TestSubscriber.create();
		TestSubscriber<ChatChunk> b = TestSubscriber.create();
		first.flux().transform(guard).subscribe(a);
		second.flux().transform(guard).subscribe(b);

		StepVerifier.create(answer("third").transform(guard)).verifyError(BreakerOpenException.class);

		first.next(ChatChunk.token("a")).next(ChatChunk.done()).complete();
		assertThat(breaker.state()).as("one healthy probe of two").isEqualTo(BreakerState.HALF_OPEN);
		second.next(ChatChunk.token("b")).next(ChatChunk.done()).complete();
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(a.isTerminatedComplete()).isTrue();
		assertThat(b.isTerminatedComplete()).isTrue();
	}

	@Test
	void aStalledProbeReopensTheBreaker() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker)
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5)))
				.build());
		openAndWait(guard, breaker);

		StepVerifier.create(Flux.<ChatChunk>never().transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(5).plus(CONFIRM)))
				.verifyError(StreamStalledException.class);

		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.STALLED);
	}

	// ---- retries ----

	@Test
	void anOpenBreakerEndsTheRetryingInsteadOfStormingIt() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker)
				.retry(RetryRules.backoff(10, Duration.ofSeconds(1)).jitter(0))
				.build());
		AtomicInteger subscriptions = new AtomicInteger();

		StepVerifier.create(attempts(subscriptions, Flux.error(serverError())).transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofMinutes(5)))
				.verifyError(ProviderServerException.class);

		assertThat(subscriptions).as("two attempts tripped it; the third was refused").hasValue(2);
		assertThat(breaker.rejectedCalls()).isEqualTo(1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		GuardReport r = reports.last();
		assertThat(r.attempts()).extracting(GuardReport.Attempt::outcome).containsExactly(Outcome.FAILURE, Outcome.FAILURE);
		assertThat(r.outcome()).isEqualTo(Outcome.FAILURE);
		assertThat(r.error()).isInstanceOf(ProviderServerException.class);
	}

	@Test
	void aFailedHalfOpenProbeIsNotRetriedIntoTheReopenedCircuit() {
		CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
		AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker)
				.retry(RetryRules.backoff(5, Duration.ofMillis(100)).jitter(0))
				.build());
		AtomicInteger subscriptions = new AtomicInteger();
		Flux<ChatChunk> failing = attempts(subscriptions, Flux.error(serverError()));
		StepVerifier.create(failing.transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(5)))
				.verifyError(ProviderServerException.class);
		assertThat(subscriptions).hasValue(2);
		vts.advanceTimeBy(OPEN_WAIT);

		StepVerifier.create(failing.transform(guard))
				.then(() -> vts.advanceTimeBy(Duration.ofSeconds(5)))
				.verifyError(ProviderServerException.class);

		assertThat(subscriptions).as("only the probe went out").hasValue(3);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
	}

	// ---- races ----

	@Test
	void cancelRacingCompletionSettlesThePermissionOnce() {
		for (int i = 0; i < 300; i++) {
			reports.clear();
			CircuitBreaker breaker = breaker(countsOnly().build());
			AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
			Sinks.Many<ChatChunk> upstream = Sinks.many().unicast().onBackpressureBuffer();
			TestSubscriber<ChatChunk> user = TestSubscriber.create();
			upstream.asFlux().transform(guard).subscribe(user);
			upstream.tryEmitNext(ChatChunk.token("a"));
			upstream.tryEmitNext(ChatChunk.done());

			RaceTestUtils.race(Schedulers.boundedElastic(), upstream::tryEmitComplete, user::cancel);

			assertThat(reports).hasSize(1);
			Outcome outcome = reports.get(0).outcome();
			assertThat(outcome).isIn(Outcome.SUCCESS, Outcome.CANCELLED);
			assertThat(breaker.snapshot().calls()).as("round %d, %s", i, outcome)
					.isEqualTo(outcome == Outcome.SUCCESS ? 1 : 0);
		}
	}

	@Test
	void cancelRacingCompletionOfAHalfOpenProbeNeverLosesTheSlot() {
		for (int i = 0; i < 200; i++) {
			reports.clear();
			transitions.clear();
			CircuitBreaker breaker = breaker(tripsAfterTwoFailures().build());
			AiGuard<ChatChunk> guard = AiGuard.of(policy(breaker).build());
			openAndWait(guard, breaker);
			Sinks.Many<ChatChunk> upstream = Sinks.many().unicast().onBackpressureBuffer();
			TestSubscriber<ChatChunk> user = TestSubscriber.create();
			upstream.asFlux().transform(guard).subscribe(user);
			upstream.tryEmitNext(ChatChunk.token("a"));
			upstream.tryEmitNext(ChatChunk.done());

			RaceTestUtils.race(Schedulers.boundedElastic(), upstream::tryEmitComplete, user::cancel);

			Outcome outcome = reports.last().outcome();
			if (outcome == Outcome.SUCCESS) {
				assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
			}
			else {
				assertThat(outcome).isEqualTo(Outcome.CANCELLED);
				assertThat(breaker.state()).isEqualTo(BreakerState.HALF_OPEN);
				BreakerPermit slot = breaker.tryAcquire();
				assertThat(slot).as("round %d: the probe slot came back", i).isNotNull();
				slot.record(Outcome.CANCELLED, -1L);
			}
		}
	}
}
