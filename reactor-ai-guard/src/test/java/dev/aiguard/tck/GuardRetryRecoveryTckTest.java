package dev.aiguard.tck;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.AiGuard;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.GuardPolicy;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.AfterClass;
import reactor.core.publisher.Flux;

/**
 * Verifies the guard's transform form when every answer comes from a retry: the first attempt of
 * each subscription fails before its first token, and the second attempt, started from the
 * backoff timer on {@code Schedulers.parallel()}, delivers all {@code n} chunks. The subscriber's
 * demand, some of it signalled while no attempt runs, must be handed to the second attempt whole.
 * The policy holds a breaker that a 50% failure rate cannot trip, lanes, an unlimited retry
 * budget and a fallback ladder that must never answer.
 */
public class GuardRetryRecoveryTckTest extends PublisherVerification<ChatChunk> {

	private final PriorityLanes lanes = LanesTck.roomy("tck-retry");

	private final AiGuard<ChatChunk> guard = AiGuard.of(GuardPolicy.builder("tck-retry")
			.stall(Tck.GENEROUS_DEADLINES.requireTerminal(false))
			.breaker(Tck.patientBreaker("tck-retry"))
			.lanes(lanes)
			.retry(RetryRules.backoff(2, Duration.ofMillis(1)).jitter(0))
			.retryBudget(RetryBudget.unlimited())
			.fallback(FallbackChain.<ChatChunk>builder()
					.step(Fallback.staticText("The assistant is busy, please try again shortly."))
					.build())
			.build(), ChatChunk.inspector());

	public GuardRetryRecoveryTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	@AfterClass(alwaysRun = true)
	public void disposeLanes() {
		lanes.dispose();
	}

	@Override
	public Publisher<ChatChunk> createPublisher(long elements) {
		Flux<ChatChunk> firstFailsThenAnswers = Flux.deferContextual(context -> {
			int attempt = context.get(AttemptCounter.class).incrementAndGet();
			return attempt == 1 ? Flux.error(new IOException("connection reset before the first token"))
					: Tck.answer(elements);
		});
		// one counter per subscription of the guarded stream, shared by that subscription's attempts
		return firstFailsThenAnswers.transform(guard).contextWrite(context -> context.put(AttemptCounter.class,
				new AttemptCounter()));
	}

	@Override
	public Publisher<ChatChunk> createFailedPublisher() {
		// a 400 is never retried, and CLIENT_ERROR does not enter the default ladder
		return Flux.<ChatChunk>error(new ProviderClientException("tck", 400, "invalid_request_error", null,
				"refused by the TCK's failing upstream")).transform(guard);
	}

	/** Attempts made for one subscription. */
	static final class AttemptCounter extends AtomicInteger {
	}
}
