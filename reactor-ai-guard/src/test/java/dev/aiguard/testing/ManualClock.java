package dev.aiguard.testing;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.breaker.BreakerClock;
import reactor.core.Disposable;
import reactor.core.Disposables;
import reactor.core.scheduler.Scheduler;

/**
 * A clock the test moves by hand, usable as a breaker's {@link BreakerClock} and as the
 * {@link Scheduler} a stall watch reads the time from. Tasks scheduled on it never run: a test
 * uses it to make a deadline pass and then calls the code that checks it itself (when scheduled
 * tasks must run as time passes, use a {@code VirtualTimeScheduler} or {@link TrackingScheduler}).
 * Thread-safe, so race tests can share one.
 *
 * <pre>{@code
 * ManualClock clock = new ManualClock();
 * CircuitBreaker breaker = CircuitBreaker.builder("llm").clock(clock).build();
 * clock.advance(Duration.ofSeconds(30));
 * }</pre>
 */
public final class ManualClock implements BreakerClock, Scheduler {

	private final AtomicLong nanos;

	/** A clock at nanosecond 0. */
	public ManualClock() {
		this(0);
	}

	/** A clock at {@code startNanos}. */
	public ManualClock(long startNanos) {
		this.nanos = new AtomicLong(startNanos);
	}

	@Override
	public long nanoTime() {
		return nanos.get();
	}

	@Override
	public long now(TimeUnit unit) {
		return unit.convert(nanos.get(), TimeUnit.NANOSECONDS);
	}

	public void advance(Duration d) {
		nanos.addAndGet(d.toNanos());
	}

	public void advanceNanos(long delta) {
		nanos.addAndGet(delta);
	}

	public void set(long nanoTime) {
		nanos.set(nanoTime);
	}

	/** Accepts the task and never runs it. */
	@Override
	public Disposable schedule(Runnable task) {
		return Disposables.single();
	}

	/** Accepts the task and never runs it, whatever the clock reads. */
	@Override
	public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
		return Disposables.single();
	}

	@Override
	public Worker createWorker() {
		throw new UnsupportedOperationException("a manual clock only takes tasks scheduled directly");
	}
}
