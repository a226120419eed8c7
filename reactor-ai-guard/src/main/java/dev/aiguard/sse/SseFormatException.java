package dev.aiguard.sse;

/**
 * The byte stream is not acceptable server-sent events: a line or an event exceeded the
 * configured limit, or the bytes are not valid UTF-8. The decoder cancels its upstream and fails
 * with this instead of growing memory or emitting garbage.
 *
 * <pre>{@code
 * SseDecoder.builder().maxLineBytes(64 * 1024).build()
 *     .decode(bytes)
 *     .onErrorResume(SseFormatException.class, e -> Flux.empty());
 * }</pre>
 */
public class SseFormatException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final long offset;

	/**
	 * @param message what is wrong
	 * @param offset the byte offset in the stream where the problem was detected, or -1
	 */
	public SseFormatException(String message, long offset) {
		super(offset >= 0 ? message + " (at byte " + offset + ")" : message, null, false, false);
		this.offset = offset;
	}

	/** @return the byte offset in the stream where the problem was detected, or -1 when unknown */
	public long offset() {
		return offset;
	}
}
