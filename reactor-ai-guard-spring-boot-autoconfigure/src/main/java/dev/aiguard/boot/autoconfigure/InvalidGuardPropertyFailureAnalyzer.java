package dev.aiguard.boot.autoconfigure;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/** Explains an {@link InvalidGuardPropertyException} in Boot's startup failure report. */
class InvalidGuardPropertyFailureAnalyzer extends AbstractFailureAnalyzer<InvalidGuardPropertyException> {

	@Override
	protected FailureAnalysis analyze(Throwable rootFailure, InvalidGuardPropertyException cause) {
		if (cause.isUnknown()) {
			String action = (cause.nearest() == null ? "Remove '" + cause.property() + "'"
					: "Rename '" + cause.property() + "' to '" + cause.nearest() + "' (or remove it)")
					+ ". docs/spring-boot.md lists every aiguard.* property.";
			return new FailureAnalysis("Unknown property '" + cause.property() + "':\n\n    " + cause.reason(), action, cause);
		}
		String description = (cause.value() == null ? "Invalid setting under '" + cause.property() + "'"
				: "Invalid value '" + cause.value() + "' for property '" + cause.property() + "'") + ":\n\n    "
				+ cause.reason();
		String action = "Update '" + cause.property() + "' in your application's configuration. "
				+ "docs/spring-boot.md lists every aiguard.* property with its range and default.";
		return new FailureAnalysis(description, action, cause);
	}
}
