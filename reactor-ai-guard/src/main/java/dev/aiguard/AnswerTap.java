package dev.aiguard;

import java.util.ArrayList;
import java.util.List;

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
 * realtime answer for the response cache, keeps the transcript a continuation builds on, holds
 * an answer back until it passed validation, and then also feeds the output validation
 * ({@link AnswerCheck}), which may cut the stream. One per request, reused across attempts;
 * without any of these the attempt delivers straight to the subscriber, and validation that
 * neither holds the answer nor keeps its text is fed by the watch itself.
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
	/** The request's output validation, or {@code null} when the policy has no validator. */
	@Nullable
	final AnswerCheck check;
	boolean validating;
	/** The answer of the current attempt is held here, not delivered, until it passed validation. */
	@Nullable
	private ArrayList<T> held;
	boolean holding;
	/** The attempt whose chunks pass now; set before it is subscribed. */
	StallWatch<T> watch;

	AnswerTap(CoreSubscriber<? super T> actual, @Nullable ResponseCache<T> cache,
			@Nullable ContinuationSupport<T> continuation, @Nullable AnswerCheck check) {
		this.actual = actual;
		this.check = check;
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

	/** A held attempt starts: it delivers into a new, empty hold. */
	CoreSubscriber<T> hold() {
		held = new ArrayList<>();
		holding = true;
		return new Held<>(this);
	}

	/** @return the held answer, handed over once (the tap holds nothing afterwards) */
	List<T> takeHeld() {
		List<T> answer = held != null ? held : List.of();
		held = null;
		return answer;
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
		if (holding) {
			held.add(t);
		}
		else {
			actual.onNext(t);
		}
		if (validating && (f & ChunkInspector.CONTENT) != 0) {
			// a cut is thrown: the watch ends the attempt with what its subscriber throws, the chunk
			// counted as delivered
			check.afterContent(t);
		}
	}

	@Override
	public void onError(Throwable t) {
		actual.onError(t);
	}

	@Override
	public void onComplete() {
		actual.onComplete();
	}

	/**
	 * The subscriber of a held attempt: its own object, so that the demand hand-over can tell that
	 * what this attempt emitted never reached the subscriber ({@link AttemptLoop#consumedBy}).
	 */
	static final class Held<T> implements CoreSubscriber<T> {

		final AnswerTap<T> tap;

		Held(AnswerTap<T> tap) {
			this.tap = tap;
		}

		@Override
		public Context currentContext() {
			return tap.currentContext();
		}

		@Override
		public void onSubscribe(Subscription s) {
			// as the tap: the coordinator is the subscriber's subscription
		}

		@Override
		public void onNext(T t) {
			tap.onNext(t);
		}

		@Override
		public void onError(Throwable t) {
			tap.onError(t);
		}

		@Override
		public void onComplete() {
			tap.onComplete();
		}
	}
}
