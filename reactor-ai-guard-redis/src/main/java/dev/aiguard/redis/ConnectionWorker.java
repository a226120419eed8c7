package dev.aiguard.redis;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The one worker on which a Redis component connects, writes where a write must not race a close, times
 * its deadlines and closes its connections, one task at a time. Lettuce's endpoint lock
 * ({@code SharedLock}, unbounded in Lettuce 6.8.2 and 7.7.0, redis/lettuce#3880) spins forever when a
 * close waits for writers that never drain, and then holds the closing thread for good: a write and a
 * close on the same worker never overlap.
 *
 * <p>By default the worker is a daemon thread of the component's own, which may block (it is not one of
 * Reactor's non-blocking threads) and ends with {@link #end()}.
 */
final class ConnectionWorker {

	private final Scheduler scheduler;
	/** Whether {@link #scheduler} is the component's own thread, disposed by {@link #end()}. */
	private final boolean ownScheduler;
	private final Scheduler.Worker worker;
	/** Completed once the worker is disposed (and the component's own thread with it). */
	private final CompletableFuture<Void> terminated = new CompletableFuture<>();

	/**
	 * @param threadName the name of the component's own daemon thread
	 * @param scheduler the worker's scheduler, or {@code null} for a daemon thread of the component's own
	 */
	ConnectionWorker(String threadName, @Nullable Scheduler scheduler) {
		this.ownScheduler = scheduler == null;
		this.scheduler = scheduler == null ? ownThread(threadName) : scheduler;
		this.worker = this.scheduler.createWorker();
	}

	private static Scheduler ownThread(String name) {
		return Schedulers.fromExecutorService(Executors.newSingleThreadScheduledExecutor(task -> {
			Thread t = new Thread(task, name);
			t.setDaemon(true);
			return t;
		}), name);
	}

	/** @return the scheduler's time, in nanoseconds */
	long nowNanos() {
		return scheduler.now(TimeUnit.NANOSECONDS);
	}

	/** @return whether {@code task} was handed to the worker (not once it has ended) */
	boolean run(Runnable task) {
		try {
			worker.schedule(task);
			return true;
		}
		catch (RejectedExecutionException disposed) {
			return false;
		}
	}

	/**
	 * Runs {@code task} on the worker, or on this thread when the worker takes no task any more (a
	 * scheduler given to the component was disposed before it: nothing runs on it, so nothing races).
	 */
	void runOrHere(Runnable task) {
		if (!run(task)) {
			task.run();
		}
	}

	/** @return {@code task} run once on the worker after {@code delay}; nothing once the worker has ended */
	Disposable after(Duration delay, Runnable task) {
		try {
			return worker.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS);
		}
		catch (RejectedExecutionException disposed) {
			return () -> { };
		}
	}

	/**
	 * A copy of {@code future} failed with a {@link TimeoutException} when it has not completed within
	 * {@code millis}, timed on the worker. Not {@code orTimeout}: its timer is the JDK's shared delayer,
	 * whose task is cancelled under that delayer's queue lock by whichever thread completes the future —
	 * often a Lettuce event loop, which must not wait for a lock (and under BlockHound a park there
	 * throws inside the lock's queue and leaves it stuck for every thread). Reactor's worker tasks are
	 * cancelled the non-blocking way.
	 */
	<T> CompletableFuture<T> deadline(CompletableFuture<T> future, long millis) {
		CompletableFuture<T> copy = future.copy(); // the deadline never completes the caller's future
		Disposable timer = after(Duration.ofMillis(millis),
				() -> copy.completeExceptionally(new TimeoutException("no answer within " + millis + " ms")));
		copy.whenComplete((v, e) -> timer.dispose());
		return copy;
	}

	/**
	 * Disposes the worker (and the component's own thread) after the tasks already handed to it, from any
	 * thread: Lettuce completes a close on its event loop, which must not wait for the executor's lock
	 * that disposing takes, so the disposal itself runs on the worker.
	 */
	void end() {
		runOrHere(this::dispose);
	}

	private void dispose() {
		try {
			worker.dispose();
			if (ownScheduler) {
				scheduler.dispose();
			}
		}
		finally {
			terminated.complete(null);
		}
	}

	/** @return completed once the worker is disposed */
	CompletableFuture<Void> terminated() {
		return terminated.copy();
	}
}
