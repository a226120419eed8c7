package dev.aiguard.sse;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

/**
 * The byte-level server-sent-events state machine (WHATWG "event stream interpretation"). Not
 * thread-safe: one instance per stream, fed serially. Free of Reactor types so it can be tested
 * and benchmarked alone.
 *
 * <p>Bytes are scanned in place; only a line that spans chunks is copied (into {@link #line}),
 * and {@code data} values are copied once into {@link #data}. A string is made when a field value
 * is complete, so a multi-byte character split across chunks is never decoded in halves.
 */
final class SseParser {

	private static final int INITIAL_LINE = 256;
	private static final int INITIAL_DATA = 1024;
	// buffers that grew past this are dropped after use so one huge event does not pin memory
	private static final int RETAINED_MAX = 64 * 1024;

	private final int maxLineBytes;
	private final int maxEventBytes;
	private final Consumer<? super SseEvent> sink;

	private byte[] line = new byte[INITIAL_LINE];
	private int lineLength;
	private long lineStart;

	private byte[] data = new byte[INITIAL_DATA];
	private int dataLength;
	private boolean dataSeen;

	private @Nullable String type;
	private byte @Nullable [] lastTypeBytes;
	private @Nullable String lastType;
	private @Nullable String lastId;
	private @Nullable Long retry;

	private boolean skipLineFeed;
	private boolean firstLineSeen;
	private long position;

	private byte @Nullable [] scratch;
	private @Nullable CharsetDecoder strictUtf8;

	SseParser(int maxLineBytes, int maxEventBytes, Consumer<? super SseEvent> sink) {
		this.maxLineBytes = maxLineBytes;
		this.maxEventBytes = maxEventBytes;
		this.sink = sink;
	}

	/** Feeds the remaining bytes of {@code buffer}, leaving its position untouched. */
	void feed(ByteBuffer buffer) {
		int n = buffer.remaining();
		if (buffer.hasArray()) {
			feed(buffer.array(), buffer.arrayOffset() + buffer.position(), n);
		}
		else {
			byte[] copy = scratch(n);
			buffer.get(buffer.position(), copy, 0, n);
			feed(copy, 0, n);
		}
	}

	/** @return a reusable array of at least {@code n} bytes, for sources that must be copied out. */
	byte[] scratch(int n) {
		byte[] s = scratch;
		if (s == null || s.length < n) {
			s = new byte[Math.max(n, 8192)];
			scratch = s;
		}
		return s;
	}

	/** Feeds {@code length} bytes of {@code bytes} from {@code offset}. */
	void feed(byte[] bytes, int offset, int length) {
		int p = offset;
		final int end = offset + length;
		final long base = position - offset; // stream offset of bytes[0]
		position += length;
		if (skipLineFeed && p < end) {
			skipLineFeed = false;
			if (bytes[p] == '\n') {
				p++;
			}
		}
		while (p < end) {
			int i = p;
			byte c = 0;
			while (i < end) {
				c = bytes[i];
				if (c <= '\r' && (c == '\n' || c == '\r')) {
					break;
				}
				i++;
			}
			if (i == end) {
				stash(bytes, p, end - p, base + p);
				return;
			}
			if (lineLength == 0) {
				lineStart = base + p;
				int n = i - p;
				if (n > maxLineBytes) {
					throw lineTooLong();
				}
				line(bytes, p, n);
			}
			else {
				stash(bytes, p, i - p, base + p);
				line(line, 0, lineLength);
				lineLength = 0;
				if (line.length > RETAINED_MAX) {
					line = new byte[INITIAL_LINE];
				}
			}
			p = i + 1;
			if (c == '\r') {
				if (p < end) {
					if (bytes[p] == '\n') {
						p++;
					}
				}
				else {
					skipLineFeed = true;
				}
			}
		}
	}

	/**
	 * The stream ended. An event not yet dispatched by a blank line is dropped, as the WHATWG
	 * rules say: a stream cut mid-event must not look like a complete event.
	 */
	void finish() {
		lineLength = 0;
		dataLength = 0;
		dataSeen = false;
		type = null;
		retry = null;
	}

	/** @return bytes fed so far */
	long position() {
		return position;
	}

	private void stash(byte[] bytes, int offset, int length, long streamOffset) {
		if (lineLength == 0) {
			lineStart = streamOffset;
		}
		int needed = lineLength + length;
		if (needed > maxLineBytes) {
			throw lineTooLong();
		}
		if (needed > line.length) {
			line = Arrays.copyOf(line, (int) Math.min(Math.max((long) line.length * 2, needed), maxLineBytes));
		}
		System.arraycopy(bytes, offset, line, lineLength, length);
		lineLength = needed;
	}

	private SseFormatException lineTooLong() {
		return new SseFormatException("line longer than maxLineBytes=" + maxLineBytes, lineStart);
	}

