package dev.aiguard.demo;

import java.util.regex.Pattern;

import dev.aiguard.core.Secrets;
import org.jspecify.annotations.Nullable;

/**
 * What an error message may tell a client: the message with every credential removed
 * ({@link Secrets#scrub}, with the upstream's configured key) and every address of the machines
 * behind the demo replaced by {@value #UPSTREAM}. An exception's message names the upstream's URL
 * or socket address ("connection to http://10.0.0.7:8000/v1 failed"); the server log keeps it, the
 * browser gets the type of the error and the rest of the sentence.
 *
 * <pre>{@code
 * ClientText text = new ClientText(upstream.apiKey());
 * text.of("connection to http://10.0.0.7:8000/v1 failed")   // "connection to [upstream] failed"
 * }</pre>
 */
final class ClientText {

	/** What an address in a message is replaced with. */
	static final String UPSTREAM = "[upstream]";

	/** For messages no configured key can reach (the demo's own refusals): the patterns only. */
	static final ClientText PATTERNS = new ClientText();

	/** A URL of any scheme, up to the next blank or quote. */
	private static final Pattern URL = Pattern.compile("(?i)\\b[a-z][a-z0-9+.\\-]*://[^\\s\"'<>]+");

	/**
	 * A socket address as Netty and the JDK write it: {@code host/1.2.3.4:80}, {@code /1.2.3.4:80},
	 * {@code 1.2.3.4}, {@code [::1]:80}, {@code localhost:80}.
	 */
	private static final Pattern ADDRESS = Pattern.compile("(?i)(?:[a-z0-9][a-z0-9.\\-]*)?/?"
			+ "(?:\\b\\d{1,3}(?:\\.\\d{1,3}){3}\\b|\\[[0-9a-f.]*:[0-9a-f:.]*])(?::\\d{1,5})?"
			+ "|\\b(?:localhost|[a-z0-9\\-]+(?:\\.[a-z0-9\\-]+)+):\\d{1,5}\\b");

	private final String[] knownSecrets;

	/** @param knownSecrets secrets to remove wherever they appear: the upstream's API key */
	ClientText(@Nullable String... knownSecrets) {
		this.knownSecrets = knownSecrets == null ? new String[0] : knownSecrets.clone();
	}

	/** @return {@code message} fit for a client: no credential, no URL, no socket address; "" for null */
	String of(@Nullable String message) {
		String scrubbed = Secrets.scrub(message, knownSecrets);
		String noUrls = URL.matcher(scrubbed).replaceAll(UPSTREAM);
		return ADDRESS.matcher(noUrls).replaceAll(UPSTREAM);
	}
}
