package dev.aiguard.core;

/** Which deadline of a {@link dev.aiguard.stall.StallSpec} a stalled stream passed. */
public enum StallPhase {
	/** No content arrived within {@code firstTokenTimeout} of subscription. */
	FIRST_TOKEN,
	/** Content had started, then none arrived for {@code idleTimeout}. */
	IDLE,
	/** The whole stream took longer than {@code maxDuration}. */
	MAX_DURATION
}
