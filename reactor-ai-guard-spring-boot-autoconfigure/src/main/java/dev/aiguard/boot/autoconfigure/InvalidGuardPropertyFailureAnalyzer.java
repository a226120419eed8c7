package dev.aiguard.boot.autoconfigure;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Explains an {@link InvalidGuardPropertyException} in Boot's startup failure report. The action
 * names where the keys are described as a user finds them: the guide's section and the starter's
 * configuration metadata (an IDE's completion), never a file of the project's repository.
 */
class InvalidGuardPropertyFailureAnalyzer extends AbstractFailureAnalyzer<InvalidGuardPropertyException> {

	/** Where every key is described, with its range and default. */
	static final String WHERE_DESCRIBED = "Every aiguard.* property is described, with its range and default, in the"
			+ " section \"Properties\" of the reactor-ai-guard Spring Boot guide and in your IDE's completion"
			+ " (the starter's configuration metadata).";

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, InvalidGuardPropertyException cause) {
		if (cause.isUnknown()) {
			String action = (cause.nearest() == null ? "Remove '" + cause.property() + "'"
					: "Rename '" + cause.property() + "' to '" + cause.nearest() + "' (or remove it)")
					+ ". " + WHERE_DESCRIBED;
			return new FailureAnalysis("Unknown property '" + cause.property() + "':\n\n    " + cause.reason(), action, cause);
		}
		String description = (cause.value() == null ? "Invalid setting under '" + cause.property() + "'"
				: "Invalid value '" + cause.value() + "' for property '" + cause.property() + "'") + ":\n\n    "
				+ cause.reason();
		String action = "Update '" + cause.property() + "' in your application's configuration. " + WHERE_DESCRIBED;
		return new FailureAnalysis(description, action, cause);
	}
}
