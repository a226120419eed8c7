package dev.aiguard;

import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.Objects;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.retry.ContinuationSupport;
import dev.aiguard.stage.AnswerRecording;
import dev.aiguard.stall.watch.StallWatch;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.util.context.Context;

/**
 * Sits between an attempt and the subscriber when something must see the chunks: it feeds a
 * realtime answer to the stage that keeps it (the response cache's recording), keeps the
 * transcript a continuation builds on, holds an answer back until it passed validation, and holds
 * an answer's leading whitespace-only chunks until its first visible character. One per request,
 * reused across attempts; without any of these the attempt delivers straight to the subscriber. The
 * output validation (the validation stage) is never fed here: the attempt's watch feeds it, after
 * the chunk went through the tap.
 *
 * <h2>Leading whitespace</h2>
 * While an attempt has said nothing visible, a content chunk whose text is only whitespace (and
 * that carries no tool call) is held, not delivered; chunks without content pass. The first
 * visible chunk releases the held ones, in order, before itself. A held chunk serves none of the
 * subscriber's demand, so when it used the last the upstream was asked for, one more is asked
 * ("borrowed", through the request's demand hand-over, which the watch's deadlines then see).
 * At the release the subscriber is owed the held chunks and the visible one but asked only for
 * that many minus the borrowed ones: the texts of the last {@code borrowed} held chunks go in
 * front of the visible chunk's text, one chunk carrying them, so the subscriber receives exactly
 * what it asked for and the upstream's demand and the subscriber's agree again. If the attempt
 * ends while chunks are held, the coordinator drops them (giving back the demand they took) or,
 * when the answer stands anyway, releases them. A tap that does nothing else steps out of the
 * watch's path with the first visible chunk ({@link StallWatch#passOnTo}), so the rest of the
 * answer costs nothing here.
 */
final class AnswerTap<T> implements CoreSubscriber<T> {

	final CoreSubscriber<? super T> actual;
	/** The stage run that keeps the realtime answer, {@code null} when none does. */
	@Nullable
	final AnswerRecording recording;
	private final ContinuationSupport.@Nullable Transcript<T> transcript;
	@Nullable
	private final Class<T> transcriptType;
	/** A chunk the continuation support cannot read reached the user: the answer cannot be continued. */
	private boolean unreadable;
	/** The current attempt's chunks go to {@link #recording}. */
	boolean recordingOn;
	boolean transcribing;
	/** The answer of the current attempt is held here, not delivered, until it passed validation. */
	@Nullable
	private ArrayList<T> held;
	boolean holding;
	/** The attempt whose chunks pass now; set before it is subscribed. */
	@SuppressWarnings("NullAway.Init")
	StallWatch<T> watch;

	/** Adds to the subscriber's demand as the request's demand hand-over counts it. */
	private final LongConsumer demand;
	/** The current attempt has said nothing visible yet, and its leading whitespace is held. */
	private boolean leading;
	/** The tap has nothing else to do in this attempt: it steps out of the path once the leading chunks are through. */
	private boolean leadingOnly;
	/** The whitespace-only chunks held while {@link #leading}; allocated with the first one. */
	@Nullable
	private ArrayList<ChatChunk> blanks;
	/** How many chunks {@link #blanks} holds; a plain count, which a cancel may read without touching the list. */
	private int blankCount;
	/** Of the held chunks, how many the upstream was asked for on top of the subscriber's demand. */
	private int borrowed;

	AnswerTap(CoreSubscriber<? super T> actual, @Nullable AnswerRecording recording,
			@Nullable ContinuationSupport<T> continuation, LongConsumer demand) {
		this.actual = actual;
		this.demand = demand;
		this.recording = recording;
		this.transcript = continuation != null ? continuation.transcript() : null;
		this.transcriptType = continuation != null ? continuation.chunkType() : null;
	}

	/** @return whether what the user saw so far can be continued by a new request */
	boolean continuable() {
		return transcript != null && !unreadable && transcript.continuable();
	}

	/** A retry starts: what a failed attempt sent before its first token is not part of the answer. */
	void restartRecording() {
		if (recording != null) {
			recording.restart();
		}
	}

	void discardRecording() {
		if (recording != null) {
			recording.discard();
		}
	}

	/** A held attempt starts: it delivers into a new, empty hold. */
	CoreSubscriber<T> hold() {
		held = new ArrayList<>();
		holding = true;
		return new Held<>(this);
	}

