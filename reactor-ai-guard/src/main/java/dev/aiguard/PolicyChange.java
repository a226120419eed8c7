package dev.aiguard;

import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * One change of a live guard's policy, as it went into force: the audit record a
 * {@link GuardControl} hands to its listeners and keeps in its {@link GuardControl#history()}.
 *
 * <pre>{@code
 * control.addListener(change -> log.info("{} changed policy {} at {}: {}",
 *     change.actor(), change.policy(), change.at(), change.settings()));
 * }</pre>
 *
 * @param policy the policy's name
 * @param actor who made the change, as the caller named them
 * @param at when, read from the new policy's timer (virtual time under {@code StepVerifier.withVirtualTime})
 * @param version the guard's policy version this change put in force: 1 for the first change, one more for each
 * @param settings the settings whose value changed, in {@link GuardPolicy#describe()} order (empty when the new
 *        policy describes itself as the old one did)
 */
public record PolicyChange(String policy, String actor, Instant at, long version, List<Setting> settings) {

	/** The value a setting has when one of the two policies does not describe it. */
	public static final String UNSET = "unset";

	/**
	 * @param name the setting's name in {@link GuardPolicy#describe()}, e.g. {@code stall.firstTokenTimeout}
	 * @param before its value in the policy replaced ({@value PolicyChange#UNSET} when it had none)
	 * @param after its value in the policy now in force ({@value PolicyChange#UNSET} when it has none)
	 */
	public record Setting(String name, String before, String after) {

		public Setting {
			Objects.requireNonNull(name, "name");
			Objects.requireNonNull(before, "before");
			Objects.requireNonNull(after, "after");
		}

		@Override
		public String toString() {
			return name + ": " + before + " -> " + after;
		}
	}

	public PolicyChange {
		Objects.requireNonNull(policy, "policy");
		Objects.requireNonNull(actor, "actor");
		Objects.requireNonNull(at, "at");
		settings = List.copyOf(settings);
	}

	/** @return the settings that differ between two descriptions, in the order of {@code before}, then {@code after} */
	static List<Setting> between(Map<String, String> before, Map<String, String> after) {
		Set<String> names = new LinkedHashSet<>(before.keySet());
		names.addAll(after.keySet());
		List<Setting> changed = new ArrayList<>();
		for (String name : names) {
			String was = before.getOrDefault(name, UNSET);
			String now = after.getOrDefault(name, UNSET);
			if (!was.equals(now)) {
				changed.add(new Setting(name, was, now));
			}
		}
		return changed;
	}
}
