package dev.aiguard.retry;

/**
 * A {@link ContinuationStrategy} declined to build a continuation request: the partial answer
 * contains tool calls (a half-streamed tool call cannot be resumed), or there is nothing to
 * continue. The guard then falls back to failing the stream as {@link MidStreamPolicy#fail()} does.
 *
 * <pre>{@code
 * try {
 *     next = strategy.continuation(original, delivered, sawToolCalls);
 * } catch (ContinuationRefusedException refused) {
 *     subscriber.onError(new PartialStreamException(failure, tokens));
 * }
 * }</pre>
 */
public class ContinuationRefusedException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	public ContinuationRefusedException(String message) {
		super(message, null, false, false);
	}
}
