package dev.aiguard.boot.autoconfigure;

import static dev.aiguard.boot.autoconfigure.PropertyChecks.make;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.set;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.with;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.aiguard.GuardPolicy;
import dev.aiguard.boot.autoconfigure.properties.FallbackProperties;
import dev.aiguard.boot.autoconfigure.properties.MidStreamProperties;
import dev.aiguard.boot.autoconfigure.properties.RetryBudgetProperties;
import dev.aiguard.boot.autoconfigure.properties.RetryProperties;
import dev.aiguard.boot.autoconfigure.properties.StallProperties;
import dev.aiguard.boot.autoconfigure.properties.TruncationProperties;
import dev.aiguard.boot.autoconfigure.properties.ValidationProperties;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.retry.ContinuationStrategy;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.truncation.TruncationSpec;
import dev.aiguard.validation.OutputValidator;
import dev.aiguard.validation.RepetitionDetector;
import dev.aiguard.validation.Validators;
import org.jspecify.annotations.Nullable;

/**
 * A policy's per-request settings ({@code stall}, {@code retry}, {@code truncation},
 * {@code mid-stream}, {@code validate}, {@code fallback}) and the shared retry budget → the
 * library's specs, each value checked by the library under its full property name.
 */
final class PolicySpecs {

	private PolicySpecs() {
	}

	static RetryBudget retryBudget(RetryBudgetProperties b) {
		String at = AiGuardProperties.PREFIX + ".retry-budget";
		return make(at, () -> RetryBudget.of(b.getRatio(), b.getMinRetriesPerSecond(), b.getWindow()));
	}

	static StallSpec stall(String at, StallProperties s) {
		StallSpec spec = StallSpec.defaults();
		spec = with(at + ".first-token-timeout", s.getFirstTokenTimeout(), spec, StallSpec::firstTokenTimeout);
		spec = with(at + ".idle-timeout", s.getIdleTimeout(), spec, StallSpec::idleTimeout);
		spec = with(at + ".max-duration", s.getMaxDuration(), spec, StallSpec::maxDuration);
		spec = with(at + ".heartbeats-extend-idle", s.getHeartbeatsExtendIdle(), spec, StallSpec::heartbeatsExtendIdle);
		spec = with(at + ".require-terminal", s.getRequireTerminal(), spec, StallSpec::requireTerminal);
		return spec;
	}

	static RetryRules retry(String at, RetryProperties r) {
		RetryRules rules = RetryRules.defaults();
		rules = with(at + ".max-attempts", r.getMaxAttempts(), rules, RetryRules::maxAttempts);
		rules = with(at + ".min-backoff", r.getMinBackoff(), rules, RetryRules::minBackoff);
		rules = with(at + ".max-backoff", r.getMaxBackoff(), rules, RetryRules::maxBackoff);
		rules = with(at + ".max-retry-after", r.getMaxRetryAfter(), rules, RetryRules::maxRetryAfter);
		rules = with(at + ".jitter", r.getJitter(), rules, RetryRules::jitter);
		return rules;
	}

	static TruncationSpec truncation(String at, TruncationProperties t) {
		TruncationSpec spec = TruncationSpec.defaults();
		spec = with(at + ".max-truncations", t.getMaxTruncations(), spec, TruncationSpec::maxTruncations);
		spec = with(at + ".reserved-output-tokens", t.getReservedOutputTokens(), spec, TruncationSpec::reservedOutputTokens);
		spec = with(at + ".shrink-factor", t.getShrinkFactor(), spec, TruncationSpec::shrinkFactor);
		return spec;
	}

	static MidStreamPolicy<?> midStream(String at, MidStreamProperties m) {
		switch (m.getMode()) {
			case NOTICE:
				if (m.getNotice() == null || m.getNotice().isBlank()) {
					throw new InvalidGuardPropertyException(at + ".notice", m.getNotice(),
							"mode notice needs the notice text", null);
				}
				return make(at + ".notice", m.getNotice(), MidStreamPolicy::notice);
			case CONTINUE:
				ContinuationStrategy strategy = m.getContinuation() == MidStreamProperties.ContinuationMode.ASSISTANT_PREFILL
						? ContinuationStrategy.ASSISTANT_PREFILL : ContinuationStrategy.USER_CONTINUE;
				return make(at + ".max-continuations", m.getMaxContinuations(),
						n -> MidStreamPolicy.continueWith(strategy, n));
			default:
				return MidStreamPolicy.fail();
		}
	}

	static void validate(String at, ValidationProperties v, GuardPolicy.Builder b) {
		if (v.isEmptyAnswer()) {
			b.validate(Validators.emptyAnswer());
		}
		List<String> reasons = v.getFinishReasons();
		if (!reasons.isEmpty()) {
			OutputValidator finish = make(at + ".finish-reasons", reasons,
					r -> Validators.finishReason(r.toArray(String[]::new)));
			b.validate(finish);
		}
		ValidationProperties.Repetition r = v.getRepetition();
		String rat = at + ".repetition";
		if (!r.isEnabled()) {
			for (Map.Entry<String, Integer> setting : repetitionSettings(r).entrySet()) {
				if (setting.getValue() != null) {
					throw new InvalidGuardPropertyException(rat + "." + setting.getKey(), setting.getValue(),
							"the repetition detector is off: set " + rat + ".enabled=true", null);
				}
			}
			return;
		}
		RepetitionDetector detector = RepetitionDetector.defaults();
		detector = with(rat + ".ngram", r.getNgram(), detector, RepetitionDetector::ngram);
		detector = with(rat + ".max-period", r.getMaxPeriod(), detector, RepetitionDetector::maxPeriod);
		detector = with(rat + ".min-repeats", r.getMinRepeats(), detector, RepetitionDetector::minRepeats);
		detector = with(rat + ".min-span", r.getMinSpan(), detector, RepetitionDetector::minSpan);
		b.validateStreaming(detector);
	}

	/** @return the detector's settings by property name, in order, unset ones as {@code null} */
	private static Map<String, @Nullable Integer> repetitionSettings(ValidationProperties.Repetition r) {
		Map<String, @Nullable Integer> settings = new LinkedHashMap<>();
		settings.put("ngram", r.getNgram());
		settings.put("max-period", r.getMaxPeriod());
		settings.put("min-repeats", r.getMinRepeats());
		settings.put("min-span", r.getMinSpan());
		return settings;
	}

	static FallbackChain<ChatChunk> fallback(String at, FallbackProperties f) {
		FallbackChain.Builder<ChatChunk> chain = FallbackChain.<ChatChunk>builder();
		String text = Objects.requireNonNull(f.getStaticText());
		chain.step(make(at + ".static-text", text, Fallback::staticText));
		set(at + ".triggers", f.getTriggers(), chain::triggers);
		set(at + ".timeout", f.getTimeout(), chain::timeout);
		return make(at, chain::build);
	}
}
