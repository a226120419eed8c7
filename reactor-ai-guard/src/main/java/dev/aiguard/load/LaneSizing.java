package dev.aiguard.load;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.core.Priority;
import dev.aiguard.internal.Callbacks;
import org.jspecify.annotations.Nullable;

/**
 * The lane sizes that follow the governor's level: each lane's built size times the rules'
 * factor at the level, with the permits a factor takes passed on as {@link LaneResizing} says.
 */
final class LaneSizing {

	private static final Priority[] PRIORITIES = Priority.values();

	@Nullable
	private final PriorityLanes lanes;
	private final LaneResizing resizing;
	private final LoadRules rules;
	/** The lanes' built sizes, by priority; zeros without lanes. */
	private final int[] base = new int[PRIORITIES.length];

	LaneSizing(@Nullable PriorityLanes lanes, LaneResizing resizing, LoadRules rules) {
		this.lanes = lanes;
		this.resizing = resizing;
		this.rules = rules;
		if (lanes != null) {
			for (Priority p : PRIORITIES) {
				base[p.ordinal()] = lanes.spec(p).concurrency();
			}
		}
	}

	/** Resizes the lanes, when there are any, for {@code level}; what a resize throws is dropped. */
	void resize(LoadLevel level) {
		PriorityLanes l = lanes;
		if (l == null) {
			return;
		}
		int[] sizes = sizes(level);
		for (Priority p : PRIORITIES) {
			try {
				l.resize(p, sizes[p.ordinal()]);
			}
			catch (Throwable failure) {
				Callbacks.dropped(failure);
			}
		}
	}

	/** The lanes' sizes at {@code level}, by priority, from their built sizes. */
	int[] sizes(LoadLevel level) {
		int[] sizes = new int[PRIORITIES.length];
		for (Priority p : PRIORITIES) {
			sizes[p.ordinal()] = rules.laneSize(level, p, base[p.ordinal()]);
		}
		if (resizing == LaneResizing.KEEP_TOTAL) {
			// from the least urgent lane up, so what a closed lane passes on was decided by the rules alone
			int[] scaled = sizes.clone();
			for (int p = PRIORITIES.length - 1; p > 0; p--) {
				int taken = base[p] - scaled[p];
				if (taken <= 0) {
					continue;
				}
				for (int q = p - 1; q >= 0; q--) {
					if (scaled[q] > 0) {
						sizes[q] += taken;
						break;
					}
				}
			}
		}
		return sizes;
	}
}
