package dev.aiguard.internal;

import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

class TimeSourceTest {

	/** A scheduler that runs nothing; subclasses decide whether it keeps the default clock. */
	abstract static class Idle implements Scheduler {

		@Override
		public Disposable schedule(Runnable task) {
			throw new UnsupportedOperationException();
		}

		@Override
		public Worker createWorker() {
			throw new UnsupportedOperationException();
		}
	}

	@Test
	void reactorsSchedulersReadTheSystemClock() {
		assertThat(TimeSource.readsSystemNanoTime(Schedulers.parallel())).isTrue();
		assertThat(TimeSource.readsSystemNanoTime(Schedulers.single())).isTrue();
		assertThat(TimeSource.readsSystemNanoTime(Schedulers.boundedElastic())).isTrue();
		assertThat(TimeSource.readsSystemNanoTime(Schedulers.immediate())).isTrue();
		Scheduler own = Schedulers.newParallel("time-source-test", 1);
		try {
			assertThat(TimeSource.readsSystemNanoTime(own)).isTrue();
		}
		finally {
			own.dispose();
		}
	}

	@Test
	void aSystemClockReadingIsTheSchedulersOwn() {
		TimeSource clock = TimeSource.of(Schedulers.parallel());
		long before = Schedulers.parallel().now(TimeUnit.NANOSECONDS);
		long reading = clock.nanos();
		long after = Schedulers.parallel().now(TimeUnit.NANOSECONDS);
		assertThat(reading).isBetween(before, after);
	}

	@Test
	void virtualTimeIsAskedEveryTime() {
		VirtualTimeScheduler vts = VirtualTimeScheduler.create();
		TimeSource clock = TimeSource.of(vts);
		assertThat(TimeSource.readsSystemNanoTime(vts)).isFalse();
		long start = clock.nanos();
		vts.advanceTimeBy(java.time.Duration.ofSeconds(3));
		assertThat(clock.nanos() - start).isEqualTo(TimeUnit.SECONDS.toNanos(3));
		assertThat(clock.scheduler()).isSameAs(vts);
	}

	@Test
	void aSchedulerWithItsOwnClockIsAsked() {
		Scheduler fixed = new Idle() {
			@Override
			public long now(TimeUnit unit) {
				return unit.convert(42, TimeUnit.SECONDS);
			}
		};
		assertThat(TimeSource.of(fixed).nanos()).isEqualTo(TimeUnit.SECONDS.toNanos(42));
	}

	@Test
	void aSchedulerKeepingTheDefaultClockIsReadDirectly() {
		Scheduler plain = new Idle() {
		};
		assertThat(TimeSource.readsSystemNanoTime(plain)).isTrue();
	}

	@Test
	void nullIsRefused() {
		assertThatNullPointerException().isThrownBy(() -> TimeSource.of(null)).withMessageContaining("scheduler");
	}
}
