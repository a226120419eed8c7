package dev.aiguard.demo.mock;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The mock model's answers: a short echo of the question, then a few sentences drawn from a seed
 * taken from the question. The same prompt always gets the same answer, different prompts get
 * different ones, so a test can predict every token.
 *
 * <pre>{@code
 * List<String> tokens = MockAnswers.tokens("Why do streams stall?");
 * String answer = String.join("", tokens);    // what the mock streams, token by token
 * }</pre>
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

	private MockAnswers() {
	}

	/** @return the answer to {@code prompt} as content deltas: words, each with the space that follows it */
	public static List<String> tokens(String prompt) {
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
