package dev.aiguard.stage;

import org.jspecify.annotations.Nullable;

/**
 * One per-request capability of a policy (budgets, load routing, lane admission, the breaker),
 * built once when the policy goes into force. A request that the stage has nothing to do for gets
 * no run, so it pays nothing for the stage.
 */
public interface GuardStage {

	/**
	 * @param request what the request is, read when it starts
	 * @return this request's run, or {@code null} when the stage has nothing to do for it
	 */
	@Nullable
	StageRun start(RequestFacts request);
}
