package dev.aiguard.redis;

import java.util.List;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The "scheduler" handed to Bucket4j's reservation: Bucket4j reserves atomically in Redis and then
 * schedules the completion after the wait; this one hears the wait and completes at once (the
 * guard waits on its own timer).
 */
final class WaitHeard extends AbstractExecutorService implements ScheduledExecutorService {
	volatile long nanos;

	@Override
	public ScheduledFuture<?> schedule(Runnable command, long delay, TimeUnit unit) {
		nanos = unit.toNanos(delay);
		command.run();
		return new Done<>(null);
	}

	@Override
	public <V> ScheduledFuture<V> schedule(Callable<V> callable, long delay, TimeUnit unit) {
		nanos = unit.toNanos(delay);
		try {
			return new Done<>(callable.call());
		}
		catch (Exception e) {
			throw new CompletionException(e);
		}
	}

	@Override
	public ScheduledFuture<?> scheduleAtFixedRate(Runnable command, long initialDelay, long period, TimeUnit unit) {
		throw new UnsupportedOperationException("a reservation schedules once");
	}

	@Override
	public ScheduledFuture<?> scheduleWithFixedDelay(Runnable command, long initialDelay, long delay, TimeUnit unit) {
		throw new UnsupportedOperationException("a reservation schedules once");
	}

	@Override
	public void execute(Runnable command) {
		command.run();
	}

	@Override
	public void shutdown() {
	}

	@Override
	public List<Runnable> shutdownNow() {
		return List.of();
	}

	@Override
	public boolean isShutdown() {
		return false;
	}

	@Override
	public boolean isTerminated() {
		return false;
	}

	@Override
	public boolean awaitTermination(long timeout, TimeUnit unit) {
		return false;
	}

	/** An already completed scheduled task. */
	private record Done<V>(V value) implements ScheduledFuture<V> {

		@Override
		public long getDelay(TimeUnit unit) {
			return 0L;
		}

		@Override
		public int compareTo(Delayed other) {
			return Long.compare(0L, other.getDelay(TimeUnit.NANOSECONDS));
		}

		@Override
		public boolean cancel(boolean mayInterruptIfRunning) {
			return false;
		}

		@Override
		public boolean isCancelled() {
			return false;
		}

		@Override
		public boolean isDone() {
			return true;
		}

		@Override
		public V get() {
			return value;
		}

		@Override
		public V get(long timeout, TimeUnit unit) {
			return value;
		}
	}
}
