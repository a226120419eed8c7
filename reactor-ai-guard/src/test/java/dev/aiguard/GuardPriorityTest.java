package dev.aiguard;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.StallPhase;
import dev.aiguard.provider.ProviderErrors;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.stall.watch.StallWatch;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;

import static java.util.concurrent.TimeUnit.NANOSECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Settings per priority inside one policy ({@link GuardPolicy.Builder#forPriority}): each request
 * runs on its priority's deadlines and retry rules, is counted by the breaker or not as its
 * priority says, and a policy sizes the lanes of its priorities. All time is virtual.
 */
class GuardPriorityTest {

	static final Duration CONFIRM = Duration.ofNanos(StallWatch.CONFIRM_DELAY_NANOS);

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();

	@AfterEach
	void disposeClock() {
		vts.dispose();
	}

	/** The example: P0 5 s to the first token and 2 retries, P2 30 s and no retry, P1 the policy's 10 s and 1 retry. */
	GuardPolicy.Builder tiered() {
		return Policies.onVirtualTime("tiered", vts, reports)
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(10)).idleTimeout(Duration.ofSeconds(4)))
				.retry(RetryRules.backoff(2, Duration.ofMillis(100)).jitter(0))
				.forPriority(Priority.P0, p -> p.firstTokenTimeout(Duration.ofSeconds(5))
						.retry(RetryRules.backoff(3, Duration.ofMillis(100)).jitter(0)))
				.forPriority(Priority.P2, p -> p.firstTokenTimeout(Duration.ofSeconds(30)).retry(RetryRules.none()));
	}

	static ProviderException unavailable() {
		return ProviderErrors.fromHttp("openai", 503, header -> null, "");
	}

	static Flux<ChatChunk> answer() {
		return Flux.just(ChatChunk.token("hi"), ChatChunk.finish("stop"), ChatChunk.done());
	}

	@Test
	void eachPriorityStallsOnItsOwnFirstTokenDeadline() {
		AiGuard<ChatChunk> guard = AiGuard.of(tiered().retry(RetryRules.none())
				.forPriority(Priority.P0, p -> p.retry(RetryRules.none())).build());
		expectStallAt(guard, Priority.P0, Duration.ofSeconds(5));
		expectStallAt(guard, Priority.P1, Duration.ofSeconds(10));
		expectStallAt(guard, Priority.P2, Duration.ofSeconds(30));
		assertThat(reports).extracting(GuardReport::priority).containsExactly(Priority.P0, Priority.P1, Priority.P2);
	}

	private void expectStallAt(AiGuard<ChatChunk> guard, Priority priority, Duration deadline) {
		TestSubscriber<ChatChunk> answer = TestSubscriber.create();
		Flux.<ChatChunk>never().transform(guard).contextWrite(priority.asContext()).subscribe(answer);
		vts.advanceTimeBy(deadline.minus(Duration.ofMillis(1)));
		assertThat(answer.isTerminated()).as("%s before its deadline", priority).isFalse();
		vts.advanceTimeBy(Duration.ofMillis(1).plus(CONFIRM));
		assertThat(answer.expectTerminalError()).isInstanceOfSatisfying(StreamStalledException.class,
				s -> assertThat(s.phase()).isEqualTo(StallPhase.FIRST_TOKEN));
	}

	@Test
	void aPartialDeadlineOverrideKeepsTheRestOfThePolicysStallSpec() {
		GuardPolicy policy = tiered().build();
		assertThat(policy.stall(Priority.P0).firstTokenTimeout()).isEqualTo(Duration.ofSeconds(5));
		assertThat(policy.stall(Priority.P0).idleTimeout()).isEqualTo(Duration.ofSeconds(4));
		assertThat(policy.stall(Priority.P1)).isSameAs(policy.stall());
		GuardPolicy whole = tiered().forPriority(Priority.P1, p -> p.stall(StallSpec.defaults()
				.idleTimeout(Duration.ofSeconds(1))).maxDuration(Duration.ofSeconds(9))).build();
		assertThat(whole.stall(Priority.P1).firstTokenTimeout()).as("the whole spec replaces the policy's").isNull();
		assertThat(whole.stall(Priority.P1).idleTimeout()).isEqualTo(Duration.ofSeconds(1));
		assertThat(whole.stall(Priority.P1).maxDuration()).isEqualTo(Duration.ofSeconds(9));
	}

	@Test
	void eachPriorityRetriesByItsOwnRules() {
		AiGuard<ChatChunk> guard = AiGuard.of(tiered().build());
		assertThat(attemptsFor(guard, Priority.P0)).isEqualTo(3);
		assertThat(attemptsFor(guard, Priority.P1)).isEqualTo(2);
		assertThat(attemptsFor(guard, Priority.P2)).isEqualTo(1);
		assertThat(reports).allSatisfy(r -> assertThat(r.outcome()).isEqualTo(Outcome.FAILURE));
	}

	@Test
	void aRequestWithoutPriorityReadsTheDefaultPrioritysSettings() {
		AiGuard<ChatChunk> guard = AiGuard.of(tiered().defaultPriority(Priority.P2).build());
		AtomicInteger calls = new AtomicInteger();
		TestSubscriber<ChatChunk> answer = TestSubscriber.create();
		Flux.defer(() -> {
			calls.incrementAndGet();
			return Flux.<ChatChunk>error(unavailable());
		}).transform(guard).subscribe(answer);
		vts.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(answer.expectTerminalError()).isInstanceOf(ProviderException.class);
		assertThat(calls).as("P2 never retries").hasValue(1);
	}

	private int attemptsFor(AiGuard<ChatChunk> guard, Priority priority) {
		AtomicInteger calls = new AtomicInteger();
		TestSubscriber<ChatChunk> answer = TestSubscriber.create();
		Flux.defer(() -> {
			calls.incrementAndGet();
			return Flux.<ChatChunk>error(unavailable());
		}).transform(guard).contextWrite(priority.asContext()).subscribe(answer);
		vts.advanceTimeBy(Duration.ofSeconds(1));
		assertThat(answer.expectTerminalError()).isInstanceOf(ProviderException.class);
		return calls.get();
	}

	@Test
	void aPriorityTheBreakerDoesNotCountNeitherOpensItNorIsLetThroughWhenOpen() {
		CircuitBreaker breaker = CircuitBreaker.builder("llm")
				.config(BreakerConfig.custom().countWindow(2).minimumCalls(2).failureRateThreshold(0.5)
						.openWait(Duration.ofMinutes(1)).openWaitJitter(0).minimumDwell(Duration.ZERO).build())
				.clock(() -> vts.now(NANOSECONDS))
				.build();
		AiGuard<ChatChunk> guard = AiGuard.of(Policies.onVirtualTime("tolerant", vts, reports)
				.breaker(breaker)
				.forPriority(Priority.P2, p -> p.countedByBreaker(false))
				.build());
		for (int i = 0; i < 4; i++) {
			fail(guard, Priority.P2);
		}
		assertThat(breaker.state()).as("P2's failures are not counted").isEqualTo(BreakerState.CLOSED);
		assertThat(breaker.snapshot().calls()).isZero();
		fail(guard, Priority.P0);
		fail(guard, Priority.P0);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);

		StepVerifier.create(answer().transform(guard).contextWrite(Priority.P2.asContext()))
				.expectError(dev.aiguard.breaker.BreakerOpenException.class)
				.verify(Duration.ofSeconds(5));
		assertThat(reports.last().outcome()).isEqualTo(Outcome.REJECTED);
	}

	@Test
	void anUncountedPriorityHandsAHalfOpenProbeBack() {
		CircuitBreaker breaker = CircuitBreaker.builder("llm")
				.config(BreakerConfig.custom().countWindow(2).minimumCalls(2).failureRateThreshold(0.5)
						.openWait(Duration.ofSeconds(10)).openWaitJitter(0).minimumDwell(Duration.ZERO)
						.halfOpenProbes(1).successesToClose(1).build())
				.clock(() -> vts.now(NANOSECONDS))
				.build();
		AiGuard<ChatChunk> guard = AiGuard.of(Policies.onVirtualTime("probe", vts, reports)
				.breaker(breaker)
				.forPriority(Priority.P2, p -> p.countedByBreaker(false))
				.build());
		breaker.transitionToForcedOpen();
		breaker.transitionToClosed();
		fail(guard, Priority.P0);
		fail(guard, Priority.P0);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		vts.advanceTimeBy(Duration.ofSeconds(11));

		StepVerifier.create(answer().transform(guard).contextWrite(Priority.P2.asContext()))
				.expectNextCount(3).verifyComplete();
		assertThat(breaker.state()).as("P2's success decides nothing").isEqualTo(BreakerState.HALF_OPEN);
		StepVerifier.create(answer().transform(guard).contextWrite(Priority.P0.asContext()))
				.expectNextCount(3).verifyComplete();
		assertThat(breaker.state()).as("the probe slot came back to P0, whose success closes").isEqualTo(BreakerState.CLOSED);
	}

	private void fail(AiGuard<ChatChunk> guard, Priority priority) {
		StepVerifier.create(Flux.<ChatChunk>error(unavailable()).transform(guard).contextWrite(priority.asContext()))
				.expectError(ProviderException.class)
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void aPolicySizesTheLanesOfItsPriorities() {
		PriorityLanes lanes = PriorityLanes.builder()
				.lane(Priority.P0, LaneSpec.of(2)).lane(Priority.P1, LaneSpec.of(2)).lane(Priority.P2, LaneSpec.of(2))
				.build();
		try {
			AiGuard.of(GuardPolicy.builder("sized").lanes(lanes)
					.forPriority(Priority.P0, p -> p.laneConcurrency(6))
					.forPriority(Priority.P2, p -> p.laneConcurrency(0))
					.build());
			assertThat(lanes.concurrency(Priority.P0)).isEqualTo(6);
			assertThat(lanes.concurrency(Priority.P1)).isEqualTo(2);
			assertThat(lanes.concurrency(Priority.P2)).isZero();
		}
		finally {
			lanes.dispose();
		}
	}

	@Test
	void badOverridesAreRefusedNamingThePriorityAndTheField() {
		assertThatThrownBy(() -> GuardPolicy.builder("bad")
				.forPriority(Priority.P0, p -> p.firstTokenTimeout(Duration.ZERO)))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("priority.P0.firstTokenTimeout must be > 0, was PT0S");
		assertThatThrownBy(() -> GuardPolicy.builder("bad").forPriority(Priority.P2, p -> p.laneConcurrency(-1)))
				.hasMessage("priority.P2.laneConcurrency must be >= 0, was -1");
		assertThatThrownBy(() -> GuardPolicy.builder("bad").forPriority(Priority.P1, p -> null))
				.hasMessage("priority.P1 must not be null");
		assertThatThrownBy(() -> GuardPolicy.builder("bad").forPriority(Priority.P1, p -> p.laneConcurrency(3)).build())
				.hasMessageStartingWith("priority.P1.laneConcurrency needs the policy's lanes(..)");
		assertThatThrownBy(() -> PriorityOverrides.none().retry(null)).hasMessage("retry must not be null");
	}

	@Test
	void overridesAreCopyOnWriteAndSurviveToBuilder() {
		PriorityOverrides base = PriorityOverrides.none();
		PriorityOverrides p0 = base.firstTokenTimeout(Duration.ofSeconds(5));
		assertThat(base.isEmpty()).isTrue();
		assertThat(p0.isEmpty()).isFalse();
		assertThat(p0.firstTokenTimeout()).isEqualTo(Duration.ofSeconds(5));
		GuardPolicy policy = tiered().build();
		GuardPolicy copy = policy.toBuilder().build();
		assertThat(copy.overrides(Priority.P0)).isEqualTo(policy.overrides(Priority.P0));
		assertThat(copy.retry(Priority.P2).maxAttempts()).isEqualTo(1);
		GuardPolicy cleared = policy.toBuilder().forPriority(Priority.P0, p -> PriorityOverrides.none()).build();
		assertThat(cleared.overrides(Priority.P0).isEmpty()).isTrue();
		assertThat(cleared.stall(Priority.P0).firstTokenTimeout()).isEqualTo(Duration.ofSeconds(10));
		assertThat(cleared.describe()).doesNotContainKey("priority.P0.firstTokenTimeout");
	}

	@Test
	void aFallbackAnswerIsNotHeldToThePrioritysDeadlines() {
		AiGuard<ChatChunk> guard = AiGuard.of(tiered().retry(RetryRules.none())
				.forPriority(Priority.P0, p -> p.retry(RetryRules.none()))
				.fallback(dev.aiguard.fallback.FallbackChain.<ChatChunk>builder()
						.step(dev.aiguard.fallback.Fallback.<ChatChunk>model(r -> Flux.just(ChatChunk.token("slow"))
								.delaySubscription(Duration.ofSeconds(20), vts)
								.concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()))))
						.timeout(Duration.ofMinutes(1))
						.build())
				.build());
		ChatRequest request = ChatRequest.of("main", List.of(ChatMessage.user("hello")));
		StepVerifier.withVirtualTime(() -> guard.call(request, r -> Flux.<ChatChunk>error(unavailable()))
				.contextWrite(Priority.P0.asContext()), () -> vts, Long.MAX_VALUE)
				.thenAwait(Duration.ofSeconds(21))
				.expectNextMatches(c -> "slow".equals(c.text()))
				.expectNextCount(2)
				.verifyComplete();
	}
}
