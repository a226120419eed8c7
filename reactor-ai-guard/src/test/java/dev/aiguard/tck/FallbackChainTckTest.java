package dev.aiguard.tck;

import java.time.Duration;

import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.fallback.CacheKeys;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackRequest;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.provider.ProviderServerException;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.Test;
import reactor.core.publisher.Flux;

/**
 * Verifies {@link FallbackChain#answer(FallbackRequest)} on its own: a walk whose first step
 * passes (completes empty), whose second fails with an error, and whose third, another model,
 * answers with the {@code n} chunks, under a first-element timeout that never fires. The demand
 * the subscriber signals while the first steps run must reach the answering step.
 */
public class FallbackChainTckTest extends PublisherVerification<ChatChunk> {

	private static final FallbackRequest REQUEST = new FallbackRequest(Tck.REQUEST,
			new ProviderServerException("tck", 503, "overloaded_error", null, "the main model is down", null),
			FallbackTrigger.RETRIES_EXHAUSTED, Priority.P1, CacheKeys.of(Tck.REQUEST));

	public FallbackChainTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	/**
	 * For zero elements the walk fails (every step failed); the spec 1.9 checks asking for it only
	 * look at {@code onSubscribe}.
	 */
	@Override
	public Publisher<ChatChunk> createPublisher(long elements) {
		return FallbackChain.<ChatChunk>builder()
				.step(Fallback.lightweight(request -> Flux.empty(), false))
				.step(failing())
				.step(Fallback.model(request -> Tck.answer(elements)))
				.timeout(Duration.ofSeconds(30))
				.build()
				.answer(REQUEST);
	}

	@Override
	@Test
	public void optional_spec105_emptyStreamMustTerminateBySignallingOnComplete() throws Throwable {
		notVerified("a step that completes before its first chunk has failed, by contract: the ladder has no empty"
				+ " answer");
	}

	@Override
	public Publisher<ChatChunk> createFailedPublisher() {
		return FallbackChain.<ChatChunk>builder().step(Fallback.lightweight(request -> Flux.empty(), false))
				.step(failing())
				.build()
				.answer(REQUEST);
	}

	private static Fallback<ChatChunk> failing() {
		return Fallback.model(request -> Flux.error(new IllegalStateException("the fallback model is down too")));
	}
}
