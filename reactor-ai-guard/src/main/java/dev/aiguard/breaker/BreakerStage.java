package dev.aiguard.breaker;

import java.util.Objects;
import java.util.Set;

import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.stage.AttemptEnd;
import dev.aiguard.stage.GuardStage;
import dev.aiguard.stage.Refusal;
import dev.aiguard.stage.RequestFacts;
import dev.aiguard.stage.RequestPort;
import dev.aiguard.stage.StageEvent;
import dev.aiguard.stage.StageRun;
import org.jspecify.annotations.Nullable;

/**
 * The breaker as a stage of the guard: a permission before each realtime attempt, settled once
 * with the attempt's outcome (or handed back when the attempt was not sent or the request ended
 * first). Built by the guard from a policy's {@link BreakerGate}; not meant for direct use.
 */
public final class BreakerStage implements GuardStage {

	private final BreakerGate gate;
	/** By priority ordinal: whether the breaker counts the outcomes of that priority's attempts. */
	private final boolean[] counted;

	private BreakerStage(BreakerGate gate, boolean[] counted) {
		this.gate = gate;
		this.counted = counted;
	}

	/**
	 * @param gate a breaker, or a path through a breaker tree
	 * @param counted the priorities whose outcomes the breaker counts; the others hand their permission back
	 */
	public static BreakerStage of(BreakerGate gate, Set<Priority> counted) {
		Objects.requireNonNull(gate, "gate");
		boolean[] byOrdinal = new boolean[Priority.values().length];
		for (Priority p : counted) {
			byOrdinal[p.ordinal()] = true;
		}
		return new BreakerStage(gate, byOrdinal);
	}

	@Override
	public StageRun start(RequestFacts request) {
		return new Run(gate, counted[request.priority().ordinal()]);
	}

	/** One request's permission: at most one at a time, for the attempt being sent or running. */
	static final class Run implements StageRun {

		private final BreakerGate gate;
		private final boolean counted;
		@Nullable
		private BreakerPermit permit;

		Run(BreakerGate gate, boolean counted) {
			this.gate = gate;
			this.counted = counted;
		}

		@Override
		public boolean beforeAttempt(RequestPort port) {
			BreakerPermit p;
			try {
				p = gate.acquire(port.priority());
			}
			catch (BreakerOpenException refused) {
				port.observe(StageEvent.BREAKER_REFUSED);
				port.refuse(Refusal.ATTEMPT, refused);
				return false;
			}
			port.observe(StageEvent.BREAKER_PERMITTED);
			permit = p;
			return true;
		}

		@Override
		public void afterAttempt(AttemptEnd end) {
			BreakerPermit p = permit;
			permit = null;
			if (p == null) {
				return;
			}
			if (!end.sent()) {
				p.record(Outcome.CANCELLED, -1L);
				return;
			}
			// a priority the breaker does not count hands its permission back, whatever the outcome
			p.promptTokens(gate.weighsPromptTokens() ? end.estimatedPromptTokens() : 0)
					.record(counted ? end.outcome() : Outcome.CANCELLED, end.timeToFirstTokenNanos());
		}

		@Override
		public void finish(Outcome outcome) {
			BreakerPermit p = permit;
			if (p != null) {
				// only in the window between taking a permission and subscribing: settling is idempotent
				permit = null;
				p.record(Outcome.CANCELLED, -1L);
			}
		}
	}
}
