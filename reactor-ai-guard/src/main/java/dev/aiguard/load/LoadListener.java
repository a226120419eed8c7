package dev.aiguard.load;

/**
 * Told of every level change, on the governor's decision thread, after the new level is in force.
 * Must not block. What a listener throws goes to {@code Hooks.onErrorDropped}; the decision, the
 * other listeners and the streams go on.
 *
 * <pre>{@code
 * LoadGovernor.builder("chat").capacity(40)
 *     .listener(event -> log.warn("load {} -> {}: {}", event.from(), event.to(), event.detail()))
 *     .build();
 * }</pre>
 */
@FunctionalInterface
public interface LoadListener {

	/** The governor moved from {@code event.from()} to {@code event.to()}. */
	void levelChanged(LoadEvent event);
}
