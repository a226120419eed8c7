package dev.aiguard.validation;

/**
 * The answer degenerated while it streamed: the {@link RepetitionDetector} saw the same run of
 * chunks repeat past its bound (a model looping until its token limit) and cut the stream. Never
 * retryable: the same request tends to loop the same way.
 *
 * <pre>{@code
 * answer.doOnError(PartialStreamException.class, e -> {
 *     if (e.getCause() instanceof DegenerateOutputException loop) {
 *         log.warn("answer looped with period {} after {} chunks", loop.period(), loop.span());
 *     }
 * });
 * }</pre>
 */
public final class DegenerateOutputException extends InvalidOutputException {

	private static final long serialVersionUID = 1L;

	private final int period;
	private final int span;

	/**
	 * @param validator the detector's name
	 * @param period how many chunks the repeated unit has
	 * @param span how many chunks at the end of the answer repeat that unit
	 */
	public DegenerateOutputException(String validator, int period, int span) {
		super(validator, "the last " + span + " chunks repeat a unit of " + period + " chunk(s)", false);
		this.period = period;
		this.span = span;
	}

	/** @return how many chunks the repeated unit has */
	public int period() {
		return period;
	}

	/** @return how many chunks at the end of the answer repeat the unit */
	public int span() {
		return span;
	}
}
