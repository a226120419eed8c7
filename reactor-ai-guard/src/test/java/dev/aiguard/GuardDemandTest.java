package dev.aiguard;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A subscriber with bounded demand across attempts: the next attempt is asked for exactly what the
 * subscriber requested and did not receive.
 */
class GuardDemandTest {

	@AfterEach
	void resetHooks() {
		Hooks.resetOnNextDropped();
	}

	@Test
	void aChunkDroppedAfterAStallIsNotChargedToTheNextAttempt() {
		// an upstream that keeps sending after it was cancelled
		TestPublisher<ChatChunk> first = TestPublisher.createNoncompliant(TestPublisher.Violation.DEFER_CANCELLATION);
		AtomicInteger attempts = new AtomicInteger();
		Hooks.onNextDropped(c -> {
		});

		StepVerifier.withVirtualTime(() -> {
			GuardPolicy policy = GuardPolicy.builder("demand").timer(VirtualTimeScheduler.get())
					.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1)))
					.retry(RetryRules.backoff(2, Duration.ofMillis(100)).jitter(0))
					.build();
			return Flux.defer(() -> attempts.getAndIncrement() == 0 ? first.flux()
							: Flux.just(ChatChunk.token("a"), ChatChunk.token("b"), ChatChunk.done()))
					.transform(AiGuard.of(policy));
		}, 0)
				.thenRequest(2)
				.then(() -> first.next(ChatChunk.keepAlive()))
				.expectNext(ChatChunk.keepAlive())
				// the first-token deadline passes; the stall is confirmed a millisecond later
				.thenAwait(Duration.ofMillis(1_001))
				// the attempt has ended: this chunk is dropped, and must not count as delivered
				.then(() -> first.next(ChatChunk.token("late")))
				.thenAwait(Duration.ofMillis(100))
				.expectNext(ChatChunk.token("a"))
				.thenRequest(10)
				.expectNext(ChatChunk.token("b"), ChatChunk.done())
				.expectComplete()
				.verify(Duration.ofSeconds(5));
	}
}
