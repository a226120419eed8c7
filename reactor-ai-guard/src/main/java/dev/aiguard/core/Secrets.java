package dev.aiguard.core;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * The one rule for keeping credentials out of what leaves the process: every place where a
 * provider's text becomes an exception message, a report, a log line, a meter tag or an HTTP
 * response passes it through {@link #scrub(String, String...)} first, and every URL that is shown
 * goes through {@link #withoutCredentials(String)}.
 *
 * <p>{@code scrub} replaces, with {@value #REDACTED}:
 * <ul>
 * <li>each known secret given (the configured API key), wherever it appears;</li>
 * <li>text shaped like a provider key: {@code sk-...}, {@code sk-ant-...}, {@code sk-proj-...};</li>
 * <li>the credential after {@code Bearer } / {@code Basic } and after {@code api-key},
 * {@code api_key}, {@code x-api-key}, {@code apikey}, {@code token}, {@code authorization},
 * {@code access_token}, {@code password}, {@code secret} followed by {@code =} or {@code :}
 * (the header and query forms providers echo);</li>
 * <li>the user-info of any URL in the text ({@code https://user:pass@host} becomes
 * {@code https://[redacted]@host}).</li>
 * </ul>
 *
 * <pre>{@code
 * throw new ProviderClientException(provider, Secrets.scrub(body, apiKey), status);
 * String shown = Secrets.withoutCredentials(baseUrl);
 * }</pre>
 *
 * Known secrets shorter than {@value #MIN_KNOWN_SECRET} characters are not replaced literally (a
 * one-letter "key" would erase every occurrence of that letter); the patterns still apply.
 */
public final class Secrets {

	/** What a scrubbed secret is replaced with. */
	public static final String REDACTED = "[redacted]";

	/** The shortest known secret that is replaced wherever it appears. */
	public static final int MIN_KNOWN_SECRET = 6;

	/** Provider keys: OpenAI {@code sk-...} / {@code sk-proj-...}, Anthropic {@code sk-ant-...}. */
	private static final Pattern KEY_LIKE = Pattern.compile("\\bsk-[A-Za-z0-9_*.\\-]{2,}[A-Za-z0-9_*]");

	/** {@code Bearer xyz}, {@code Basic xyz}: keeps the scheme, drops the credential. */
	private static final Pattern AUTH_SCHEME = Pattern.compile("(?i)\\b(bearer|basic)(\\s+)[A-Za-z0-9._~+/=\\-]{4,}");

	/** {@code api_key=xyz}, {@code "x-api-key": "xyz"}, {@code token: xyz}: keeps the name, drops the value. */
	private static final Pattern NAMED_CREDENTIAL = Pattern.compile(
			"(?i)\\b((?:x-)?api[-_]?key|(?:access[-_]?|refresh[-_]?)?token|password|secret|authorization)"
					+ "(\\s*\"?\\s*[:=]\\s*\"?)(?!\\[redacted])(?:(?:bearer|basic)\\s+)?[^\\s\"',&;}]{4,}");

	/** The user-info part of a URL. */
	private static final Pattern URL_USER_INFO = Pattern.compile("(?i)\\b([a-z][a-z0-9+.\\-]*://)[^/\\s@?#]+@");

	private Secrets() {
	}

	/**
	 * @param text text that may contain secrets (null reads as the empty string)
	 * @param knownSecrets secrets to remove wherever they appear (nulls and short ones are skipped)
	 * @return the text with every known secret and everything shaped like a credential replaced by
	 *         {@value #REDACTED}
	 */
	public static String scrub(@Nullable String text, @Nullable String... knownSecrets) {
		if (text == null || text.isEmpty()) {
			return "";
		}
		String t = text;
		if (knownSecrets != null) {
			for (String secret : knownSecrets) {
				if (secret != null && secret.length() >= MIN_KNOWN_SECRET) {
					t = t.replace(secret, REDACTED);
				}
			}
		}
		t = URL_USER_INFO.matcher(t).replaceAll("$1" + Matcher.quoteReplacement(REDACTED) + "@");
		t = KEY_LIKE.matcher(t).replaceAll(Matcher.quoteReplacement(REDACTED));
		t = AUTH_SCHEME.matcher(t).replaceAll("$1$2" + Matcher.quoteReplacement(REDACTED));
		t = NAMED_CREDENTIAL.matcher(t).replaceAll("$1$2" + Matcher.quoteReplacement(REDACTED));
		return t;
	}

	/**
	 * @param url a URL, possibly with user-info ({@code https://user:pass@host/v1})
	 * @return the URL without its user-info ({@code https://host/v1}) and with any credential-shaped
	 *         query parameter scrubbed; the empty string for null
	 */
	public static String withoutCredentials(@Nullable String url) {
		if (url == null) {
			return "";
		}
		String stripped = URL_USER_INFO.matcher(url).replaceAll("$1");
		return scrub(stripped);
	}

	/**
	 * @return whether {@code text} contains a known secret (of at least {@value #MIN_KNOWN_SECRET}
	 *         characters) or anything {@link #scrub} would replace
	 */
	public static boolean containsSecret(@Nullable String text, @Nullable String... knownSecrets) {
		if (text == null || text.isEmpty()) {
			return false;
		}
		return !scrub(text, knownSecrets).equals(text);
	}

	/** How deep {@link #inCauseChain} looks: wrappers rarely nest deeper, and a cyclic chain must end. */
	public static final int MAX_CAUSE_DEPTH = 8;

	/**
	 * @return whether the message of {@code error}, or of one of its first {@value #MAX_CAUSE_DEPTH}
	 *         causes, holds something {@link #scrub} would replace: such an error is not handed on as a
	 *         cause, since {@code getCause()} would reach the secret
	 */
	public static boolean inCauseChain(@Nullable Throwable error, @Nullable String... knownSecrets) {
		Throwable t = error;
		for (int depth = 0; t != null && depth < MAX_CAUSE_DEPTH; depth++) {
			if (containsSecret(t.getMessage(), knownSecrets)) {
				return true;
			}
			t = t.getCause() == t ? null : t.getCause();
		}
		return false;
	}

	/**
	 * @return a copy of {@code secrets}, for a setting that takes known secrets
	 * @throws IllegalArgumentException naming {@code secrets}, or {@code secrets[i]}, when null
	 */
	public static String[] checked(@Nullable String... secrets) {
		if (secrets == null) {
			throw new IllegalArgumentException("secrets must not be null");
		}
		for (int i = 0; i < secrets.length; i++) {
			if (secrets[i] == null) {
				throw new IllegalArgumentException("secrets[" + i + "] must not be null");
			}
		}
		return secrets.clone();
	}
}
