package dev.aiguard.stage;

import java.util.ArrayList;
import java.util.List;

import dev.aiguard.core.Outcome;
import org.jspecify.annotations.Nullable;

/**
 * The stages of one policy, in the order a request meets them, built once per policy; and the
 * runs of one request. A request allocates one array and the runs of the stages it needs, nothing
 * when it needs none.
 */
public final class StageList {

	private static final StageRun[] NONE = new StageRun[0];

	private final GuardStage[] stages;

	private StageList(GuardStage[] stages) {
		this.stages = stages;
	}

	/** @param stages the policy's stages, in order; {@code null}s (a capability the policy lacks) are left out */
	public static StageList of(@Nullable GuardStage... stages) {
		List<GuardStage> present = new ArrayList<>(stages.length);
		for (GuardStage s : stages) {
			if (s != null) {
				present.add(s);
			}
		}
		return new StageList(present.toArray(new GuardStage[0]));
	}

	/** @return how many stages the policy has */
	public int size() {
		return stages.length;
	}

	/** @return the runs of the stages with something to do for {@code request}, in order */
	public StageRun[] start(RequestFacts request) {
		if (stages.length == 0) {
			return NONE;
		}
		StageRun[] runs = null;
		int n = 0;
		for (GuardStage stage : stages) {
			StageRun run = stage.start(request);
			if (run != null) {
				if (runs == null) {
					runs = new StageRun[stages.length];
				}
				runs[n++] = run;
			}
		}
		if (runs == null) {
			return NONE;
		}
		return n == runs.length ? runs : java.util.Arrays.copyOf(runs, n);
	}

	/** Ends every run, in order. */
	public static void finish(StageRun[] runs, Outcome outcome) {
		for (StageRun run : runs) {
			run.finish(outcome);
		}
	}
}
