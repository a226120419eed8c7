package dev.aiguard.load;

import java.util.Objects;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Priority;
import dev.aiguard.stage.AttemptEnd;
import dev.aiguard.stage.Degradation;
import dev.aiguard.stage.GuardStage;
import dev.aiguard.stage.Refusal;
import dev.aiguard.stage.RequestFacts;
import dev.aiguard.stage.RequestPort;
import dev.aiguard.stage.StageRun;

/**
 * The load governor as a stage of the guard: each request arrives at the governor, which serves it
 * live, sends it down the ladder's cheaper steps first, or sheds it; each realtime attempt's first
 * token and outcome feed the governor's signals. Keeps nothing per request, so every request
 * shares this one run. Built by the guard from a policy's {@link LoadGovernor}; not meant for
 * direct use.
 */
public final class LoadStage implements GuardStage, StageRun {

	private final LoadGovernor load;

	private LoadStage(LoadGovernor load) {
		this.load = load;
	}

	public static LoadStage of(LoadGovernor load) {
		return new LoadStage(Objects.requireNonNull(load, "load"));
	}

	@Override
	public StageRun start(RequestFacts request) {
		return this;
	}

	@Override
	public void admit(RequestPort port) {
		Priority priority = port.priority();
		load.arrived(priority);
		LoadAction action = load.action(priority);
		switch (action) {
			case REALTIME:
				port.proceed();
				return;
			case SHED:
				port.refuse(Refusal.REJECTED, load.shed(priority));
				return;
			case STATIC_OR_SHED:
				AdmissionRejectedException shed = load.shed(priority);
				if (port.hasLadder(Degradation.STATIC_ONLY)) {
					port.walkFirst(Degradation.STATIC_ONLY, shed, shed);
				}
				else {
					port.refuse(Refusal.REJECTED, shed);
				}
				return;
			default:
				Degradation cheaper = action == LoadAction.CHEAPER_FIRST ? Degradation.CHEAPER_FIRST
						: Degradation.FALLBACK_FIRST;
				if (!port.hasLadder(cheaper)) {
					port.proceed(); // nothing cheaper to try: served live
					return;
				}
				port.walkFirst(cheaper, new DegradedByLoadException(priority, load.level(), action), null);
		}
	}

	@Override
	public void afterAttempt(AttemptEnd end) {
		if (!end.sent()) {
			return;
		}
		long ttft = end.timeToFirstTokenNanos();
		if (ttft >= 0L) {
			load.firstToken(ttft);
		}
		load.ended(end.outcome());
	}
}
