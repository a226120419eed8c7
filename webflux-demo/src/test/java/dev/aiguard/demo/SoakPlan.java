package dev.aiguard.demo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import dev.aiguard.core.Priority;
import dev.aiguard.test.mock.MockAnswers;
import org.jspecify.annotations.Nullable;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * What {@link FaultSoakTest} does, drawn from one seed: the mock's fault profile for each phase,
 * and for each stream its question, priority and how its client reads. Every draw depends on the
 * seed and the phase or stream number only, never on timing, so a seed names the same schedule
 * and the same clients on every run (which phase a stream lands in still depends on the machine).
 */
final class SoakPlan {

	/** The mock's misbehaviour during one phase; the whole profile is global, so a phase applies to every call. */
	enum Fault {
		HEALTHY, STALL, DROP, OMIT_TERMINAL, ERRORS, CONTEXT_LIMIT, SLOW_FIRST_TOKEN, LATE_FIRST_TOKEN, SLOW_TOKENS,
		ERRORS_AND_STALL
	}

	/** How a client reads its stream. */
	enum Reader {
		/** reads everything as fast as it comes */
		STEADY,
		/** asks for one event at a time and takes a while over each */
		SLOW,
		/** closes the response after a few tokens */
		CANCEL_AFTER_TOKENS,
		/** closes the response a while after the {@code meta} event */
		CANCEL_AFTER_TIME
	}

	/** What a stream asks. Every question starts with {@code #seq}, so realtime answers are numbered. */
	enum Question {
		/** a question nobody asked before */
		FRESH,
		/** one of a few questions asked again and again: the response cache can answer them */
		POPULAR,
		/** names a topic of the demo's canned answers: the LIGHTWEIGHT rung can answer it */
		TOPIC,
		/** a short question after two long turns: shrinkable when the context limit bites */
		LONG_HISTORY,
		/** one long question: cannot be shrunk to fit a context limit */
		OVERSIZED
	}

	/**
	 * One phase: the fault, the {@code PUT /api/faults} body that sets it, and the share of the
	 * phase it is on. A fault on all the time trips the breaker within a few calls and then only
	 * the fallbacks answer; on part of the time, realtime streams meet it too.
	 *
	 * @param duty share of each cycle of {@link #CYCLE_SLICES} slices the fault is on: 1/4, 1/2 or all of it
	 */
	record Phase(int number, Fault fault, double duty, String profile) {

		/** @return whether the fault is on in the {@code slice}-th slice of the phase */
		boolean faultyIn(long slice) {
			return fault != Fault.HEALTHY && slice % CYCLE_SLICES < Math.round(duty * CYCLE_SLICES);
		}

		@Override
		public String toString() {
			return "phase " + number + " " + fault + (fault == Fault.HEALTHY ? "" : " " + profile + " on "
					+ Math.round(duty * 100) + " %");
		}
	}

	/** A cycle of a phase: the fault is on for its first slices, off for the rest. */
	static final int CYCLE_SLICES = 4;

	/** Mostly part-time faults: one on all the time keeps the breaker open, and then only the ladder answers. */
	private static final double[] DUTIES = { 0.25, 0.25, 0.5, 1.0 };

	/**
	 * One stream.
	 *
	 * @param label names the numbered answer: {@code <label>.1} to {@code <label>.<count>}
	 * @param topic the canned answer's keyword a {@link Question#TOPIC} question names, else {@code null}
	 * @param cancelAfterTokens for {@link Reader#CANCEL_AFTER_TOKENS}
	 * @param cancelAfter for {@link Reader#CANCEL_AFTER_TIME}, counted from the {@code meta} event
	 * @param readDelay for {@link Reader#SLOW}: time spent on each event
	 */
	record Stream(long number, Priority priority, Question question, String label, int count,
			@Nullable String topic, String body, Reader reader, int cancelAfterTokens, Duration cancelAfter,
			Duration readDelay) {

		/** @return the realtime answer, token by token, as the mock numbers it */
		List<String> expectedTokens() {
			return MockAnswers.tokens(MockAnswers.numbered(label, count));
		}
	}

	/** Words that match none of the canned answers' keywords (breaker, stall, retry, lane, fallback). */
	private static final String[] FILLER = { "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
			"iota", "kappa", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi",
			"omega" };

	/** The keywords of the demo's canned answers ({@code DemoFaq}). */
	static final List<String> TOPICS = List.of("breaker", "stall", "retry", "lane", "fallback");

	private static final int POPULAR_QUESTIONS = 8;

	private final long seed;
	private final JsonMapper json;
	private final Duration firstTokenTimeout;
	private final Duration idleTimeout;

	/**
	 * @param firstTokenTimeout the guard's first-token deadline: slow first tokens are drawn on either side of it
	 * @param idleTimeout the guard's idle deadline: slow token gaps stay below it
	 */
	SoakPlan(long seed, JsonMapper json, Duration firstTokenTimeout, Duration idleTimeout) {
		this.seed = seed;
		this.json = json;
		this.firstTokenTimeout = firstTokenTimeout;
		this.idleTimeout = idleTimeout;
	}

	/**
	 * @return every fault once, healthy first, each on half the time: the warm-up loads every code
	 *         path before the heap is measured
	 */
	List<Phase> warmUpPhases() {
		List<Phase> phases = new ArrayList<>();
		for (Fault fault : Fault.values()) {
			phases.add(phase(-1 - fault.ordinal(), fault, 0.5));
		}
		return phases;
	}

