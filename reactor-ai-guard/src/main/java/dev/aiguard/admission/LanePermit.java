package dev.aiguard.admission;

import java.util.function.Consumer;

import dev.aiguard.core.Priority;
import reactor.core.scheduler.Scheduler;

/**
 * One admitted stream's hold on lane capacity, granted by {@link PriorityLanes#acquire(Priority)}.
 * {@link #release()} hands it back; only the first call counts, so racing terminal paths may all
 * call it.
 *
 * <pre>{@code
 * lanes.acquire(Priority.P2).flatMapMany(permit -> {
 *     permit.onPreempted(e -> log.info("batch call preempted, will retry", e));
 *     return client.stream(request)
 *         .subscribeOn(permit.scheduler())          // a blocking SDK runs on the P2 lane's threads
 *         .doFinally(signal -> permit.release());
 * });
 * }</pre>
 */
public interface LanePermit {

	/** @return the priority of the request that holds the permit */
	Priority priority();

	/** @return the lane whose capacity the permit uses (a lower one when borrowed) */
	Priority lane();

	/** @return whether the permit was borrowed from another lane */
	default boolean borrowed() {
		return priority() != lane();
	}

	/** @return the Scheduler of the request's own lane, for blocking upstreams and fallback work */
	Scheduler scheduler();

	/** Hands the capacity back; later calls do nothing. */
	void release();

	/**
	 * @return whether the capacity is still this request's: false once released, and once the
	 *         lanes claimed it for preemption (before the {@link #onPreempted} actions run). Work
	 *         that starts later than the request decided it (a blocking call after a hop onto the
	 *         lane's Scheduler) checks it first.
	 */
	boolean held();

	/**
	 * Registers what to do when this permit is preempted (only permits lent under the
	 * work-conserving option can be). Runs at once if the permit was already preempted. The
	 * permit is released by the lanes before the action runs.
	 */
	void onPreempted(Consumer<PreemptedException> action);
}
