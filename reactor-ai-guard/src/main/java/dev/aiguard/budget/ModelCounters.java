package dev.aiguard.budget;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.aiguard.chat.ChatRequest;
import dev.aiguard.truncation.PromptTooLargeException;
import dev.aiguard.truncation.PromptTruncator;
import dev.aiguard.truncation.TokenCounter;
import org.jspecify.annotations.Nullable;

/**
 * A request's model and the counter its prompt is counted with, and the prompt cap applied with that
 * counter. The counter of a model is looked up once (the longest matching name) and kept.
 */
final class ModelCounters {

	private final BudgetSpec spec;
	private final ConcurrentHashMap<String, TokenCounter> byModel = new ConcurrentHashMap<>();

	ModelCounters(BudgetSpec spec) {
		this.spec = spec;
	}

	String modelOf(@Nullable ChatRequest request) {
		String model = request != null ? request.model() : null;
		if (model != null && !model.isBlank()) {
			return model;
		}
		String d = spec.defaultModel();
		return d != null ? d : "unknown";
	}

	TokenCounter counterFor(String model) {
		Map<String, TokenCounter> own = spec.counters();
		if (own.isEmpty()) {
			return spec.counter();
		}
		TokenCounter c = byModel.get(model);
		if (c == null) {
			c = byModel.computeIfAbsent(model, m -> {
				String best = null;
				for (String prefix : own.keySet()) {
					if (m.startsWith(prefix) && (best == null || prefix.length() > best.length())) {
						best = prefix;
					}
				}
				return best != null ? own.get(best) : spec.counter();
			});
		}
		return c;
	}

	int count(ChatRequest request, String model) {
		return counterFor(model).count(request.messages());
	}

	ChatRequest capPrompt(ChatRequest request, int counted, String model, @Nullable PromptTruncator truncator) {
		int cap = spec.promptCap();
		if (cap == 0 || counted <= cap) {
			return request;
		}
		if (spec.promptCapAction() == PromptCapAction.REFUSE) {
			throw new PromptTooLargeException(cap, counted);
		}
		TokenCounter counter = counterFor(model);
		ChatRequest shorter = (truncator != null ? truncator : PromptTruncator.tokenBudget()).truncate(request, cap, counter);
		if (shorter == null) {
			throw new PromptTooLargeException(cap, counted);
		}
		int after = counter.count(shorter.messages());
		if (after > cap) {
			throw new PromptTooLargeException(cap, after);
		}
		return shorter;
	}
}
