package dev.aiguard.boot.autoconfigure.properties;

import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * The output validators of a policy ({@code dev.aiguard.validation}),
 * {@code aiguard.policies.<name>.validate}; an answer they reject is an attempt with outcome
 * {@code INVALID}. Validators that need code (a refusal pattern, a JSON schema, one's own) are
 * added by an {@code AiGuardPolicyCustomizer}.
 *
 * <pre>
 * validate:
 *   empty-answer: true
 *   finish-reasons: content_filter
 *   repetition: { enabled: true }
 * </pre>
 */
public class ValidationProperties {

	/** Whether an answer without content (no text, whitespace only, no tool call) is invalid. */
	private boolean emptyAnswer;

	/** Finish reasons that make an answer invalid, e.g. {@code content_filter}; empty: none checked. */
	private List<String> finishReasons = new ArrayList<>();

	/** The repetition detector, cutting an answer that loops. */
	private Repetition repetition = new Repetition();

	public boolean isEmptyAnswer() {
		return emptyAnswer;
	}

	public void setEmptyAnswer(boolean emptyAnswer) {
		this.emptyAnswer = emptyAnswer;
	}

	public List<String> getFinishReasons() {
		return finishReasons;
	}

	public void setFinishReasons(List<String> finishReasons) {
		this.finishReasons = finishReasons;
	}

	public Repetition getRepetition() {
		return repetition;
	}

	public void setRepetition(Repetition repetition) {
		this.repetition = repetition;
	}

	/** The repetition detector's settings; an unset one keeps the detector's default. */
	public static class Repetition {

		/** Whether the detector watches the policy's answers. */
		private boolean enabled;

		/** Chunks per n-gram, 1 to 32. Default: 4. */
		@Nullable
		private Integer ngram;

		/** Longest repeated unit, in chunks, 1 to 4096. Default: 64. */
		@Nullable
		private Integer maxPeriod;

		/** Repeats in a row before the cut, at least 2. Default: 5. */
		@Nullable
		private Integer minRepeats;

		/** Chunks the repetition spans at least, at least 2. Default: 64. */
		@Nullable
		private Integer minSpan;

		public boolean isEnabled() {
			return enabled;
		}

		public void setEnabled(boolean enabled) {
			this.enabled = enabled;
		}

		public @Nullable Integer getNgram() {
			return ngram;
		}

		public void setNgram(@Nullable Integer ngram) {
			this.ngram = ngram;
		}

		public @Nullable Integer getMaxPeriod() {
			return maxPeriod;
		}

		public void setMaxPeriod(@Nullable Integer maxPeriod) {
			this.maxPeriod = maxPeriod;
		}

		public @Nullable Integer getMinRepeats() {
			return minRepeats;
		}

		public void setMinRepeats(@Nullable Integer minRepeats) {
			this.minRepeats = minRepeats;
		}

		public @Nullable Integer getMinSpan() {
			return minSpan;
		}

		public void setMinSpan(@Nullable Integer minSpan) {
			this.minSpan = minSpan;
		}
	}
}
