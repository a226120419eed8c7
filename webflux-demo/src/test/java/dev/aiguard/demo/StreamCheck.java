package dev.aiguard.demo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeoutException;

import org.jspecify.annotations.Nullable;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.web.reactive.function.client.WebClientResponseException;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Watches the events of one {@code POST /api/chat} of {@link FaultSoakTest} as they arrive, and
 * judges the whole once the stream has ended, been cancelled by its client or run past its bound.
 * Events of one stream arrive one after another, so the fields need no synchronisation; the
 * judgement runs after the last event.
 */
final class StreamCheck {

	/** Error types a request may end with before its first token even though the ladder is on. */
	static final Set<String> CLIENT_ERRORS = Set.of("prompt_too_large", "context_length", "client_error");

	/** The ending of a request the load governor refused. */
	static final String SHED = "shed by the load governor";

	/** What the fallback ladder answers with, to judge answers that did not come from the model. */
	record Ladder(String staticText, Map<String, String> topicAnswers) {
	}

	/**
	 * The judgement.
	 *
	 * @param ending how the stream ended, for the tally: {@code done REALTIME}, {@code error stalled partial},
	 *        {@code cancelled mid-answer}...
	 * @param problems what broke a rule; empty when the stream was fine
	 * @param tokens token events received
	 * @param numbered token events checked against the numbered answer
	 * @param elapsed from the request to the end
	 */
	record Verdict(String ending, List<String> problems, int tokens, int numbered, Duration elapsed) {
	}

	private final SoakPlan.Stream plan;
	private final String phase;
	private final Duration bound;
	private final JsonMapper json;
	private final long startNanos = System.nanoTime();
	private final Sinks.Empty<Void> metaSeen = Sinks.empty();

	private final List<String> tokens = new ArrayList<>();
	private final List<String> problems = new ArrayList<>();
	private int events;
	private int metas;
	@Nullable
	private String terminalName;
	@Nullable
	private JsonNode terminal;
	private int afterTerminal;
	private boolean cancelRequested;

	/**
	 * @param phase the phase, and whether its fault was on, when the request was sent (a retry may
	 *        meet another)
	 * @param bound how long the stream may take at most
	 */
	StreamCheck(SoakPlan.Stream plan, String phase, Duration bound, JsonMapper json) {
		this.plan = plan;
		this.phase = phase;
		this.bound = bound;
		this.json = json;
	}

	void accept(ServerSentEvent<String> event) {
		events++;
		String name = event.event();
		if (terminalName != null) {
			afterTerminal++;
			problems.add("event '" + name + "' after the terminal '" + terminalName + "' event");
			return;
		}
		JsonNode data = parse(event.data());
		if ("meta".equals(name)) {
			metas++;
			if (events != 1) {
				problems.add("meta is event " + events + ", not the first");
			}
			String priority = data == null ? null : data.path("priority").asString(null);
			if (!plan.priority().name().equals(priority)) {
				problems.add("meta says priority " + priority + ", the request asked " + plan.priority());
			}
			metaSeen.tryEmitEmpty();
		}
		else if ("token".equals(name)) {
			tokens.add(data == null ? null : data.path("text").asString(null));
		}
		else if ("done".equals(name) || "error".equals(name)) {
			terminalName = name;
			terminal = data;
		}
		else {
			problems.add("unknown event '" + name + "'");
		}
	}

	/** @return completes when the {@code meta} event has arrived */
	Mono<Void> metaSeen() {
		return metaSeen.asMono();
	}

	/** @return how many token events arrived so far */
	int tokenCount() {
		return tokens.size();
	}

	/** The client is about to close the response (a cancelling reader's choice, not a failure). */
	void cancelling() {
		cancelRequested = true;
	}

	/**
	 * @param failure what ended the client's stream other than its end: a timeout past the bound, an HTTP error
	 */
	/** @return whether {@code http} is the governor's refusal: 503 {@code shed} with a {@code Retry-After} */
	private static boolean shed(WebClientResponseException http) {
		return http.getStatusCode().value() == 503 && http.getResponseBodyAsString().contains("\"error\":\"shed\"")
				&& http.getHeaders().getFirst("Retry-After") != null;
	}

