package dev.aiguard.tck;

import java.time.Duration;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.provider.ProviderServerException;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.Test;
import reactor.core.publisher.Flux;

/**
 * Verifies the guard's call form when every answer comes from the fallback ladder: the breaker is
 * forced open, the ladder's first step (another model) fails with a 503, and its second step, a
 * lightweight answer declared blocking and therefore subscribed on {@code boundedElastic}, delivers
 * the {@code n} chunks. The failing publisher's ladder has only the failing model.
 */
public class GuardFallbackAnswerTckTest extends PublisherVerification<ChatChunk> {

	private final CircuitBreaker openBreaker = CircuitBreaker.builder("tck-open").build();

	public GuardFallbackAnswerTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
		openBreaker.transitionToForcedOpen();
	}

	/**
	 * For zero elements the ladder fails (every step failed); the spec 1.9 checks asking for it only
	 * look at {@code onSubscribe}.
	 */
	@Override
	public Publisher<ChatChunk> createPublisher(long elements) {
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder()
				.step(failingModel())
				.step(Fallback.lightweight(request -> Tck.answer(elements)))
				.timeout(Duration.ofSeconds(30))
				.build();
		return guardedBy(ladder);
	}

	@Override
	@Test
	public void optional_spec105_emptyStreamMustTerminateBySignallingOnComplete() throws Throwable {
		notVerified("a fallback step that completes before its first chunk has failed, by contract: the ladder has"
				+ " no empty answer");
	}

	@Override
	public Publisher<ChatChunk> createFailedPublisher() {
		return guardedBy(FallbackChain.<ChatChunk>builder().step(failingModel()).build());
	}

	private static Fallback<ChatChunk> failingModel() {
		return Fallback.model(request -> Flux.error(new ProviderServerException("tck-small", 503, "overloaded_error",
				null, "the fallback model is down too", null)));
	}

	private Flux<ChatChunk> guardedBy(FallbackChain<ChatChunk> ladder) {
		GuardPolicy policy = GuardPolicy.builder("tck-fallback")
				.stall(Tck.GENEROUS_DEADLINES)
				.breaker(openBreaker)
				.fallback(ladder)
				.build();
		return AiGuard.of(policy).call(Tck.REQUEST, request -> Tck.answer(3));
	}
}