	/** @return the {@code number}-th phase of the main run: healthy three times as often as any one fault */
	Phase mainPhase(int number) {
		SplittableRandom random = random(0x5eed_0001L, number);
		int draw = random.nextInt(Fault.values().length + 2);
		Fault fault = draw < 3 ? Fault.HEALTHY : Fault.values()[draw - 2];
		return phase(number, fault, DUTIES[random.nextInt(DUTIES.length)]);
	}

	private Phase phase(int number, Fault fault, double duty) {
		SplittableRandom random = random(0x5eed_0002L, number);
		ObjectNode p = json.createObjectNode();
		switch (fault) {
			case HEALTHY -> {
			}
			case STALL -> p.put("stallAfterTokens", random.nextInt(0, 13));
			case DROP -> p.put("dropAfterTokens", random.nextInt(0, 13));
			case OMIT_TERMINAL -> p.put("omitTerminal", true);
			case ERRORS -> errors(p, random, new double[] { 0.3, 0.6, 1.0 });
			case CONTEXT_LIMIT -> p.put("contextLimitTokens", random.nextInt(120, 260));
			case SLOW_FIRST_TOKEN -> p.put("firstTokenDelayMs", random.nextLong(firstTokenTimeout.toMillis() / 4,
					firstTokenTimeout.toMillis() * 3 / 4));
			case LATE_FIRST_TOKEN -> p.put("firstTokenDelayMs", firstTokenTimeout.toMillis()
					+ random.nextLong(50, firstTokenTimeout.toMillis() / 2 + 100));
			case SLOW_TOKENS -> p.put("tokenIntervalMs", random.nextLong(idleTimeout.toMillis() / 20,
					idleTimeout.toMillis() / 6));
			case ERRORS_AND_STALL -> {
				errors(p, random, new double[] { 0.3, 0.5 });
				p.put("stallAfterTokens", random.nextInt(0, 13));
			}
		}
		return new Phase(number, fault, fault == Fault.HEALTHY ? 0 : duty, json.writeValueAsString(p));
	}

	private static void errors(ObjectNode p, SplittableRandom random, double[] rates) {
		int[] statuses = { 429, 500, 529 };
		p.put("errorRate", rates[random.nextInt(rates.length)]);
		p.put("errorStatus", statuses[random.nextInt(statuses.length)]);
		p.put("retryAfterSeconds", random.nextInt(2));
	}

	/** @return the last user message of a {@link Question#TOPIC} question about {@code topic} */
	static String topicQuestion(String label, int count, String topic) {
		return MockAnswers.numbered(label, count) + " and how does the " + topic + " help";
	}

	/** @return the {@code number}-th stream */
	Stream stream(long number) {
		SplittableRandom random = random(0x5eed_0003L, number);
		Priority priority = Priority.values()[random.nextInt(Priority.values().length)];

		int q = random.nextInt(100);
		Question question = q < 65 ? Question.FRESH : q < 77 ? Question.POPULAR : q < 85 ? Question.TOPIC
				: q < 96 ? Question.LONG_HISTORY : Question.OVERSIZED;
		String label;
		int count;
		if (question == Question.POPULAR) {
			int which = random.nextInt(POPULAR_QUESTIONS);
			label = "pop" + which;
			count = 12 + 4 * which;
		}
		else {
			label = "s" + number;
			count = random.nextInt(8, 49);
		}
		String last = MockAnswers.numbered(label, count);
		String topic = null;
		if (question == Question.TOPIC) {
			topic = TOPICS.get(random.nextInt(TOPICS.size()));
			last = topicQuestion(label, count, topic);
		}
		else if (question == Question.OVERSIZED) {
			last += ' ' + filler(random, 250);
		}
		ObjectNode body = json.createObjectNode();
		ArrayNode messages = body.putArray("messages");
		if (question == Question.LONG_HISTORY) {
			messages.addObject().put("role", "system").put("content", "Answer briefly.");
			messages.addObject().put("role", "user").put("content", filler(random, 120));
			messages.addObject().put("role", "assistant").put("content", filler(random, 120));
		}
		messages.addObject().put("role", "user").put("content", last);
		if (question != Question.POPULAR) {
			// a popular question's body stays the same whatever the priority, like a cache key should
			body.put("priority", priority.name());
		}

		int r = random.nextInt(100);
		Reader reader = r < 60 ? Reader.STEADY : r < 75 ? Reader.SLOW : r < 88 ? Reader.CANCEL_AFTER_TOKENS
				: Reader.CANCEL_AFTER_TIME;
		return new Stream(number, priority, question, label, count, topic, json.writeValueAsString(body), reader,
				random.nextInt(1, 9), Duration.ofMillis(random.nextLong(20, 1500)),
				Duration.ofMillis(random.nextLong(3, 25)));
	}

	/** @return a plain question read to the end: what the recovery check sends to let the breaker probe */
	Stream probe(long number) {
		String label = "probe" + number;
		ObjectNode body = json.createObjectNode();
		body.putArray("messages").addObject().put("role", "user").put("content", MockAnswers.numbered(label, 10));
		body.put("priority", Priority.P0.name());
		return new Stream(number, Priority.P0, Question.FRESH, label, 10, null, json.writeValueAsString(body),
				Reader.STEADY, 0, Duration.ZERO, Duration.ZERO);
	}

	private static String filler(SplittableRandom random, int words) {
		StringBuilder b = new StringBuilder();
		for (int i = 0; i < words; i++) {
			if (i > 0) {
				b.append(' ');
			}
			b.append(FILLER[random.nextInt(FILLER.length)]);
		}
		return b.toString();
	}

	/** A generator for one purpose and one number, independent of every other draw. */
	private SplittableRandom random(long purpose, long number) {
		long z = seed ^ purpose * 0x9E3779B97F4A7C15L ^ number * 0xBF58476D1CE4E5B9L;
		return new SplittableRandom(z);
	}
}
