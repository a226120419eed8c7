package dev.aiguard.admission;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.ToIntFunction;

import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;

/** Records the admission calls the lanes make, as readable strings. */
final class RecordingMetrics implements GuardMetrics {

	final List<String> events = new CopyOnWriteArrayList<>();
	volatile ToIntFunction<Priority> own;
	volatile ToIntFunction<Priority> borrowed;
	volatile ToIntFunction<Priority> queued;
	volatile long lastWaitNanos = -1;

	@Override
	public void lanesCreated(String lanes, ToIntFunction<Priority> inFlightOwn,
			ToIntFunction<Priority> inFlightBorrowed, ToIntFunction<Priority> queued) {
		events.add("created " + lanes);
		this.own = inFlightOwn;
		this.borrowed = inFlightBorrowed;
		this.queued = queued;
	}

	@Override
	public void admissionWaited(String lanes, Priority priority, long nanos) {
		lastWaitNanos = nanos;
		events.add("waited " + priority + " " + nanos);
	}

	@Override
	public void admissionRejected(String lanes, Priority priority, String reason) {
		events.add("rejected " + priority + " " + reason);
	}

	@Override
	public void preempted(String lanes, Priority priority) {
		events.add("preempted " + priority);
	}

	long count(String prefix) {
		return events.stream().filter(e -> e.startsWith(prefix)).count();
	}
}