	Verdict judge(@Nullable Throwable failure, Ladder ladder) {
		Duration elapsed = Duration.ofNanos(System.nanoTime() - startNanos);
		List<String> expected = plan.expectedTokens();
		String ending;
		int numbered = 0;
		if (failure instanceof TimeoutException) {
			problems.add("hung: no end within its bound of " + bound.toMillis() + " ms, nor " + elapsed.minus(bound)
				.toSeconds() + " s after it");
		}
		else if (elapsed.compareTo(bound) > 0) {
			problems.add("late: ended after " + elapsed.toMillis() + " ms, its bound is " + bound.toMillis() + " ms");
		}
		else if (failure instanceof WebClientResponseException http && shed(http)) {
			// the load governor's rules refuse this priority at its level: a documented answer with
			// the time to come back, before any stream starts
			ending = SHED;
			return new Verdict(ending, problems, 0, 0, elapsed);
		}
		else if (failure instanceof WebClientResponseException http) {
			problems.add("HTTP " + http.getStatusCode().value() + ": " + http.getResponseBodyAsString());
		}
		else if (failure != null) {
			problems.add("the client's stream failed: " + failure);
		}
		if (metas != 1 && events > 0) {
			problems.add(metas + " meta events");
		}
		if (terminal == null && terminalName != null) {
			problems.add("the " + terminalName + " event's data is not JSON");
		}
		if (terminal != null && "done".equals(terminalName)) {
			String source = terminal.path("source").asString("?");
			ending = "done " + source;
			long reported = terminal.path("tokens").asLong(-1);
			if (reported != tokens.size()) {
				problems.add("done says " + reported + " tokens, " + tokens.size() + " token events arrived");
			}
			if (!"stop".equals(terminal.path("finishReason").asString(null))) {
				problems.add("done's finishReason is " + terminal.path("finishReason") + ", not stop");
			}
			switch (source) {
				case "REALTIME", "CACHE", "FALLBACK_MODEL" -> {
					numbered = tokens.size();
					if (!tokens.equals(expected)) {
						problems.add(source + " answer is not the whole numbered answer: " + numberingProblem(expected));
					}
				}
				case "LIGHTWEIGHT" -> {
					String canned = plan.topic() == null ? null : ladder.topicAnswers().get(plan.topic());
					if (canned == null) {
						problems.add("a LIGHTWEIGHT answer to a question that names no topic of the canned answers");
					}
					else if (!canned.equals(text())) {
						problems.add("LIGHTWEIGHT answer is not the whole canned answer: '" + text() + "'");
					}
				}
				case "STATIC" -> {
					if (!ladder.staticText().equals(text())) {
						problems.add("STATIC answer is not the whole fixed message: '" + text() + "'");
					}
				}
				default -> problems.add("done from an unexpected source " + source);
			}
		}
		else if (terminal != null && "error".equals(terminalName)) {
			String type = terminal.path("type").asString("?");
			boolean partial = terminal.path("partial").asBoolean(false);
			ending = "error " + type + (partial ? " partial" : " before first token");
			if (partial != !tokens.isEmpty()) {
				problems.add("error says partial=" + partial + " after " + tokens.size() + " tokens");
			}
			if ("internal".equals(type)) {
				problems.add("error of type internal (an unexpected exception): " + terminal);
			}
			if (!partial && !CLIENT_ERRORS.contains(type)) {
				problems.add("a failure before the first token was not answered by the fallback ladder: " + terminal);
			}
			if (CLIENT_ERRORS.contains(type) && plan.question() != SoakPlan.Question.OVERSIZED
					&& plan.question() != SoakPlan.Question.LONG_HISTORY) {
				problems.add("client error for a short question: " + terminal);
			}
			if (!tokens.isEmpty()) {
				numbered = tokens.size();
				if (!isPrefix(tokens, expected)) {
					problems.add("partial answer is not a gap-free prefix of the numbered answer: "
							+ numberingProblem(expected));
				}
			}
		}
		else if (cancelRequested) {
			ending = tokens.isEmpty() ? "cancelled before first token" : "cancelled mid-answer";
			if (isPrefix(tokens, expected)) {
				numbered = tokens.size();
			}
			else if (!isFallbackPrefix(ladder)) {
				problems.add("tokens before the cancel are a prefix of no answer: " + numberingProblem(expected));
			}
		}
		else {
			ending = "no terminal event";
			if (failure == null) {
				problems.add("the response ended without done or error");
			}
		}
		return new Verdict(ending, List.copyOf(problems), tokens.size(), numbered, elapsed);
	}

