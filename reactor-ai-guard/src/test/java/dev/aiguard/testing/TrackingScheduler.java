package dev.aiguard.testing;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A virtual-time scheduler that counts tasks still pending (scheduled, neither run nor disposed),
 * so tests can prove the deadline task is disposed on every path.
 *
 * <pre>{@code
 * TrackingScheduler timer = new TrackingScheduler();
 * // ... run a guarded stream with .timer(timer) and cancel it
 * timer.advance(Duration.ofSeconds(1));
 * assertThat(timer.pending()).isZero();
 * }</pre>
 */
public final class TrackingScheduler implements Scheduler {

	private final VirtualTimeScheduler delegate = VirtualTimeScheduler.create();
	private final AtomicInteger pending = new AtomicInteger();
	private final AtomicInteger scheduled = new AtomicInteger();

	public VirtualTimeScheduler virtualTime() {
		return delegate;
	}

	/** @return tasks scheduled and neither run nor disposed */
	public int pending() {
		return pending.get();
	}

	/** @return every task ever scheduled */
	public int scheduled() {
		return scheduled.get();
	}

	public void advance(java.time.Duration d) {
		delegate.advanceTimeBy(d);
	}

	@Override
	public Disposable schedule(Runnable task) {
		return schedule(task, 0, TimeUnit.NANOSECONDS);
	}

	@Override
	public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
		AtomicInteger once = new AtomicInteger();
		pending.incrementAndGet();
		scheduled.incrementAndGet();
		Disposable d = delegate.schedule(() -> {
			if (once.compareAndSet(0, 1)) {
				pending.decrementAndGet();
			}
			task.run();
		}, delay, unit);
		return () -> {
			if (once.compareAndSet(0, 1)) {
				pending.decrementAndGet();
			}
			d.dispose();
		};
	}

	@Override
	public long now(TimeUnit unit) {
		return delegate.now(unit);
	}

	@Override
	public Worker createWorker() {
		return delegate.createWorker();
	}

	@Override
	public void dispose() {
		delegate.dispose();
	}
}
