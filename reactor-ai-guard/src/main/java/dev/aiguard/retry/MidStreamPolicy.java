package dev.aiguard.retry;

import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.chat.ChatChunk;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;
import dev.aiguard.retry.splice.OverlapSplicer;

/**
 * What the guard does when a stream fails after its first token reached the subscriber. A plain
 * resubscribe is never an option then: the user would see the same text twice.
 *
 * <ul>
 * <li>{@link #fail()} (default): the subscriber gets a {@link PartialStreamException} carrying
 * the cause and the number of tokens delivered.</li>
 * <li>{@link #notice(String)}: one notice chunk is emitted and the stream completes normally;
 * the attempt is still recorded as a failure.</li>
 * <li>{@link #continueWith(ContinuationStrategy, int)} (call form only): a continuation request
 * (original messages plus the partial answer) is sent, and its text is spliced onto what was
 * delivered with an {@link OverlapSplicer}, at most {@code maxContinuations} times. Tool-call
 * streams are never continued: they fail as with {@link #fail()}.</li>
 * </ul>
 *
 * <pre>{@code
 * MidStreamPolicy<ChatChunk> fail     = MidStreamPolicy.fail();
 * MidStreamPolicy<ChatChunk> notice   = MidStreamPolicy.notice("\n\n[The answer was interrupted.]");
 * MidStreamPolicy<ChatChunk> resume   = MidStreamPolicy.continueWith(
 *         ContinuationStrategy.byModel(m -> m.startsWith("claude") ? ContinuationStrategy.ASSISTANT_PREFILL
 *                                                                  : ContinuationStrategy.USER_CONTINUE),
 *         2);
 * }</pre>
 *
 * @param <T> the chunk type
 */
public final class MidStreamPolicy<T> {

	/** The three behaviours. */
	public enum Mode {
		/** Fail with {@link PartialStreamException}. */
		FAIL,
		/** Emit a notice chunk, then complete. */
		NOTICE,
		/** Send a continuation request and splice its answer. */
		CONTINUE
	}

	private static final MidStreamPolicy<Object> FAIL = new MidStreamPolicy<>(Mode.FAIL, null, null, 0, null);

	private final Mode mode;
	@Nullable
	private final Function<? super Throwable, ? extends T> notice;
	@Nullable
	private final ContinuationStrategy strategy;
	private final int maxContinuations;
	@Nullable
	private final ContinuationSupport<T> support;
	private final Class<?> chunkType;

	private MidStreamPolicy(Mode mode, @Nullable Function<? super Throwable, ? extends T> notice,
			@Nullable ContinuationStrategy strategy, int maxContinuations, @Nullable ContinuationSupport<T> support) {
		this.mode = mode;
		this.notice = notice;
		this.strategy = strategy;
		this.maxContinuations = maxContinuations;
		this.support = support;
		this.chunkType = support != null ? support.chunkType() : Object.class;
	}

	private MidStreamPolicy(MidStreamPolicy<T> typeless, Class<?> chunkType) {
		this.mode = typeless.mode;
		this.notice = typeless.notice;
		this.strategy = typeless.strategy;
		this.maxContinuations = typeless.maxContinuations;
		this.support = typeless.support;
		this.chunkType = chunkType;
	}

	/** @return the default: fail with {@link PartialStreamException} */
	@SuppressWarnings("unchecked")
	public static <T> MidStreamPolicy<T> fail() {
		return (MidStreamPolicy<T>) FAIL;
	}

	/**
	 * @param noticeText the text of the notice chunk, e.g. {@code "\n\n[answer interrupted]"}
	 * @return emit {@code ChatChunk.token(noticeText)} and complete
	 * @throws IllegalArgumentException when {@code null} or empty
	 */
	public static MidStreamPolicy<ChatChunk> notice(String noticeText) {
		if (noticeText == null || noticeText.isEmpty()) {
			throw new IllegalArgumentException("noticeText must not be empty, was "
					+ (noticeText == null ? "null" : "\"\""));
		}
		ChatChunk chunk = ChatChunk.token(noticeText);
		return new MidStreamPolicy<>(new MidStreamPolicy<ChatChunk>(Mode.NOTICE, cause -> chunk, null, 0, null),
				ChatChunk.class);
	}

