package dev.aiguard.test.mock;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The mock model's answers: a short echo of the question, then a few sentences drawn from a seed
 * taken from the question. The same prompt always gets the same answer, different prompts get
 * different ones, so a test can predict every token.
 *
 * <pre>{@code
 * List<String> tokens = MockAnswers.tokens("Why do streams stall?");
 * String answer = String.join("", tokens);    // what the mock streams, token by token
 * }</pre>
 *
 * A question that starts with {@code #seq <label> <count>} gets a numbered answer instead:
 * {@code <label>.1 <label>.2 … <label>.<count>}, one number per token, so a test can tell a
 * repeated or a missing token from a correct one ({@link #numbered(String, int)} builds such a
 * question).
 */
public final class MockAnswers {

	private static final String[] SUBJECTS = { "the stream", "every token", "the breaker", "a fallback", "the lane",
			"the first token", "a retry", "the model", "the answer", "the guard", "a slow provider", "the cache" };

	private static final String[] VERBS = { "keeps", "watches", "protects", "measures", "delays", "shortens",
			"replays", "remembers", "admits", "counts", "shapes", "explains" };

	private static final String[] OBJECTS = { "the page alive", "its deadline", "the user's patience",
			"every outcome", "the priority lanes", "a calm dashboard", "the prompt budget", "the terminal marker",
			"the time to first token", "a clean answer", "the retry budget", "the last good answer" };

	private static final String[] TAILS = { "", " quietly", " without a single duplicate", " under load",
			" when the provider stumbles", " one token at a time" };

	/** Words of the question echoed at the start of the answer. */
	private static final int ECHO_WORDS = 6;

	/** The start of a question that asks for a numbered answer; whatever follows it is ignored. */
	private static final Pattern NUMBERED = Pattern.compile("^#seq ([A-Za-z0-9_-]{1,40}) (\\d{1,4})(?:\\s|$)");

	/** The most tokens a numbered answer has. */
	static final int MAX_NUMBERED = 1000;

	private MockAnswers() {
	}

	/** @return the answer to {@code prompt} as content deltas: words, each with the space that follows it */
	public static List<String> tokens(String prompt) {
		Matcher numbered = NUMBERED.matcher(prompt.strip());
		if (numbered.find()) {
			int count = Math.max(1, Math.min(Integer.parseInt(numbered.group(2)), MAX_NUMBERED));
			return numberedTokens(numbered.group(1), count);
		}
		SplittableRandom random = new SplittableRandom(seed(prompt));
		StringBuilder text = new StringBuilder("You asked: \"").append(echo(prompt)).append("\". ");
		int sentences = 3 + random.nextInt(3);
		for (int i = 0; i < sentences; i++) {
			String sentence = pick(random, SUBJECTS) + ' ' + pick(random, VERBS) + ' ' + pick(random, OBJECTS)
					+ pick(random, TAILS) + '.';
			text.append(Character.toUpperCase(sentence.charAt(0))).append(sentence, 1, sentence.length());
			if (i < sentences - 1) {
				text.append(' ');
			}
		}
		return split(text.toString());
	}

	/**
	 * @param label names the answer in every token (letters, digits, {@code -}, {@code _})
	 * @param count tokens in the answer, 1 to 1000
	 * @return a question the mock answers with {@code <label>.1 } to {@code <label>.<count>}
	 */
	public static String numbered(String label, int count) {
		String question = "#seq " + label + ' ' + count;
		if (count < 1 || count > MAX_NUMBERED || !NUMBERED.matcher(question).find()) {
			throw new IllegalArgumentException("a numbered answer needs a label of letters, digits, - or _ and "
					+ "1 to " + MAX_NUMBERED + " tokens, was '" + label + "' and " + count);
		}
		return question;
	}

	private static List<String> numberedTokens(String label, int count) {
		List<String> tokens = new ArrayList<>(count);
		for (int i = 1; i <= count; i++) {
			tokens.add(i < count ? label + '.' + i + ' ' : label + '.' + i);
		}
		return tokens;
	}

	/**
	 * @param phrase the repeated text, split into words like any answer
	 * @param times how often it is repeated, at least 1
	 * @return the tokens of {@code phrase} {@code times} times in a row: the answer of a looping model
	 */
	public static List<String> loop(String phrase, int times) {
		if (phrase.isBlank() || times < 1) {
			throw new IllegalArgumentException("a loop needs a phrase that is not blank and at least 1 repeat, was '"
					+ phrase + "' and " + times);
		}
		List<String> unit = split(phrase);
		List<String> tokens = new ArrayList<>(unit.size() * times);
		for (int i = 0; i < times; i++) {
			tokens.addAll(unit);
		}
		return tokens;
	}

	/** @return the whole answer to {@code prompt} */
	public static String text(String prompt) {
		return String.join("", tokens(prompt));
	}

	private static String echo(String prompt) {
		String[] words = prompt.strip().split("\\s+");
		if (words.length == 1 && words[0].isEmpty()) {
			return "(nothing)";
		}
		StringBuilder b = new StringBuilder();
		for (int i = 0; i < Math.min(words.length, ECHO_WORDS); i++) {
			if (i > 0) {
				b.append(' ');
			}
			// quotes and control characters would only make the echo harder to read
			b.append(words[i].replaceAll("[\\p{Cntrl}\"]", ""));
		}
		return words.length > ECHO_WORDS ? b.append(" …").toString() : b.toString();
	}

	private static List<String> split(String text) {
		List<String> tokens = new ArrayList<>();
		int start = 0;
		for (int i = 0; i < text.length(); i++) {
			if (text.charAt(i) == ' ') {
				tokens.add(text.substring(start, i + 1));
				start = i + 1;
			}
		}
		if (start < text.length()) {
			tokens.add(text.substring(start));
		}
		return tokens;
	}

	private static long seed(String prompt) {
		long h = 0xcbf29ce484222325L; // FNV-1a: prompts one letter apart get unrelated seeds
		for (byte b : prompt.strip().toLowerCase(Locale.ROOT).getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
			h ^= b & 0xff;
			h *= 0x100000001b3L;
		}
		return h;
	}

	private static String pick(SplittableRandom random, String[] options) {
		return options[random.nextInt(options.length)];
	}
}
