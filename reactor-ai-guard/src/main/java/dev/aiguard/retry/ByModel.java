package dev.aiguard.retry;

import java.util.function.Function;

import dev.aiguard.chat.ChatRequest;

/** {@link ContinuationStrategy#byModel(Function)}. */
final class ByModel implements ContinuationStrategy {

	private final Function<String, ContinuationStrategy> chooser;

	ByModel(Function<String, ContinuationStrategy> chooser) {
		this.chooser = chooser;
	}

	@Override
	public ChatRequest continuation(ChatRequest original, String partialText) {
		return choose(original.model()).continuation(original, partialText);
	}

	@Override
	public ChatRequest continuation(ChatRequest original, String partialText, boolean partialHasToolCalls) {
		return choose(original.model()).continuation(original, partialText, partialHasToolCalls);
	}

	private ContinuationStrategy choose(String model) {
		ContinuationStrategy chosen = chooser.apply(model);
		return chosen != null ? chosen : USER_CONTINUE;
	}

	@Override
	public String toString() {
		return "byModel(" + chooser + ")";
	}
}
