package dev.aiguard.fallback;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ResponseFormat;
import dev.aiguard.chat.ToolCall;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Operators;
import reactor.util.context.Context;

/**
 * Keys under which a {@link ResponseCache} stores answers.
 *
 * <pre>{@code
 * Object key = CacheKeys.of(request);                         // model + every message
 * Function<ChatRequest, Object> faqKeys = CacheKeys.lastUserMessage();  // model + last question only
 * Function<ChatRequest, Object> mine = req -> tenant + ":" + CacheKeys.of(req);
 * }</pre>
 *
 * <h2>The standard key</h2>
 * The request is normalised (model; per message its role, its content with surrounding
 * whitespace removed and inner runs of whitespace collapsed to one space, its tool calls and tool
 * call id) and hashed with SHA-256, each field length-prefixed so no two different requests
 * produce the same byte stream. The key is the 256-bit digest: 32 bytes whatever the size of the
 * conversation, so a full cache holds answers, not copies of prompts; collisions are not a
 * practical concern at that width. Its {@code toString()} is {@code sha256:} and 64 hex digits,
 * stable across processes and versions of this library, for use as an external store's key.
 * {@code maxTokens} and {@code temperature} are not part of the key: a stored answer was complete,
 * and sampling settings do not make it wrong. A response format is: its name and schema follow
 * the messages when the request has one, so a structured answer never serves a free-text request
 * (and keys of requests without one stay as they were).
 */
public final class CacheKeys {

	private static final Function<ChatRequest, Object> STANDARD = CacheKeys::of;
	private static final Function<ChatRequest, Object> LAST_USER_MESSAGE = CacheKeys::ofLastUserMessage;

	// the JCA lookup may read configuration on first use: do it once, at class load, and clone
	private static final MessageDigest PROTOTYPE;

	static {
		try {
			PROTOTYPE = MessageDigest.getInstance("SHA-256");
		}
		catch (NoSuchAlgorithmException mandatory) {
			// every Java platform must provide SHA-256
			throw new ExceptionInInitializerError(mandatory);
		}
	}

	private CacheKeys() {
	}

	/**
	 * @return the standard key of a request: SHA-256 of its normalised model and messages
	 */
	public static Object of(ChatRequest request) {
		Objects.requireNonNull(request, "request");
		Hasher h = new Hasher();
		h.text(request.model());
		h.number(request.messages().size());
		for (ChatMessage m : request.messages()) {
			h.message(m);
		}
		ResponseFormat format = request.responseFormat();
		if (format != null) {
			h.text(format.name());
			h.text(format.schema());
		}
		return h.digest();
	}

	/** @return {@link #of(ChatRequest)} as a function, the default key function */
	public static Function<ChatRequest, Object> standard() {
		return STANDARD;
	}

	/**
	 * @return a key function on the model and the last user message only (normalised and hashed
	 *         like the standard key): more hits, for FAQ-like traffic where the history rarely
	 *         changes the answer
	 */
	public static Function<ChatRequest, Object> lastUserMessage() {
		return LAST_USER_MESSAGE;
	}

	/**
	 * Applies a key function, isolated: a function that throws yields no key (the cache is then
	 * skipped for that request) and its error goes to {@code Hooks.onErrorDropped}.
	 *
	 * @param keyFunction the standard one, or your own
	 * @param request the request, or {@code null} in the transform form (no key then)
	 * @return the key, or {@code null}
	 */
	@Nullable
	public static Object keyOf(Function<? super ChatRequest, ?> keyFunction, @Nullable ChatRequest request) {
		Objects.requireNonNull(keyFunction, "keyFunction");
		if (request == null) {
			return null;
		}
		try {
			return keyFunction.apply(request);
		}
		catch (Throwable keyFailure) {
			Operators.onErrorDropped(keyFailure, Context.empty());
			return null;
		}
	}

	private static Object ofLastUserMessage(ChatRequest request) {
		Objects.requireNonNull(request, "request");
		Hasher h = new Hasher();
		h.text("last-user");
		h.text(request.model());
		List<ChatMessage> messages = request.messages();
		for (int i = messages.size() - 1; i >= 0; i--) {
			if (messages.get(i).role() == ChatMessage.Role.USER) {
				h.message(messages.get(i));
				return h.digest();
			}
		}
		h.number(-1);
		return h.digest();
	}

	/**
	 * Trims and collapses every run of whitespace to one space.
	 *
	 * @return the normalised text (the same instance when nothing changes)
	 */
	static String normalizeWhitespace(String text) {
		int n = text.length();
		boolean clean = n == 0
				|| (!Character.isWhitespace(text.charAt(0)) && !Character.isWhitespace(text.charAt(n - 1)));
		for (int i = 1; clean && i < n; i++) {
			char c = text.charAt(i);
			if (Character.isWhitespace(c) && (c != ' ' || Character.isWhitespace(text.charAt(i - 1)))) {
				clean = false;
			}
		}
		if (clean) {
			return text;
		}
		StringBuilder sb = new StringBuilder(n);
		boolean pendingSpace = false;
		for (int i = 0; i < n; i++) {
			char c = text.charAt(i);
			if (Character.isWhitespace(c)) {
				pendingSpace = sb.length() > 0;
			}
			else {
				if (pendingSpace) {
					sb.append(' ');
					pendingSpace = false;
				}
				sb.append(c);
			}
		}
		return sb.toString();
	}

	/** Length-prefixed fields into a SHA-256 digest. */
	private static final class Hasher {

		private final MessageDigest digest;
		private final byte[] number = new byte[4];

		Hasher() {
			try {
				digest = (MessageDigest) PROTOTYPE.clone();
			}
			catch (CloneNotSupportedException notCloneable) {
				// the JDK's SHA-256 is cloneable; a provider that is not would be a broken platform
				throw new IllegalStateException("SHA-256 MessageDigest is not cloneable", notCloneable);
			}
			text("aiguard-cache-key-v1");
		}

		void message(ChatMessage m) {
			text(m.role().wireName());
			text(normalizeWhitespace(m.content()));
			text(m.toolCallId());
			number(m.toolCalls().size());
			for (ToolCall call : m.toolCalls()) {
				text(call.id());
				text(call.name());
				text(call.arguments());
			}
		}

		void number(int value) {
			number[0] = (byte) (value >>> 24);
			number[1] = (byte) (value >>> 16);
			number[2] = (byte) (value >>> 8);
			number[3] = (byte) value;
			digest.update(number);
		}

		void text(@Nullable String value) {
			if (value == null) {
				number(-1);
				return;
			}
			byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
			number(bytes.length);
			digest.update(bytes);
		}

		RequestDigest digest() {
			return RequestDigest.of(digest.digest());
		}
	}
}