	private void line(byte[] b, int offset, int length) {
		if (!firstLineSeen) {
			firstLineSeen = true;
			if (length >= 3 && b[offset] == (byte) 0xEF && b[offset + 1] == (byte) 0xBB && b[offset + 2] == (byte) 0xBF) {
				offset += 3;
				length -= 3;
			}
		}
		if (length == 0) {
			dispatch();
			return;
		}
		final int end = offset + length;
		if (b[offset] == ':') {
			int v = offset + 1;
			if (v < end && b[v] == ' ') {
				v++;
			}
			sink.accept(SseEvent.comment(text(b, v, end - v)));
			return;
		}
		int colon = offset;
		while (colon < end && b[colon] != ':') {
			colon++;
		}
		int nameLength = colon - offset;
		int v = colon + 1;
		if (v < end && b[v] == ' ') {
			v++;
		}
		if (v > end) {
			v = end;
		}
		switch (nameLength) {
			case 4:
				if (b[offset] == 'd' && b[offset + 1] == 'a' && b[offset + 2] == 't' && b[offset + 3] == 'a') {
					appendData(b, v, end - v);
				}
				break;
			case 5:
				if (is(b, offset, 'e', 'v', 'e', 'n', 't')) {
					type(b, v, end - v);
				}
				else if (is(b, offset, 'r', 'e', 't', 'r', 'y')) {
					retry(b, v, end);
				}
				break;
			case 2:
				if (b[offset] == 'i' && b[offset + 1] == 'd') {
					id(b, v, end);
				}
				break;
			default:
				// unknown field: ignored, as the spec says
		}
	}

	private static boolean is(byte[] b, int o, char c0, char c1, char c2, char c3, char c4) {
		return b[o] == c0 && b[o + 1] == c1 && b[o + 2] == c2 && b[o + 3] == c3 && b[o + 4] == c4;
	}

	private void appendData(byte[] b, int offset, int length) {
		int separator = dataSeen ? 1 : 0;
		long needed = (long) dataLength + separator + length;
		if (needed > maxEventBytes) {
			throw new SseFormatException("event data larger than maxEventBytes=" + maxEventBytes, lineStart);
		}
		if (needed > data.length) {
			data = Arrays.copyOf(data, (int) Math.min(Math.max((long) data.length * 2, needed), maxEventBytes));
		}
		if (separator == 1) {
			data[dataLength++] = '\n';
		}
		System.arraycopy(b, offset, data, dataLength, length);
		dataLength += length;
		dataSeen = true;
	}

	private void type(byte[] b, int offset, int length) {
		if (length == 0) {
			type = null;
			return;
		}
		// providers repeat a handful of event types: reuse the last string instead of decoding again
		byte[] last = lastTypeBytes;
		if (last != null && Arrays.equals(b, offset, offset + length, last, 0, last.length)) {
			type = lastType;
			return;
		}
		String t = text(b, offset, length);
		lastTypeBytes = Arrays.copyOfRange(b, offset, offset + length);
		lastType = t;
		type = t;
	}

	private void id(byte[] b, int offset, int end) {
		for (int i = offset; i < end; i++) {
			if (b[i] == 0) {
				return; // an id containing NULL is ignored
			}
		}
		lastId = offset == end ? null : text(b, offset, end - offset);
	}

	private void retry(byte[] b, int offset, int end) {
		if (offset == end || end - offset > 18) {
			return; // empty or would overflow: ignored
		}
		long value = 0;
		for (int i = offset; i < end; i++) {
			int d = b[i] - '0';
			if (d < 0 || d > 9) {
				return; // only ASCII digits count
			}
			value = value * 10 + d;
		}
		retry = value;
	}

	private void dispatch() {
		if (!dataSeen) {
			type = null;
			return;
		}
		String d = dataLength == 0 ? "" : text(data, 0, dataLength);
		SseEvent event = new SseEvent(type, d, lastId, retry, null);
		dataLength = 0;
		dataSeen = false;
		type = null;
		retry = null;
		if (data.length > RETAINED_MAX) {
			data = new byte[INITIAL_DATA];
		}
		sink.accept(event);
	}

	/**
	 * Decodes UTF-8 strictly. The JDK's string constructor is the fast path (ASCII is a plain copy);
	 * it replaces malformed input with U+FFFD, so only when that character shows up do we ask a
	 * reporting {@link CharsetDecoder} whether the input was malformed or an honest U+FFFD.
	 */
	private String text(byte[] b, int offset, int length) {
		if (length == 0) {
			return "";
		}
		String s = new String(b, offset, length, StandardCharsets.UTF_8);
		if (s.indexOf('\uFFFD') >= 0) {
			CharsetDecoder decoder = strictUtf8;
			if (decoder == null) {
				decoder = StandardCharsets.UTF_8.newDecoder()
					.onMalformedInput(CodingErrorAction.REPORT)
					.onUnmappableCharacter(CodingErrorAction.REPORT);
				strictUtf8 = decoder;
			}
			try {
				decoder.decode(ByteBuffer.wrap(b, offset, length));
			}
			catch (CharacterCodingException e) {
				throw new SseFormatException("invalid UTF-8 in a field value", lineStart);
			}
		}
		return s;
	}
}
