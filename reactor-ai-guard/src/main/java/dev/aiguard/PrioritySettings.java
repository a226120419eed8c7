package dev.aiguard;

import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;

import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.core.Priority;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.retry.RetrySpec;
import dev.aiguard.stall.StallSpec;
import org.jspecify.annotations.Nullable;

/**
 * The per-priority side of a {@link GuardPolicy}: what each priority sets differently, and the
 * settings its requests read, resolved once from the policy's specs and the priority's overrides.
 */
final class PrioritySettings {

	/** Priorities without overrides are absent. */
	private final Map<Priority, PriorityOverrides> overrides;
	/** By {@code Priority.ordinal()}. */
	private final GuardPolicy.Resolved[] resolved;

	PrioritySettings(Map<Priority, PriorityOverrides> given, StallSpec stall, RetrySpec retry) {
		this.overrides = given.isEmpty() ? Map.of() : Collections.unmodifiableMap(new EnumMap<>(given));
		Priority[] all = Priority.values();
		this.resolved = new GuardPolicy.Resolved[all.length];
		for (Priority p : all) {
			PriorityOverrides o = overrides(p);
			StallSpec s = o.stallOver(stall);
			RetryRules r = o.retry() != null ? o.retry() : retry.rules();
			resolved[p.ordinal()] = new GuardPolicy.Resolved(s, s.withoutDeadlines(), r,
					retry.maxAnswerAttempts(o.retry()), o.countedByBreaker() == null || o.countedByBreaker(),
					o.laneConcurrency());
		}
	}

	/** @return what {@code priority} sets differently ({@link PriorityOverrides#none()} when nothing) */
	PriorityOverrides overrides(Priority priority) {
		return overrides.getOrDefault(priority, PriorityOverrides.none());
	}

	/** @return the overrides by priority, in priority order */
	Map<Priority, PriorityOverrides> overrides() {
		return overrides;
	}

	GuardPolicy.Resolved resolved(Priority priority) {
		return resolved[priority.ordinal()];
	}

	/**
	 * Puts the priorities' lane sizes into {@code lanes}: a lane these settings size and
	 * {@code previous} sized otherwise (or not at all) is resized; a lane {@code previous} sized and
	 * these do not goes back to the size it was built with.
	 *
	 * @param previous the settings in force on the same lanes before, or {@code null}
	 */
	void applyLaneSizes(PriorityLanes lanes, @Nullable PrioritySettings previous) {
		for (Priority p : Priority.values()) {
			int now = resolved[p.ordinal()].laneConcurrency();
			int before = previous != null ? previous.resolved[p.ordinal()].laneConcurrency() : -1;
			if (now == before) {
				continue;
			}
			lanes.resize(p, now >= 0 ? now : lanes.spec(p).concurrency());
		}
	}
}
