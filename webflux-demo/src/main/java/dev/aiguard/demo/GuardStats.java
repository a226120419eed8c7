package dev.aiguard.demo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;

import dev.aiguard.GuardReport;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Source;
import org.jspecify.annotations.Nullable;

/**
 * What the page's live panel shows about answers: counts by outcome (of requests and of their
 * attempts: an empty answer the ladder replaced is a request answered {@code SUCCESS} from
 * {@code STATIC} after two {@code INVALID} attempts), source and client, and the last few requests. Fed by the report listener of each client's guard ({@link #listener}), once per
 * request after it ended; lock-free, so it never holds up the thread that ends a stream.
 *
 * <pre>{@code
 * GuardPolicy.builder("chat").onReport(stats.listener(AnswerClient.LIBRARY))...
 * }</pre>
 */
final class GuardStats {

	/** How many recent requests are kept for the chart. */
	static final int RECENT = 40;

	private final LongAdder requests = new LongAdder();
	private final LongAdder attempts = new LongAdder();
	private final LongAdder tokens = new LongAdder();
	private final Map<Outcome, LongAdder> outcomes = new EnumMap<>(Outcome.class);
	private final Map<Outcome, LongAdder> attemptOutcomes = new EnumMap<>(Outcome.class);
	private final Map<Source, LongAdder> sources = new EnumMap<>(Source.class);
	private final Map<AnswerClient, LongAdder> clients = new EnumMap<>(AnswerClient.class);
	private final ConcurrentLinkedDeque<Recent> recent = new ConcurrentLinkedDeque<>();
	private final AtomicInteger recentSize = new AtomicInteger();

	GuardStats() {
		for (Outcome o : Outcome.values()) {
			outcomes.put(o, new LongAdder());
			attemptOutcomes.put(o, new LongAdder());
		}
		for (Source s : Source.values()) {
			sources.put(s, new LongAdder());
		}
		for (AnswerClient c : AnswerClient.values()) {
			clients.put(c, new LongAdder());
		}
	}

	/**
	 * One finished request.
	 *
	 * @param at wall-clock end, epoch milliseconds
	 * @param client the client that asked the model: {@code library} or {@code spring-ai}
	 * @param timeToFirstTokenMs {@code null} when no token arrived
	 * @param attemptOutcomes the outcome of each attempt at the model, in order
	 */
	record Recent(long at, String client, String priority, String outcome, String source,
			@Nullable Long timeToFirstTokenMs, long tokens, long durationMs, int attempts, @Nullable String finishReason,
			List<String> attemptOutcomes) {
	}

	/** @return the report listener of the guard that answers through {@code client} */
	Consumer<GuardReport> listener(AnswerClient client) {
		return report -> accept(report, client);
	}

	private void accept(GuardReport report, AnswerClient client) {
		requests.increment();
		clients.get(client).increment();
		attempts.add(Math.max(1, report.attempts().size()));
		tokens.add(report.tokens());
		outcomes.get(report.outcome()).increment();
		List<String> tried = new ArrayList<>(report.attempts().size());
		for (GuardReport.Attempt attempt : report.attempts()) {
			attemptOutcomes.get(attempt.outcome()).increment();
			tried.add(attempt.outcome().name());
		}
		sources.get(report.source()).increment();
		Duration ttft = report.timeToFirstToken();
		recent.addLast(new Recent(System.currentTimeMillis(), client.id(), report.priority().name(), report.outcome().name(),
				report.source().name(), ttft == null ? null : ttft.toMillis(), report.tokens(),
				report.duration().toMillis(), report.attempts().size(),
				ChatEvents.finishReason(report.finishReason()), List.copyOf(tried)));
		if (recentSize.incrementAndGet() > RECENT) {
			recent.pollFirst();
			recentSize.decrementAndGet();
		}
	}

	long requests() {
		return requests.sum();
	}

	long attempts() {
		return attempts.sum();
	}

	long tokens() {
		return tokens.sum();
	}

	Map<String, Long> outcomes() {
		Map<String, Long> m = new LinkedHashMap<>();
		outcomes.forEach((k, v) -> m.put(k.name(), v.sum()));
		return m;
	}

	/** @return attempts at the model by their outcome */
	Map<String, Long> attemptOutcomes() {
		Map<String, Long> m = new LinkedHashMap<>();
		attemptOutcomes.forEach((k, v) -> m.put(k.name(), v.sum()));
		return m;
	}

	Map<String, Long> sources() {
		Map<String, Long> m = new LinkedHashMap<>();
		sources.forEach((k, v) -> m.put(k.name(), v.sum()));
		return m;
	}

	/** @return requests per client, by the client's id */
	Map<String, Long> clients() {
		Map<String, Long> m = new LinkedHashMap<>();
		clients.forEach((k, v) -> m.put(k.id(), v.sum()));
		return m;
	}

	/** @return the recent requests, oldest first */
	List<Recent> recent() {
		List<Recent> list = new ArrayList<>(RECENT);
		for (Iterator<Recent> it = recent.iterator(); it.hasNext();) {
			list.add(it.next());
		}
		return list;
	}
}
