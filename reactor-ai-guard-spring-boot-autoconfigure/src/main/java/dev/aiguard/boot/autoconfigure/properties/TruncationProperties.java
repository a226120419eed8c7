package dev.aiguard.boot.autoconfigure.properties;

import org.jspecify.annotations.Nullable;

/**
 * Prompt truncation on context-length errors, {@code aiguard.policies.<name>.truncation}.
 *
 * <pre>
 * truncation: { enabled: true, max-truncations: 1, shrink-factor: 0.6 }
 * </pre>
 */
public class TruncationProperties {

	/** Whether a too-long prompt is shrunk and sent again (call form only). */
	private boolean enabled;

	/** Truncations per request at most. Default: 2. */
	@Nullable
	private Integer maxTruncations;

	/** Output tokens kept free when the request sets no max tokens. Default: 1024. */
	@Nullable
	private Integer reservedOutputTokens;

	/** What a prompt shrinks to when the provider does not say the limit, between 0 and 1. Default: 0.75. */
	@Nullable
	private Double shrinkFactor;

	public boolean isEnabled() {
		return enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public @Nullable Integer getMaxTruncations() {
		return maxTruncations;
	}

	public void setMaxTruncations(@Nullable Integer maxTruncations) {
		this.maxTruncations = maxTruncations;
	}

	public @Nullable Integer getReservedOutputTokens() {
		return reservedOutputTokens;
	}

	public void setReservedOutputTokens(@Nullable Integer reservedOutputTokens) {
		this.reservedOutputTokens = reservedOutputTokens;
	}

	public @Nullable Double getShrinkFactor() {
		return shrinkFactor;
	}

	public void setShrinkFactor(@Nullable Double shrinkFactor) {
		this.shrinkFactor = shrinkFactor;
	}
}
