package dev.aiguard.fallback;

import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.core.Source;

/** Records the fallback metrics as readable lines, thread-safe. */
final class RecordingMetrics implements GuardMetrics {

	final Queue<String> events = new ConcurrentLinkedQueue<>();
	final Queue<Long> stepNanos = new ConcurrentLinkedQueue<>();

	@Override
	public void answered(String policy, Priority priority, Source source) {
		events.add("answered " + policy + " " + priority + " " + source);
	}

	@Override
	public void fallbackStepFailed(String policy, Priority priority, Source source) {
		events.add("failed " + policy + " " + priority + " " + source);
	}

	@Override
	public void fallbackStepTime(String policy, Priority priority, Source source, long nanos) {
		events.add("time " + policy + " " + priority + " " + source);
		stepNanos.add(nanos);
	}

	@Override
	public void cacheLookup(String policy, boolean hit) {
		events.add("lookup " + policy + " " + (hit ? "hit" : "miss"));
	}

	List<String> events() {
		return new ArrayList<>(events);
	}

	long count(String line) {
		return events.stream().filter(line::equals).count();
	}
}
