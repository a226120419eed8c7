package dev.aiguard;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.RetryRules;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The policy's timer drives every time-based behaviour of a guarded request: one request waits in
 * a lane queue, is retried after a backoff, meets the policy's own breaker open, and is answered
 * by the fallback ladder after a step timeout — all under one virtual clock, with no real time
 * passing.
 */
class OneClockTest {

	static final ChatRequest REQUEST = ChatRequest.of("m", List.of(ChatMessage.user("hi")));

	@Test
	void aLaneWaitABackoffAnOpenBreakerAndAStepTimeoutAllRunOnThePolicyTimer() {
		List<GuardReport> reports = new CopyOnWriteArrayList<>();
		AtomicInteger upstreamCalls = new AtomicInteger();
		AtomicReference<GuardPolicy> built = new AtomicReference<>();
		long realStart = System.nanoTime();

		StepVerifier.withVirtualTime(() -> {
			VirtualTimeScheduler vts = VirtualTimeScheduler.get();
			// lanes are shared and owned by the caller: they keep their own timer, here the same clock
			PriorityLanes lanes = PriorityLanes.builder().name("one-clock")
					.lane(Priority.P0, LaneSpec.of(1)).lane(Priority.P1, LaneSpec.of(1).borrowFromLower(false)
							.maxQueueWait(Duration.ofSeconds(30)))
					.lane(Priority.P2, LaneSpec.of(1)).timer(vts).build();
			GuardPolicy policy = GuardPolicy.builder("one-clock").timer(vts).lanes(lanes)
					.breaker(BreakerConfig.custom().countWindow(2).minimumCalls(2).failureRateThreshold(0.5)
							.openWait(Duration.ofSeconds(20)).build())
					.retry(RetryRules.backoff(3, Duration.ofSeconds(1)).jitter(0))
					.fallback(FallbackChain.<ChatChunk>builder()
							.step(Fallback.lightweight(request -> Flux.<ChatChunk>never(), false))
							.step(Fallback.staticText("busy"))
							.timeout(Duration.ofSeconds(3))
							.build())
					.onReport(reports::add)
					.build();
			built.set(policy);
			AiGuard<ChatChunk> guard = AiGuard.of(policy);
			// a request that holds the only P1 permit for 2 s
			Flux.just(ChatChunk.token("held"), ChatChunk.done()).delayElements(Duration.ofSeconds(1), vts)
					.transform(AiGuard.of(GuardPolicy.builder("holder").timer(vts).lanes(lanes).build())).subscribe();
			return guard.call(REQUEST, request -> Flux.defer(() -> {
				upstreamCalls.incrementAndGet();
				return Flux.error(new ProviderServerException("test", 503, "server_error", null, "unavailable", null));
			}));
		})
				.expectSubscription()
				// 2 s in the lane queue, attempt 1 fails, 1 s backoff, attempt 2 fails and opens the
				// breaker, 2 s backoff, the breaker refuses attempt 3 at 5 s, the first step times out at 8 s
				.expectNoEvent(Duration.ofSeconds(7))
				.thenAwait(Duration.ofSeconds(1))
				.expectNextMatches(c -> c.text().equals("busy"))
				.thenConsumeWhile(c -> true)
				.verifyComplete();

		assertThat(upstreamCalls).as("two attempts; the open breaker refused the third").hasValue(2);
		GuardReport report = reports.stream().filter(r -> r.attempts().size() == 2).findFirst().orElseThrow();
		assertThat(report.source()).isEqualTo(Source.STATIC);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.duration()).as("measured on the virtual clock").isEqualTo(Duration.ofSeconds(8));
		assertThat(built.get().breaker().state()).as("still open: its wait runs on the virtual clock too")
				.isEqualTo(BreakerState.OPEN);
		assertThat(TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - realStart)).as("no real waiting").isLessThan(5);
	}
}
