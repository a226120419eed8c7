package dev.aiguard.admission;

import java.util.Objects;
import java.util.function.Consumer;

import dev.aiguard.core.Outcome;
import dev.aiguard.stage.GuardStage;
import dev.aiguard.stage.Lane;
import dev.aiguard.stage.Refusal;
import dev.aiguard.stage.RequestFacts;
import dev.aiguard.stage.RequestPort;
import dev.aiguard.stage.StageEvent;
import dev.aiguard.stage.StageRun;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.util.context.Context;

/**
 * Lane admission as a stage of the guard: the request takes a permit of its priority's lane (at
 * once, or through a {@link LaneAdmission} wait), holds it across its attempts, fallback answers
 * and notices, and gives it back once when it ends. A preemption reaches the request through its
 * port. Built by the guard from a policy's {@link PriorityLanes}; not meant for direct use.
 */
public final class AdmissionStage implements GuardStage {

	private final PriorityLanes lanes;

	private AdmissionStage(PriorityLanes lanes) {
		this.lanes = lanes;
	}

	public static AdmissionStage of(PriorityLanes lanes) {
		return new AdmissionStage(Objects.requireNonNull(lanes, "lanes"));
	}

	@Override
	public StageRun start(RequestFacts request) {
		return new Run(lanes);
	}

	/** One request's place in the lanes: its wait, then its permit. */
	static final class Run implements StageRun, LaneAdmission.Owner, Lane, Consumer<PreemptedException> {

		private final PriorityLanes lanes;
		// set by admit(), the first call the request makes on its run
		@SuppressWarnings("NullAway.Init")
		private RequestPort port;
		@Nullable
		private volatile LanePermit permit;
		@Nullable
		private volatile Disposable waiting;

		Run(PriorityLanes lanes) {
			this.lanes = lanes;
		}

		@Override
		public void admit(RequestPort port) {
			this.port = port;
			// a free permit on the request's own lane is taken at once; waiting, borrowing and
			// preempting go through the acquire Mono
			LanePermit now = lanes.tryAcquire(port.priority());
			if (now != null) {
				admitted(now);
				return;
			}
			port.observe(StageEvent.QUEUED);
			LaneAdmission wait = LaneAdmission.await(lanes, port.priority(), this);
			waiting = wait;
			if (port.cancelled()) {
				// a cancel that finished the request before the wait was stored did not see it
				wait.dispose();
			}
		}

		@Override
		public void admitted(LanePermit granted) {
			permit = granted;
			RequestPort p = port;
			if (p.cancelled()) {
				// a cancel racing the grant may have finished the request before it could see the permit
				granted.release();
				p.proceed(); // which ends the cancelled request
				return;
			}
			granted.onPreempted(this);
			p.admitted(this);
			p.proceed();
		}

		@Override
		public void refused(Throwable rejection) {
			port.refuse(Refusal.NO_CAPACITY, rejection);
		}

		@Override
		public Context currentContext() {
			return port.context();
		}

		/** The lanes took the permit back (they released it already). */
		@Override
		public void accept(PreemptedException e) {
			port.preempted(e);
		}

		@Override
		public Scheduler scheduler() {
			// the request has this lane only from admitted() on, which stored the permit first
			return Objects.requireNonNull(permit, "permit").scheduler();
		}

		@Override
		public boolean held() {
			LanePermit p = permit;
			return p != null && p.held();
		}

		@Override
		public long threadWaitNanos() {
			return lanes.spec(port.priority()).maxQueueWait().toNanos();
		}

		/** Gives the permit back (it counts only the first release); a cancel calls off a wait still running. */
		@Override
		public void finish(Outcome outcome) {
			Disposable w = waiting;
			if (w != null && outcome == Outcome.CANCELLED) {
				w.dispose();
			}
			LanePermit p = permit;
			if (p != null) {
				p.release();
			}
		}
	}
}
