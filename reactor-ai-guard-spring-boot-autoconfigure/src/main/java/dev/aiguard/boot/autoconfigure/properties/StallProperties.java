package dev.aiguard.boot.autoconfigure.properties;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

/**
 * Stall deadlines of a policy, {@code aiguard.policies.<name>.stall}; an unset deadline does not
 * apply.
 *
 * <pre>
 * stall: { first-token-timeout: 10s, idle-timeout: 30s, max-duration: 5m }
 * </pre>
 */
public class StallProperties {

	/** From subscription to the first content chunk; unset: no first-token deadline. */
	@Nullable
	private Duration firstTokenTimeout;

	/** Between content chunks once content has started; unset: no idle deadline. */
	@Nullable
	private Duration idleTimeout;

	/** From subscription to the end of the answer; unset: no overall deadline. */
	@Nullable
	private Duration maxDuration;

	/** Whether heartbeats (pings, comments) extend the idle deadline. Default: false. */
	@Nullable
	private Boolean heartbeatsExtendIdle;

	/** Whether a stream that completes without a terminal marker or finish reason is INCOMPLETE. Default: true. */
	@Nullable
	private Boolean requireTerminal;

	public @Nullable Duration getFirstTokenTimeout() {
		return firstTokenTimeout;
	}

	public void setFirstTokenTimeout(@Nullable Duration firstTokenTimeout) {
		this.firstTokenTimeout = firstTokenTimeout;
	}

	public @Nullable Duration getIdleTimeout() {
		return idleTimeout;
	}

	public void setIdleTimeout(@Nullable Duration idleTimeout) {
		this.idleTimeout = idleTimeout;
	}

	public @Nullable Duration getMaxDuration() {
		return maxDuration;
	}

	public void setMaxDuration(@Nullable Duration maxDuration) {
		this.maxDuration = maxDuration;
	}

	public @Nullable Boolean getHeartbeatsExtendIdle() {
		return heartbeatsExtendIdle;
	}

	public void setHeartbeatsExtendIdle(@Nullable Boolean heartbeatsExtendIdle) {
		this.heartbeatsExtendIdle = heartbeatsExtendIdle;
	}

	public @Nullable Boolean getRequireTerminal() {
		return requireTerminal;
	}

	public void setRequireTerminal(@Nullable Boolean requireTerminal) {
		this.requireTerminal = requireTerminal;
	}
}