	/** @return the stream, in a line: what was asked, in which phase, how it was read, what arrived */
	String describe(Verdict verdict) {
		return "stream #" + plan.number() + " (" + plan.question() + " '" + plan.label() + "' of " + plan.count()
				+ " tokens" + (plan.topic() != null ? ", topic " + plan.topic() : "") + ", " + plan.priority() + ", "
				+ reader() + ") sent in " + phase + "; after " + verdict.elapsed().toMillis() + " ms: " + events + " events, " + tokens.size()
				+ " tokens " + sample() + ", " + (terminalName == null ? "no terminal" : terminalName + " " + terminal)
				+ (cancelRequested ? ", client cancelled" : "");
	}

	private String reader() {
		return switch (plan.reader()) {
			case STEADY -> "steady reader";
			case SLOW -> "slow reader, " + plan.readDelay().toMillis() + " ms per event";
			case CANCEL_AFTER_TOKENS -> "cancels after " + plan.cancelAfterTokens() + " tokens";
			case CANCEL_AFTER_TIME -> "cancels " + plan.cancelAfter().toMillis() + " ms after meta";
		};
	}

	private String sample() {
		if (tokens.size() <= 8) {
			return tokens.toString();
		}
		return "[" + String.join("", tokens.subList(0, 4)) + "… " + String.join("", tokens.subList(tokens.size() - 3,
				tokens.size())) + "]";
	}

	private String numberingProblem(List<String> expected) {
		for (int i = 0; i < tokens.size(); i++) {
			if (i >= expected.size()) {
				return "token " + (i + 1) + " '" + tokens.get(i) + "' is beyond the answer's " + expected.size()
						+ " tokens";
			}
			if (!expected.get(i).equals(tokens.get(i))) {
				int seenBefore = expected.indexOf(tokens.get(i));
				String kind = seenBefore >= 0 && seenBefore < i ? "a duplicate" : seenBefore > i ? "a gap" : "foreign";
				return "token " + (i + 1) + " is '" + tokens.get(i) + "', expected '" + expected.get(i) + "' (" + kind
						+ ")";
			}
		}
		return tokens.size() + " of " + expected.size() + " tokens arrived";
	}

	private boolean isFallbackPrefix(Ladder ladder) {
		String text = text();
		if (ladder.staticText().startsWith(text)) {
			return true;
		}
		String canned = plan.topic() == null ? null : ladder.topicAnswers().get(plan.topic());
		return canned != null && canned.startsWith(text);
	}

	private static boolean isPrefix(List<String> tokens, List<String> expected) {
		return tokens.size() <= expected.size() && expected.subList(0, tokens.size()).equals(tokens);
	}

	private String text() {
		StringBuilder b = new StringBuilder();
		for (String t : tokens) {
			b.append(t);
		}
		return b.toString();
	}

	@Nullable
	private JsonNode parse(@Nullable String data) {
		if (data == null) {
			problems.add("an event without data");
			return null;
		}
		try {
			return json.readTree(data);
		}
		catch (RuntimeException e) {
			problems.add("event data is not JSON: " + data);
			return null;
		}
	}
}
