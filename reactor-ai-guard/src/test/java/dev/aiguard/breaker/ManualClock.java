package dev.aiguard.breaker;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

/** A clock the test moves by hand; thread-safe so race tests can share it. */
final class ManualClock implements BreakerClock {

	private final AtomicLong now;

	ManualClock() {
		this(0);
	}

	ManualClock(long start) {
		this.now = new AtomicLong(start);
	}

	@Override
	public long nanoTime() {
		return now.get();
	}

	void advance(Duration d) {
		now.addAndGet(d.toNanos());
	}

	void advanceNanos(long nanos) {
		now.addAndGet(nanos);
	}

	void set(long nanos) {
		now.set(nanos);
	}
}
