package dev.aiguard.boot.autoconfigure.properties;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;

import dev.aiguard.fallback.FallbackTrigger;
import org.jspecify.annotations.Nullable;

/**
 * The fallback ladder properties can express, {@code aiguard.policies.<name>.fallback}: a static
 * text. A ladder with steps that need code (a cache, another model) is set by an
 * {@code AiGuardPolicyCustomizer}, which replaces this one.
 *
 * <pre>
 * fallback: { static-text: "The assistant is busy, please try again shortly.", timeout: 2s }
 * </pre>
 */
public class FallbackProperties {

	/** A fixed answer served when every other step failed; unset: none. */
	@Nullable
	private String staticText;

	/**
	 * What enters the ladder. Default: every trigger but {@code CLIENT_ERROR}. Leave out
	 * {@code BUDGET} to hand a budget's refusal, with its retry-after, to the caller (an HTTP 429).
	 */
	private Set<FallbackTrigger> triggers = EnumSet.copyOf(FallbackTrigger.defaults());

	/** How long a step may take to its first chunk before the next step runs; unset: no limit. */
	@Nullable
	private Duration timeout;

	public @Nullable String getStaticText() {
		return staticText;
	}

	public void setStaticText(@Nullable String staticText) {
		this.staticText = staticText;
	}

	public Set<FallbackTrigger> getTriggers() {
		return triggers;
	}

	public void setTriggers(Set<FallbackTrigger> triggers) {
		this.triggers = triggers;
	}

	public @Nullable Duration getTimeout() {
		return timeout;
	}

	public void setTimeout(@Nullable Duration timeout) {
		this.timeout = timeout;
	}
}
