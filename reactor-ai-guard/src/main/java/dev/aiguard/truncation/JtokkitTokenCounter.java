package dev.aiguard.truncation;

import com.knuddels.jtokkit.Encodings;
import com.knuddels.jtokkit.api.Encoding;
import com.knuddels.jtokkit.api.EncodingRegistry;

/**
 * {@link TokenCounter#jtokkit(String)}. The only class that touches jtokkit: it is loaded when
 * that factory is first called, so the library runs without jtokkit otherwise.
 */
final class JtokkitTokenCounter implements TokenCounter {

	/** Loads an encoding's ranks only when it is first asked for. */
	private static final class Registry {
		static final EncodingRegistry INSTANCE = Encodings.newLazyEncodingRegistry();
	}

	private final Encoding encoding;

	private JtokkitTokenCounter(Encoding encoding) {
		this.encoding = encoding;
	}

	static TokenCounter create(String encodingName) {
		Encoding encoding = Registry.INSTANCE.getEncoding(encodingName)
				.orElseThrow(() -> new IllegalArgumentException("encodingName must be one of jtokkit's encodings "
						+ "(cl100k_base, o200k_base, p50k_base, r50k_base), was \"" + encodingName + "\""));
		// load the ranks now, not on the first count (which may run on an event loop)
		encoding.countTokensOrdinary("warm up");
		return new JtokkitTokenCounter(encoding);
	}

	@Override
	public int count(String text) {
		if (text == null || text.isEmpty()) {
			return 0;
		}
		return encoding.countTokensOrdinary(text);
	}

	/** OpenAI's published accounting for chat messages: 3 tokens per message. */
	@Override
	public int messageOverhead() {
		return 3;
	}

	@Override
	public String toString() {
		return "TokenCounter.jtokkit(" + encoding.getName() + ")";
	}
}