	/**
	 * @param noticeFactory builds the notice chunk from the failure; if it throws or returns
	 * {@code null}, the guard fails the stream as {@link #fail()} does
	 * @return emit the notice and complete
	 * @throws IllegalArgumentException when {@code null}
	 */
	public static <T> MidStreamPolicy<T> notice(Function<? super Throwable, ? extends T> noticeFactory) {
		if (noticeFactory == null) {
			throw new IllegalArgumentException("noticeFactory must not be null, was null");
		}
		return new MidStreamPolicy<>(Mode.NOTICE, noticeFactory, null, 0, null);
	}

	/**
	 * @param strategy how the continuation request is built
	 * @param maxContinuations continuation requests allowed per answer, 1 to 10
	 * @return continue the answer with a new request (call form only)
	 * @throws IllegalArgumentException naming the bad argument
	 */
	public static MidStreamPolicy<ChatChunk> continueWith(ContinuationStrategy strategy, int maxContinuations) {
		return continueWith(strategy, maxContinuations, ContinuationSupport.chatChunks());
	}

	/**
	 * As {@link #continueWith(ContinuationStrategy, int)}, for answers of any chunk type.
	 *
	 * @param support records what was delivered and splices the continuation
	 * @throws IllegalArgumentException naming the bad argument
	 */
	public static <T> MidStreamPolicy<T> continueWith(ContinuationStrategy strategy, int maxContinuations,
			ContinuationSupport<T> support) {
		if (strategy == null) {
			throw new IllegalArgumentException("strategy must not be null, was null");
		}
		if (maxContinuations < 1 || maxContinuations > 10) {
			throw new IllegalArgumentException("maxContinuations must be between 1 and 10, was " + maxContinuations);
		}
		if (support == null) {
			throw new IllegalArgumentException("support must not be null, was null");
		}
		return new MidStreamPolicy<>(Mode.CONTINUE, null, strategy, maxContinuations, support);
	}

	public Mode mode() {
		return mode;
	}

	/** @return the strategy of a {@link Mode#CONTINUE} policy, else {@code null} */
	@Nullable
	public ContinuationStrategy continuation() {
		return strategy;
	}

	/**
	 * @return the chunk type the policy produces or reads when known ({@link ChatChunk} for
	 *         {@link #notice(String)} and the chat continuation), else {@code Object.class}
	 */
	public Class<?> chunkType() {
		return chunkType;
	}

	/** @return how a {@link Mode#CONTINUE} policy records and splices answers, else {@code null} */
	@Nullable
	public ContinuationSupport<T> support() {
		return support;
	}

	/** @return continuation requests allowed per answer ({@code 0} unless {@link Mode#CONTINUE}) */
	public int maxContinuations() {
		return maxContinuations;
	}

	/**
	 * The notice chunk for a failure, isolated: a throwing factory yields {@code null} and its
	 * exception goes to {@code Hooks.onErrorDropped}.
	 *
	 * @return the chunk to emit before completing, or {@code null} when there is none (fail instead)
	 */
	@Nullable
	public T noticeFor(Throwable cause) {
		if (notice == null) {
			return null;
		}
		try {
			return notice.apply(cause);
		}
		catch (Throwable factoryFailure) {
			Operators.onErrorDropped(factoryFailure, Context.empty());
			return null;
		}
	}

	/** @return the error the subscriber receives under {@link Mode#FAIL} */
	public PartialStreamException failure(Throwable cause, long tokensDelivered) {
		Objects.requireNonNull(cause, "cause");
		return cause instanceof PartialStreamException ? (PartialStreamException) cause
				: new PartialStreamException(cause, tokensDelivered);
	}

	@Override
	public String toString() {
		switch (mode) {
			case CONTINUE:
				return "MidStreamPolicy{CONTINUE, strategy=" + strategy + ", maxContinuations=" + maxContinuations + '}';
			case NOTICE:
				return "MidStreamPolicy{NOTICE}";
			default:
				return "MidStreamPolicy{FAIL}";
		}
	}
}
