package dev.aiguard.load;

import java.util.Objects;

import dev.aiguard.core.Priority;

/**
 * Why a request was sent to the fallback ladder's cheaper steps before the live model: the load
 * governor's level prescribes {@link #action()} for its priority. The guard hands it to the steps
 * as the {@code FallbackRequest}'s cause (with the trigger {@code LOAD}); a subscriber sees it
 * only if a step fails with it. Cheap: no stack trace.
 */
public final class DegradedByLoadException extends RuntimeException {

	private static final long serialVersionUID = 1L;

	private final Priority priority;
	private final LoadLevel level;
	private final LoadAction action;

	/**
	 * @param priority the request's priority
	 * @param level the governor's level when the request arrived
	 * @param action what the level prescribes for the priority
	 */
	public DegradedByLoadException(Priority priority, LoadLevel level, LoadAction action) {
		super(priority + " served by " + action + " at load level " + level, null, false, false);
		this.priority = Objects.requireNonNull(priority, "priority");
		this.level = Objects.requireNonNull(level, "level");
		this.action = Objects.requireNonNull(action, "action");
	}

	/** @return the request's priority */
	public Priority priority() {
		return priority;
	}

	/** @return the governor's level when the request arrived */
	public LoadLevel level() {
		return level;
	}

	/** @return what the level prescribes for the priority */
	public LoadAction action() {
		return action;
	}
}
