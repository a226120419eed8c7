package dev.aiguard.tck;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.stall.Stall;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;

/**
 * Verifies {@link Stall#detect} over an asynchronous upstream ({@code publishOn} on
 * {@code Schedulers.parallel()}) of a chunk type of the user's own, described by
 * {@link ChunkInspector#of}: every {@code Long} is content, the terminal marker is not required,
 * so the empty stream completes too.
 */
public class StallDetectCustomChunkAsyncTckTest extends PublisherVerification<Long> {

	private static final ChunkInspector<Long> EVERY_LONG_IS_CONTENT = ChunkInspector.of(n -> true, n -> false,
			n -> false, n -> null);

	public StallDetectCustomChunkAsyncTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	@Override
	public Publisher<Long> createPublisher(long elements) {
		return longs(elements).publishOn(Schedulers.parallel())
				.transform(Stall.detect(Tck.GENEROUS_DEADLINES.requireTerminal(false), EVERY_LONG_IS_CONTENT));
	}

	@Override
	public Publisher<Long> createFailedPublisher() {
		return Flux.<Long>error(new IllegalStateException("upstream refused"))
				.publishOn(Schedulers.parallel())
				.transform(Stall.detect(Tck.GENEROUS_DEADLINES.requireTerminal(false), EVERY_LONG_IS_CONTENT));
	}

	private static Flux<Long> longs(long n) {
		return Flux.generate(() -> 0L, (next, sink) -> {
			if (next < n) {
				sink.next(next);
			}
			else {
				sink.complete();
			}
			return next + 1;
		});
	}
}
