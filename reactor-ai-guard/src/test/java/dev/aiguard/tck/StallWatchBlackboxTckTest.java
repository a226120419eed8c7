package dev.aiguard.tck;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.stall.watch.StallWatch;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import org.reactivestreams.tck.SubscriberBlackboxVerification;
import reactor.core.CoreSubscriber;
import reactor.core.scheduler.Schedulers;

/**
 * Verifies {@link StallWatch} as a plain subscriber, with nothing in between: the TCK's publisher
 * subscribes the watch itself. Demand is what its holder asks for through the watch's own
 * {@link Subscription} side; asked before the upstream arrives, it is kept and passed on at
 * {@code onSubscribe}.
 */
public class StallWatchBlackboxTckTest extends SubscriberBlackboxVerification<ChatChunk> {

	public StallWatchBlackboxTckTest() {
		super(Tck.environment());
	}

	@Override
	public Subscriber<ChatChunk> createSubscriber() {
		return StallWatch.forAttempt(new Discard(), Tck.GENEROUS_DEADLINES, Schedulers.parallel(),
				ChatChunk.inspector(), (ended, end, error) -> {
				});
	}

	@Override
	public void triggerRequest(Subscriber<? super ChatChunk> subscriber) {
		((StallWatch<?>) subscriber).request(1);
	}

	@Override
	public ChatChunk createElement(int element) {
		return ChatChunk.token("t" + element + " ");
	}

	/** Where the watch's chunks go. */
	static final class Discard implements CoreSubscriber<ChatChunk> {

		@Override
		public void onSubscribe(Subscription s) {
		}

		@Override
		public void onNext(ChatChunk chunk) {
		}

		@Override
		public void onError(Throwable t) {
		}

		@Override
		public void onComplete() {
		}
	}
}
