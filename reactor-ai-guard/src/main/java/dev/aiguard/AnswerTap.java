package dev.aiguard;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.fallback.recording.AnswerRecorder;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.stall.watch.StallWatch;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.util.context.Context;

/**
 * Sits between an attempt and the subscriber when something must see the chunks: it records a
 * realtime answer for the response cache, and keeps the transcript a continuation builds on. One
 * per request, reused across attempts; without either the attempt delivers straight to the
 * subscriber.
 */
final class AnswerTap<T> implements CoreSubscriber<T> {

	final CoreSubscriber<? super T> actual;
	@Nullable
	private final ResponseCache<T> cache;
	@Nullable
	private AnswerRecorder<T> recorder;
	private final ContinuationSupport.@Nullable Transcript<T> transcript;
	@Nullable
	private final Class<T> transcriptType;
	/** A chunk the continuation support cannot read reached the user: the answer cannot be continued. */
	private boolean unreadable;
	boolean recording;
	boolean transcribing;
	/** The attempt whose chunks pass now; set before it is subscribed. */
	StallWatch<T> watch;

	AnswerTap(CoreSubscriber<? super T> actual, @Nullable ResponseCache<T> cache,
			@Nullable ContinuationSupport<T> continuation) {
		this.actual = actual;
		this.cache = cache;
		this.recorder = cache != null ? AnswerRecorder.forCache(cache) : null;
		this.transcript = continuation != null ? continuation.transcript() : null;
		this.transcriptType = continuation != null ? continuation.chunkType() : null;
	}

	/** @return whether what the user saw so far can be continued by a new request */
	boolean continuable() {
		return transcript != null && !unreadable && transcript.continuable();
	}

	/** A retry starts: what a failed attempt sent before its first token is not part of the answer. */
	void restartRecording() {
		AnswerRecorder<T> r = recorder;
		if (cache != null && r != null && (r.size() > 0 || r.overflowed())) {
			recorder = AnswerRecorder.forCache(cache);
		}
	}

	void discardRecording() {
		if (recorder != null) {
			recorder.discard();
		}
	}

	@Nullable
	AnswerRecorder<T> recorder() {
		return recorder;
	}

	ContinuationSupport.@Nullable Transcript<T> transcript() {
		return transcript;
	}

	@Override
	public Context currentContext() {
		return actual.currentContext();
	}

	@Override
	public void onSubscribe(Subscription s) {
		// attempts never pass their subscription on: the coordinator is the subscriber's subscription
	}

	@Override
	public void onNext(T t) {
		// the watch already asked the inspector: reuse its answer rather than call user code while
		// the chunk is marked as being delivered
		int f = watch.chunkFlags();
		if (recording && recorder != null
				&& (f & (ChunkInspector.CONTENT | ChunkInspector.HEARTBEAT)) != ChunkInspector.HEARTBEAT) {
			recorder.record(t);
		}
		if (transcribing && transcript != null) {
			if (transcriptType.isInstance(t)) {
				transcript.record(t);
			}
			else {
				unreadable = true;
			}
		}
		actual.onNext(t);
	}

	@Override
	public void onError(Throwable t) {
		actual.onError(t);
	}

	@Override
	public void onComplete() {
		actual.onComplete();
	}
}
