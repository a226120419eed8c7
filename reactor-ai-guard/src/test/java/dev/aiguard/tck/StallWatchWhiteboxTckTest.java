package dev.aiguard.tck;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.stall.watch.StallWatch;
import org.reactivestreams.Subscriber;
import org.reactivestreams.Subscription;
import org.reactivestreams.tck.SubscriberWhiteboxVerification;
import org.reactivestreams.tck.TestEnvironment;
import reactor.core.CoreSubscriber;
import reactor.core.Scannable;
import reactor.core.scheduler.Schedulers;

/**
 * Verifies {@link StallWatch}, the library's one public subscriber, as the guard uses it
 * ({@link StallWatch#forAttempt}): chunks go to the watch's subscriber, the end of the attempt to
 * its {@link StallWatch.Terminal}, and demand and cancellation come from whoever holds the watch
 * as a {@link Subscription}. The probe is told about each of those; the only code between the
 * TCK and the watch is a pass-through that reports an {@code onSubscribe} the watch accepted
 * (a coordinated watch does not pass {@code onSubscribe} on, so nothing else could see it).
 */
public class StallWatchWhiteboxTckTest extends SubscriberWhiteboxVerification<ChatChunk> {

	private final TestEnvironment env;

	public StallWatchWhiteboxTckTest() {
		this(Tck.environment());
	}

	private StallWatchWhiteboxTckTest(TestEnvironment env) {
		super(env);
		this.env = env;
	}

	@Override
	public Subscriber<ChatChunk> createSubscriber(WhiteboxSubscriberProbe<ChatChunk> probe) {
		CoreSubscriber<ChatChunk> chunksToProbe = new CoreSubscriber<>() {
			@Override
			public void onSubscribe(Subscription s) {
				// a coordinated watch keeps its subscription to itself
			}

			@Override
			public void onNext(ChatChunk chunk) {
				probe.registerOnNext(chunk);
			}

			@Override
			public void onError(Throwable t) {
				// the end of an attempt goes to the Terminal
			}

			@Override
			public void onComplete() {
				// the end of an attempt goes to the Terminal
			}
		};
		StallWatch<ChatChunk> watch = StallWatch.forAttempt(chunksToProbe, Tck.GENEROUS_DEADLINES.requireTerminal(false),
				Schedulers.parallel(), ChatChunk.inspector(), (ended, end, error) -> {
					switch (end) {
						case COMPLETED:
							probe.registerOnComplete();
							break;
						case CANCELLED:
							break;
						default:
							if (error == null) {
								// the probe would throw on null and so hide that the watch accepted onError(null)
								env.flop("the watch ended with " + end + " and no cause");
							}
							else {
								probe.registerOnError(error);
							}
					}
				});
		return new Subscriber<ChatChunk>() {
			@Override
			public void onSubscribe(Subscription s) {
				watch.onSubscribe(s);
				if (watch.scanUnsafe(Scannable.Attr.PARENT) == s) {
					probe.registerOnSubscribe(new SubscriberPuppet() {
						@Override
						public void triggerRequest(long elements) {
							watch.request(elements);
						}

						@Override
						public void signalCancel() {
							watch.cancel();
						}
					});
				}
			}

			@Override
			public void onNext(ChatChunk chunk) {
				watch.onNext(chunk);
			}

			@Override
			public void onError(Throwable t) {
				watch.onError(t);
			}

			@Override
			public void onComplete() {
				watch.onComplete();
			}
		};
	}

	@Override
	public ChatChunk createElement(int element) {
		return ChatChunk.token("t" + element + " ");
	}
}
