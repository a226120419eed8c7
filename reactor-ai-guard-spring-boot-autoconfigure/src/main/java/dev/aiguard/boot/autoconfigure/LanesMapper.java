package dev.aiguard.boot.autoconfigure;

import static dev.aiguard.boot.autoconfigure.PropertyChecks.checkName;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.make;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.with;

import java.util.Locale;
import java.util.Map;

import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.boot.autoconfigure.properties.LanesProperties;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;

/** {@code aiguard.lanes} → the shared {@link PriorityLanes}: all three lanes or none. */
final class LanesMapper {

	private LanesMapper() {
	}

	@Nullable
	static PriorityLanes lanes(LanesProperties l, GuardMetrics metrics) {
		Map<Priority, LanesProperties.Lane> configured = l.configured();
		if (configured.isEmpty()) {
			return null;
		}
		String at = AiGuardProperties.PREFIX + ".lanes";
		checkName(at + ".name", l.getName());
		for (Priority priority : Priority.values()) {
			if (!configured.containsKey(priority)) {
				throw new InvalidGuardPropertyException(at + "." + priority.name().toLowerCase(Locale.ROOT) + ".concurrency",
						null, "lanes need all three of p0, p1 and p2 once one is configured (0 makes a lane that only borrows)",
						null);
			}
		}
		PriorityLanes.Builder b = PriorityLanes.builder().name(l.getName()).metrics(metrics);
		configured.forEach((priority, lane) -> b.lane(priority, lane(at + "." + priority.name().toLowerCase(Locale.ROOT), lane)));
		return make(at, b::build);
	}

	private static LaneSpec lane(String at, LanesProperties.Lane lane) {
		LaneSpec spec = make(at + ".concurrency", lane.getConcurrency(), LaneSpec::of);
		spec = with(at + ".max-queue-size", lane.getMaxQueueSize(), spec, LaneSpec::maxQueueSize);
		spec = with(at + ".max-queue-wait", lane.getMaxQueueWait(), spec, LaneSpec::maxQueueWait);
		spec = with(at + ".borrow-from-lower", lane.getBorrowFromLower(), spec, LaneSpec::borrowFromLower);
		spec = with(at + ".reserved-for-own", lane.getReservedForOwn(), spec, LaneSpec::reservedForOwn);
		spec = with(at + ".aging-after", lane.getAgingAfter(), spec, LaneSpec::agingAfter);
		return spec;
	}
}
