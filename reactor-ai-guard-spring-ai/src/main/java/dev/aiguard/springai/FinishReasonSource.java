package dev.aiguard.springai;

import java.io.IOException;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import okio.Buffer;
import okio.BufferedSource;
import okio.ByteString;
import okio.Source;
import okio.Timeout;

/**
 * A chat completion answer, line by line, with the finish reasons the OpenAI SDK knows written in
 * lower case ({@code "STOP"} becomes {@code "stop"}): the SDK matches them in lower case only. A
 * line is passed on as soon as it is complete, so a streamed answer keeps its pace; lines without
 * {@code "finish_reason"} are copied as bytes, without decoding.
 */
final class FinishReasonSource implements Source {

	private static final ByteString KEY = ByteString.encodeUtf8("\"finish_reason\"");

	private static final Pattern FINISH_REASON = Pattern.compile("(\"finish_reason\"\\s*:\\s*\")([^\"]*)(\")");

	/** The values of the SDK's {@code FinishReason} (chat completions and their chunks). */
	private static final Set<String> KNOWN = Set.of("stop", "length", "tool_calls", "content_filter", "function_call");

	private final BufferedSource upstream;
	private final Buffer line = new Buffer();

	FinishReasonSource(BufferedSource upstream) {
		this.upstream = upstream;
	}

	@Override
	public long read(Buffer sink, long byteCount) throws IOException {
		if (byteCount < 0) {
			throw new IllegalArgumentException("byteCount < 0: " + byteCount);
		}
		if (byteCount == 0) {
			return 0;
		}
		if (line.size() == 0) {
			// waits for a whole line, as the SDK's own line reader would
			long end = upstream.indexOf((byte) '\n');
			if (end < 0 && upstream.exhausted()) {
				return -1;
			}
			ByteString next = end < 0 ? upstream.readByteString() : upstream.readByteString(end + 1);
			line.write(next.indexOf(KEY) < 0 ? next : ByteString.encodeUtf8(normalise(next.utf8())));
		}
		return line.read(sink, Math.min(byteCount, line.size()));
	}

	/** @return the text with every known finish reason in lower case; others unchanged */
	static String normalise(String text) {
		Matcher m = FINISH_REASON.matcher(text);
		StringBuilder out = null;
		int last = 0;
		while (m.find()) {
			String lower = m.group(2).toLowerCase(Locale.ROOT);
			if (!lower.equals(m.group(2)) && KNOWN.contains(lower)) {
				if (out == null) {
					out = new StringBuilder(text.length());
				}
				out.append(text, last, m.start(2)).append(lower);
				last = m.end(2);
			}
		}
		return out == null ? text : out.append(text, last, text.length()).toString();
	}

	@Override
	public Timeout timeout() {
		return upstream.timeout();
	}

	@Override
	public void close() throws IOException {
		upstream.close();
	}
}
