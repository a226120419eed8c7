package dev.aiguard.internal;

import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;
import reactor.core.scheduler.Scheduler;

/**
 * A scheduler's clock, read in nanoseconds with as little work as possible.
 *
 * <p>{@link Scheduler#now(TimeUnit)} is {@link System#nanoTime()} for every scheduler that keeps
 * Reactor's default implementation (the parallel, single, bounded-elastic and immediate
 * schedulers); a scheduler that has its own notion of time (a {@code VirtualTimeScheduler}, a
 * user's clock) overrides it. This class finds out once which case applies and then reads
 * {@code System.nanoTime()} directly in the first case. The answer is the same either way; the
 * direct read is small enough for the JIT to inline where the guard reads time, which keeps a
 * call out of the per-token loop.
 */
public final class TimeSource {

	private static final String REACTOR_CACHED_SCHEDULER = "reactor.core.scheduler.Schedulers$CachedScheduler";

	/** Whether a scheduler class keeps {@code Scheduler.now}'s default (the system's monotonic clock). */
	private static final ClassValue<Boolean> DEFAULT_NOW = new ClassValue<>() {
		@Override
		protected Boolean computeValue(Class<?> type) {
			try {
				return type.getMethod("now", TimeUnit.class).getDeclaringClass() == Scheduler.class;
			}
			catch (NoSuchMethodException | SecurityException e) {
				return Boolean.FALSE;
			}
		}
	};

	private final Scheduler scheduler;
	private final boolean systemNanoTime;

	private TimeSource(Scheduler scheduler, boolean systemNanoTime) {
		this.scheduler = scheduler;
		this.systemNanoTime = systemNanoTime;
	}

	/** @return the clock of {@code scheduler} */
	public static TimeSource of(Scheduler scheduler) {
		Objects.requireNonNull(scheduler, "scheduler");
		return new TimeSource(scheduler, readsSystemNanoTime(scheduler));
	}

	/**
	 * For holders that keep the last clock they resolved (a policy, an operator): {@code last} when it
	 * is {@code scheduler}'s, else a newly resolved one. A scheduler looked up at each use (the
	 * default {@code Schedulers.parallel()}) is usually the same instance, so this is one comparison.
	 */
	public static TimeSource reuse(@Nullable TimeSource last, Scheduler scheduler) {
		return last != null && last.scheduler == scheduler ? last : of(scheduler);
	}

	/** The clock last resolved by {@link #shared}; immutable, so a racy update only costs a lookup. */
	@Nullable
	private static volatile TimeSource lastShared;

	/**
	 * The clock of {@code scheduler}, shared by every caller: resolved once and kept while callers
	 * keep asking for the same scheduler, so an attempt's watch allocates no clock of its own.
	 */
	public static TimeSource shared(Scheduler scheduler) {
		TimeSource last = lastShared;
		if (last != null && last.scheduler == scheduler) {
			return last;
		}
		last = of(scheduler);
		lastShared = last;
		return last;
	}

	static boolean readsSystemNanoTime(Scheduler scheduler) {
		Scheduler s = scheduler;
		// Schedulers.parallel() and friends hand out a caching wrapper whose now() asks the wrapped one
		for (int hops = 0; hops < 4; hops++) {
			if (DEFAULT_NOW.get(s.getClass())) {
				return true;
			}
			if (!REACTOR_CACHED_SCHEDULER.equals(s.getClass().getName()) || !(s instanceof Supplier)) {
				return false;
			}
			Object inner = ((Supplier<?>) s).get();
			if (!(inner instanceof Scheduler) || inner == s) {
				return false;
			}
			s = (Scheduler) inner;
		}
		return false;
	}

	/** @return the scheduler's clock, in nanoseconds */
	public long nanos() {
		return systemNanoTime ? System.nanoTime() : scheduler.now(TimeUnit.NANOSECONDS);
	}

	/** @return the scheduler whose clock this is */
	public Scheduler scheduler() {
		return scheduler;
	}
}
