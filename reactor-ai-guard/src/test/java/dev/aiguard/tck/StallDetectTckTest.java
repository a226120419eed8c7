package dev.aiguard.tck;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.stall.Stall;
import org.reactivestreams.Publisher;
import org.reactivestreams.tck.PublisherVerification;
import org.testng.annotations.Test;
import reactor.core.publisher.Flux;

/**
 * Verifies {@link Stall#detect} on its own over a synchronous upstream of {@link ChatChunk}s, with
 * all three deadlines armed (none fires) and the terminal marker required, as by default: the last
 * chunk carries a finish reason. The failing publisher's upstream errors at subscription.
 */
public class StallDetectTckTest extends PublisherVerification<ChatChunk> {

	public StallDetectTckTest() {
		super(Tck.environment(), Tck.GC_MILLIS);
	}

	/**
	 * An empty upstream fails with {@code IncompleteStreamException}; the spec 1.9 checks asking for
	 * it only look at {@code onSubscribe}.
	 */
	@Override
	public Publisher<ChatChunk> createPublisher(long elements) {
		return Tck.answer(elements).transform(Stall.detect(Tck.GENEROUS_DEADLINES, ChatChunk.inspector()));
	}

	@Override
	@Test
	public void optional_spec105_emptyStreamMustTerminateBySignallingOnComplete() throws Throwable {
		notVerified("an empty stream carries no finish reason: with the terminal marker required (the default) it"
				+ " fails with IncompleteStreamException, by design; StallDetectCustomChunkAsyncTckTest covers the"
				+ " empty stream with the requirement off");
	}

	@Override
	public Publisher<ChatChunk> createFailedPublisher() {
		return Flux.<ChatChunk>error(new IllegalStateException("upstream refused"))
				.transform(Stall.detect(Tck.GENEROUS_DEADLINES, ChatChunk.inspector()));
	}
}
