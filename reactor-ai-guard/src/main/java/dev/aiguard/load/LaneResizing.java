package dev.aiguard.load;

/**
 * What a {@link LoadGovernor} does with the permits its rules' lane factors take from a lane at a
 * level ({@link LoadRules#laneFactor(LoadLevel, dev.aiguard.core.Priority)}).
 *
 * <pre>{@code
 * // the lanes split the model's 64 streams; a level moves streams between them, never idles one
 * LoadGovernor governor = LoadGovernor.builder("chat")
 *     .capacity(50)
 *     .lanes(lanes, LaneResizing.KEEP_TOTAL)
 *     .build();
 * }</pre>
 */
public enum LaneResizing {

	/**
	 * Each lane is sized from its own built size alone; what a factor takes is gone, and the
	 * lanes' total shrinks with the level. Fits lanes whose sizes are not a share of one limit.
	 */
	SCALE,

	/**
	 * Each lane is sized as with {@link #SCALE}, then the permits taken from it go to the nearest
	 * more urgent lane the level keeps open (size above 0), so the lanes' total stays the built
	 * total: for lanes that split the model's concurrency, a level decides who uses the model, not
	 * how much of it is used. When no more urgent lane is open the taken permits are dropped.
	 * At the default rules' WARNING, P2's halved lane gives its other half to P1; at CRITICAL,
	 * P1's and P2's lanes go to P0. The default.
	 */
	KEEP_TOTAL
}