	/**
	 * Whether the next attempt holds its leading whitespace-only chunks.
	 *
	 * @param only the tap has nothing else to do in that attempt (the watch feeds the validation)
	 */
	void holdLeadingWhitespace(boolean hold, boolean only) {
		leading = hold;
		leadingOnly = only;
		blanks = null;
		blankCount = 0;
		borrowed = 0;
	}

	/** @return whether the ended attempt's chunks are held still: none of its content reached the subscriber */
	boolean holdsBlanks() {
		return leading && blankCount > 0;
	}

	/**
	 * The attempt failed while whitespace was held: it is dropped, never delivered, and the
	 * subscriber's demand it took is given back for the next attempt. Not for a cancel: a chunk may
	 * still be on its way into the list then, and the request ends anyway.
	 */
	void dropBlanks() {
		int giveBack = blankCount - borrowed;
		leading = false;
		blanks = null;
		blankCount = 0;
		borrowed = 0;
		if (giveBack > 0) {
			demand.accept(giveBack);
		}
	}

	/**
	 * The attempt completed while whitespace was held and its answer stands (it passed its
	 * validators, or the output cap ended it): the held chunks are handed over once, to be
	 * delivered with the subscriber's demand, which gets back what they took.
	 */
	@SuppressWarnings("unchecked")
	List<T> takeBlanks() {
		List<T> held = blanks != null ? (List<T>) (List<?>) blanks : List.of();
		dropBlanks();
		return held;
	}

	/** @return the held answer, handed over once (the tap holds nothing afterwards) */
	List<T> takeHeld() {
		List<T> answer = held != null ? held : List.of();
		held = null;
		return answer;
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
		if (leading && (f & ChunkInspector.CONTENT) != 0) {
			ChatChunk c = (ChatChunk) t;
			if (!c.hasToolCalls() && c.text().isBlank()) {
				holdBlank(c);
			}
			else {
				release(c, f);
			}
		}
		else {
			pass(t, f);
		}
	}

	private void holdBlank(ChatChunk c) {
		ArrayList<ChatChunk> b = blanks;
		if (b == null) {
			b = new ArrayList<>(4);
			blanks = b;
		}
		b.add(c);
		blankCount++;
		// the held chunk served none of the subscriber's demand: if it used the last of what the
		// upstream was asked for, the upstream is asked for one more, or the answer would wait forever
		long r = watch.requested();
		if (r != Long.MAX_VALUE && r - watch.emitted() <= 0L) {
			borrowed++;
			demand.accept(1L);
		}
	}

	/** The first visible chunk: the held whitespace goes first, the borrowed part of it in front of this chunk's text. */
	@SuppressWarnings("unchecked")
	private void release(ChatChunk visible, int f) {
		ArrayList<ChatChunk> b = blanks;
		int lent = borrowed;
		// cleared first: whatever the subscriber throws, the attempt holds nothing afterwards
		leading = false;
		blanks = null;
		blankCount = 0;
		borrowed = 0;
		ChatChunk last = visible;
		if (b != null) {
			int alone = b.size() - lent;
			for (int i = 0; i < alone; i++) {
				pass((T) b.get(i), f);
			}
			if (lent > 0) {
				StringBuilder text = new StringBuilder();
				for (int i = alone; i < b.size(); i++) {
					text.append(b.get(i).text());
				}
				last = new ChatChunk(text.append(visible.text()).toString(), visible.role(), visible.finishReason(),
						visible.usage(), visible.toolCalls(), visible.heartbeat(), visible.terminal());
			}
		}
		pass((T) last, f);
		if (leadingOnly) {
			// nothing else to do here: the rest of the answer goes straight to the subscriber
			watch.passOnTo(actual);
		}
	}

	/** Records, transcribes, holds or delivers one chunk; {@code f} says whether it is content. */
	private void pass(T t, int f) {
		AnswerRecording keeper = recording;
		if (recordingOn && keeper != null
				&& (f & (ChunkInspector.CONTENT | ChunkInspector.HEARTBEAT)) != ChunkInspector.HEARTBEAT) {
			keeper.record(t);
		}
		Class<T> type = transcriptType;
		if (transcribing && transcript != null && type != null) {
			if (type.isInstance(t)) {
				transcript.record(t);
			}
			else {
				unreadable = true;
			}
		}
		if (holding) {
			Objects.requireNonNull(held, "held").add(t);
		}
		else {
			actual.onNext(t);
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
	 * what this attempt emitted never reached the subscriber ({@link GuardedStream#consumedBy}).
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
