package dev.aiguard.stage;

import reactor.core.scheduler.Scheduler;

/** The capacity a request holds while it runs: where its blocking work goes, and whether it still has it. */
public interface Lane {

	/** @return the Scheduler for the request's blocking work (a blocking upstream, blocking fallback steps) */
	Scheduler scheduler();

	/** @return whether the capacity is still the request's (false once released or taken back) */
	boolean held();

	/** @return the longest an attempt waits for a thread of {@link #scheduler()} before its upstream is called */
	long threadWaitNanos();
}
