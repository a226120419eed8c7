package dev.aiguard.demo;

import java.util.Locale;

/**
 * Which client asks the model for an answer. Both go through the same guard policy (breaker,
 * lanes, deadlines, retries, fallbacks) and the same upstream; they differ in the code that speaks
 * HTTP to it.
 *
 * <pre>{@code
 * POST /api/chat?client=spring-ai        or   {"messages": [...], "client": "spring-ai"}
 * }</pre>
 */
enum AnswerClient {

	/** The library's own {@code OpenAiCompatibleClient}, guarded through {@code AiGuard.call}. */
	LIBRARY("library"),

	/** Spring AI's {@code ChatClient} over its {@code OpenAiChatModel}, guarded by {@code AiGuardAdvisor}. */
	SPRING_AI("spring-ai");

	private final String id;

	AnswerClient(String id) {
		this.id = id;
	}

	/** @return the name the HTTP contract and the page use: {@code library} or {@code spring-ai} */
	String id() {
		return id;
	}

	/**
	 * @param text a client's id, in any letter case
	 * @return the client it names
	 * @throws IllegalArgumentException when it names none
	 */
	static AnswerClient parse(String text) {
		String wanted = text.strip().toLowerCase(Locale.ROOT);
		for (AnswerClient c : values()) {
			if (c.id.equals(wanted)) {
				return c;
			}
		}
		throw new IllegalArgumentException("'" + text + "' is not one of library, spring-ai");
	}

	@Override
	public String toString() {
		return id;
	}
}
