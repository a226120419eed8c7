package dev.aiguard.load;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.concurrent.atomic.AtomicReferenceFieldUpdater;

import dev.aiguard.admission.AdmissionRejectedException;
import dev.aiguard.core.Priority;
import dev.aiguard.internal.Callbacks;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;
import reactor.core.Disposable;

/**
 * What the governor publishes and how it changes: the {@link LoadState} of the last decision, the
 * actions of its level, and the hold in force. Decisions ({@link #decide}), resets and holds
 * ({@link #applyPending}) run on the serialised decision loop; each change of level, each reset,
 * hold and release, resizes the lanes and reaches the metrics and the listeners. {@link #hold}, a
 * hold's release and {@link #reset} are asked for from any thread and applied by the loop.
 */
final class LevelPublisher {

	private final String name;
	/** [level][priority], never changed. */
	private final LoadAction[][] actions;
	private final LevelStateMachine levels;
	private final LoadCounters counters;
	private final LaneSizing laneSizing;
	private final LoadListener[] listeners;
	private final GuardMetrics metrics;

	private volatile LoadState state;
	/** The actions of the current level, by priority. */
	private volatile LoadAction[] current;

	/** The hold in force, null when none; the decision loop applies what it finds here. */
	@Nullable
	private volatile Hold hold;
	private static final AtomicReferenceFieldUpdater<LevelPublisher, Hold> HOLD =
			AtomicReferenceFieldUpdater.newUpdater(LevelPublisher.class, Hold.class, "hold");
	/** The hold the published state reflects (decision loop only). */
	@Nullable
	private Hold appliedHold;

	/** Resets asked for and not yet applied (one applies them all). */
	private volatile int resets;
	private static final AtomicIntegerFieldUpdater<LevelPublisher> RESETS =
			AtomicIntegerFieldUpdater.newUpdater(LevelPublisher.class, "resets");

	LevelPublisher(String name, LoadAction[][] actions, LevelStateMachine levels, LoadCounters counters,
			LaneSizing laneSizing, LoadListener[] listeners, GuardMetrics metrics) {
		this.name = name;
		this.actions = actions;
		this.levels = levels;
		this.counters = counters;
		this.laneSizing = laneSizing;
		this.listeners = listeners;
		this.metrics = metrics;
		this.state = levels.initial(0L);
		this.current = actions[LoadLevel.HEALTHY.ordinal()];
	}

	LoadState state() {
		return state;
	}

	LoadAction action(int priority) {
		return current[priority];
	}

	/**
	 * The refusal of a shed {@code priority}, its retry-after hint the earliest the governor can reach
	 * a level that serves it, at least one interval.
	 */
	AdmissionRejectedException shed(Priority priority, long now, long intervalNanos) {
		LoadState s = state;
		LoadLevel level = s.level();
		long wait = levels.nanosUntilServed(s, priority, now);
		Duration retryAfter = Duration.ofNanos(Math.max(wait, intervalNanos));
		return new AdmissionRejectedException(priority, AdmissionRejectedException.Reason.SHED,
				name + ": " + priority + " shed at level " + level + " (" + actions[level.ordinal()][priority.ordinal()]
						+ "), retry after " + retryAfter.toMillis() + " ms",
				retryAfter);
	}

	/**
	 * The governor started at {@code now}: the level of a state untouched by any decision or hold
	 * was entered then (decision loop only).
	 */
	void started(long now) {
		LoadState s = state;
		if (s.intervals() == 0 && s.lastChange() == null) {
			state = LoadState.initial(s.mode(), s.subScores(), now);
		}
	}

	/** Resizes the lanes for the level in force. */
	void resizeLanes() {
		laneSizing.resize(state.level());
	}

	/** One decision on what was recorded in the {@code elapsedNanos} since the previous one (decision loop only). */
	void decide(long now, long elapsedNanos) {
		LoadState previous = state;
		LoadState next = levels.next(previous, counters.takeInterval(elapsedNanos), now);
		if (next.level() == previous.level()) {
			state = next;
			return;
		}
		current = actions[next.level().ordinal()];
		state = next;
		// a state whose level differs from the previous one carries the change that moved it
		announce(Objects.requireNonNull(next.lastChange(), "lastChange"));
	}

	/**
	 * Asks for {@code level} to be held; {@code drain} runs the decision loop, which applies it.
	 *
	 * @return releases the hold when disposed, if it is still the one in force
	 */
	Disposable hold(LoadLevel level, Runnable drain) {
		Hold h = new Hold(this, level, drain);
		hold = h;
		drain.run();
		return h;
	}

	/** Asks for a reset; {@code drain} runs the decision loop, which applies it. */
	void reset(Runnable drain) {
		RESETS.incrementAndGet(this);
		drain.run();
	}

	/** Publishes a reset, then a hold or a release, asked for since the last time (decision loop only). */
	void applyPending(long now) {
		if (resets != 0 && RESETS.getAndSet(this, 0) != 0) {
			applyReset(now);
		}
		applyHold(now);
	}

	private void applyReset(long now) {
		// what was recorded since the last decision belongs to what is forgotten
		counters.takeInterval(1L);
		LoadState s = state;
		LoadLevel level = s.held() ? s.level() : LoadLevel.HEALTHY;
		LoadEvent event = new LoadEvent(s.level(), level, LoadEvent.Reason.RESET, "measurements forgotten", Double.NaN,
				0.0, 0.0, now);
		LoadState next = levels.reset(s, level, event, now);
		current = actions[level.ordinal()];
		state = next;
		announce(event);
	}

	private void applyHold(long now) {
		Hold h = hold;
		if (h == appliedHold) {
			return;
		}
		appliedHold = h;
		LoadState s = state;
		LoadEvent event;
		LoadState next;
		if (h != null) {
			event = new LoadEvent(s.level(), h.level, LoadEvent.Reason.HOLD, "held at " + h.level, s.score(), s.load(),
					s.forecastPeak(), now);
			next = s.withLevel(h.level, now, event, true);
		}
		else {
			event = new LoadEvent(s.level(), s.level(), LoadEvent.Reason.RELEASE, "released at " + s.level(), s.score(),
					s.load(), s.forecastPeak(), now);
			next = s.withLevel(s.level(), s.levelSinceNanos(), event, false);
		}
		levels.restartRise();
		current = actions[next.level().ordinal()];
		state = next;
		announce(event);
	}

	private void announce(LoadEvent event) {
		laneSizing.resize(event.to());
		metrics.loadLevelChanged(name, event.from().name(), event.to().name(), event.reason().name());
		for (LoadListener listener : listeners) {
			try {
				listener.levelChanged(event);
			}
			catch (Throwable failure) {
				Callbacks.dropped(failure);
			}
		}
	}

	/** One {@link #hold}: disposing it releases the hold when it is still the one in force. */
	private static final class Hold implements Disposable {

		final LevelPublisher publisher;
		final LoadLevel level;
		final Runnable drain;
		volatile boolean disposed;

		Hold(LevelPublisher publisher, LoadLevel level, Runnable drain) {
			this.publisher = publisher;
			this.level = level;
			this.drain = drain;
		}

		@Override
		public void dispose() {
			if (disposed) {
				return;
			}
			disposed = true;
			if (HOLD.compareAndSet(publisher, this, null)) {
				drain.run();
			}
		}

		@Override
		public boolean isDisposed() {
			return disposed;
		}

		@Override
		public String toString() {
			return "Hold{" + level + '}';
		}
	}
}
