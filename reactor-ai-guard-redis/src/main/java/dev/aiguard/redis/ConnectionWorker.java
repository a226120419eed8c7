package dev.aiguard.redis;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * The one worker on which a Redis component connects, writes its commands, times its deadlines and
 * closes its connections, one task at a time. Lettuce's endpoint lock ({@code SharedLock}, unbounded in
 * Lettuce 6.8.2 and 7.7.0, redis/lettuce#3880) spins forever when a close waits for writers that never
 * drain, and then holds the closing thread for good: a write and a close on the same worker never
 * overlap. Its writer side waits on a lock, which Lettuce's event loops and Reactor's threads must never
 * do: on the worker, nothing else writes to contend with.
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
	/** Hand-overs to the worker under way; {@link #dispose()} waits for none before shutting down. */
	private final AtomicInteger handing = new AtomicInteger();
	/** Set by {@link #dispose()}: from then on nothing is handed to the worker. */
	private volatile boolean ending;
	private final AtomicBoolean disposed = new AtomicBoolean();

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

	/** @return whether {@code task} was handed to the worker (not once it is ending) */
	boolean run(Runnable task) {
		return hand(() -> worker.schedule(task)) != null;
	}

	/**
	 * Hands a task to the worker through the gate that {@link #dispose()} closes: {@code null} once the
	 * worker is ending (or its scheduler refuses), without touching the executor.
	 */
	private @Nullable Disposable hand(Supplier<Disposable> schedule) {
		handing.incrementAndGet();
		try {
			return ending ? null : schedule.get();
		}
		catch (RejectedExecutionException disposed) {
			return null;
		}
		finally {
			handing.decrementAndGet();
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
		Disposable timer = hand(() -> worker.schedule(task, delay.toNanos(), TimeUnit.NANOSECONDS));
		return timer == null ? () -> { } : timer;
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
	 * that disposing takes, so the disposal itself runs on the worker (here only when the worker takes no
	 * task any more).
	 */
	void end() {
		runOrHere(this::dispose);
	}

	/**
	 * Closes the gate, waits for the hand-overs already past it, then shuts the executor down. A task
	 * handed over while the executor shuts down, or after, takes the executor's locks on its way out (to
	 * take itself back off the queue, to try to terminate the pool, or to describe the executor in its
	 * rejection) — on a Lettuce event loop, say, which must not wait for a lock; behind the gate no
	 * hand-over ever meets a shutdown or a shut-down executor. The wait is for the few instructions of a
	 * queue insertion already under way.
	 */
	private void dispose() {
		if (!disposed.compareAndSet(false, true)) {
			return;
		}
		ending = true;
		// only the component's own executor is shut down here (a given scheduler's worker is disposed the
		// non-blocking way, and such a scheduler may run this very task inside a hand-over)
		while (ownScheduler && handing.get() != 0) {
			Thread.onSpinWait();
		}
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
