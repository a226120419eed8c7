package dev.aiguard.demo;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackRequest;
import org.jspecify.annotations.Nullable;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;

/**
 * The ladder's {@code LIGHTWEIGHT} rung: canned answers for questions about the guard itself,
 * picked by a keyword of the last user message. Anything else passes to the next rung. Pure
 * in-memory work, so it never blocks.
 */
final class DemoFaq {

	private final Map<String, Fallback<ChatChunk>> answers = new LinkedHashMap<>();

	DemoFaq() {
		answer("breaker", "The circuit breaker counts failed, stalled and truncated streams. When too many fail it "
				+ "opens, and answers come from the fallbacks until a few probe calls succeed again.");
		answer("stall", "A stall is a stream that stops sending tokens but keeps its socket open. The guard "
				+ "watches the first token and the gap between tokens, and ends a silent stream on time.");
		answer("retry", "The guard retries only before the first token reaches you, waits as long as the "
				+ "provider asks, and never spends more retries than its shared budget allows.");
		answer("lane", "Each priority has its own lane of permits, so interactive chat never queues behind "
				+ "batch work; an urgent request may borrow an idle permit of a less urgent lane.");
		answer("fallback", "When the model cannot answer, the guard walks a ladder: a cached answer, then a "
				+ "canned one like this, then a fixed message. Every answer says where it came from.");
	}

	private void answer(String keyword, String text) {
		answers.put(keyword, Fallback.staticText(text));
	}

	/** @return the rung: non-blocking, empty (pass) when no keyword matches */
	Fallback<ChatChunk> step() {
		return Fallback.lightweight(this::answer, false);
	}

	private Publisher<ChatChunk> answer(FallbackRequest request) {
		String question = lastUserText(request.chatRequest()).toLowerCase(Locale.ROOT);
		for (Map.Entry<String, Fallback<ChatChunk>> e : answers.entrySet()) {
			if (question.contains(e.getKey())) {
				return e.getValue().answer(request);
			}
		}
		return Flux.empty();
	}

	private static String lastUserText(@Nullable ChatRequest request) {
		if (request == null) {
			return "";
		}
		for (int i = request.messages().size() - 1; i >= 0; i--) {
			ChatMessage m = request.messages().get(i);
			if (m.role() == ChatMessage.Role.USER) {
				return m.content();
			}
		}
		return "";
	}
}
