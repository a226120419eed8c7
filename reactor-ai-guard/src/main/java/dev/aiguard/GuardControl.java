package dev.aiguard;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.internal.Callbacks;

/**
 * Replaces the policy of a live guard while it serves requests, and keeps the audit trail of what
 * changed. Made by {@link AiGuard#live(GuardPolicy)}; the guard itself is {@link #guard()}.
 *
 * <pre>{@code
 * GuardControl<ChatChunk> control = AiGuard.live(policy);
 * control.addListener(change -> audit.record(change));            // non-blocking
 * Flux<ChatChunk> answer = control.guard().call(request, client::stream);
 *
 * control.update("ops:alice", b -> b
 *     .stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(3)).idleTimeout(Duration.ofSeconds(2)))
 *     .forPriority(Priority.P2, p -> p.retry(RetryRules.none()).laneConcurrency(1)));
 * }</pre>
 *
 * <ul>
 * <li><b>Whole or nothing.</b> A change builds a whole new {@link GuardPolicy} from the one in
 * force; the builder's checks and the guard's (chunk types, the name) judge it as a whole. A
 * refused change throws {@link PolicyChangeRefusedException} naming the field, and nothing of it
 * is applied.</li>
 * <li><b>New requests only.</b> A request reads the policy in force once, when it is subscribed,
 * and keeps it to its end (its retries, fallback, deadlines): a change never reaches a running
 * stream.</li>
 * <li><b>Serialised, none lost.</b> Changes are swapped in by compare-and-set on the policy in
 * force; a change that lost the race is built again from the winner's policy, so the change
 * function may run more than once and must have no side effects. Their effects on shared
 * components (lane sizes, the policy's own breaker) and their audit events follow in the order
 * the changes went into force, applied by one thread at a time (possibly a concurrent
 * changer's).</li>
 * <li><b>Audit.</b> Each change in force is a {@link PolicyChange} (settings before and after, the
 * actor, the time from the policy's timer), delivered to the listeners, kept in the last
 * {@value #HISTORY_SIZE} of {@link #history()}, and counted by the policy's metrics
 * ({@code aiguard.policy.changes}). A throwing listener is isolated: its exception goes to
 * {@code Hooks.onErrorDropped}, the other listeners still hear the change.</li>
 * </ul>
 *
 * @param <T> the chunk type of the guard
 */
public final class GuardControl<T> {

	/** How many of the latest changes {@link #history()} keeps. */
	public static final int HISTORY_SIZE = 64;

	private static final int MAX_ACTOR_LENGTH = 200;

	@SuppressWarnings("rawtypes")
	private static final AtomicIntegerFieldUpdater<GuardControl> WIP =
			AtomicIntegerFieldUpdater.newUpdater(GuardControl.class, "wip");

	private final AiGuard<T> guard;
	private final List<Consumer<? super PolicyChange>> listeners = new CopyOnWriteArrayList<>();

	/** The last view whose effects and audit event were carried out; written by the drain loop only. */
	private PolicyView<T> applied;
	private volatile int wip;
	/** The latest changes, oldest first; replaced whole by the drain loop. */
	private volatile List<PolicyChange> history = List.of();

	GuardControl(AiGuard<T> guard) {
		this.guard = guard;
		this.applied = guard.view();
	}

	/** @return the guard this control changes: one instance for every request, like any {@link AiGuard} */
	public AiGuard<T> guard() {
		return guard;
	}

	/** @return the policy in force: the one the next request starts with */
	public GuardPolicy policy() {
		return guard.view().policy;
	}

	/** @return how many changes went into force so far (0 before the first) */
	public long version() {
		return guard.view().version;
	}

	/**
	 * Changes some settings of the policy in force.
	 *
	 * @param actor who makes the change, for the audit trail (1 to 200 characters, not blank)
	 * @param change receives a builder holding the settings in force and returns the builder to
	 *        build (usually the same); it may run more than once when changes race
	 * @return the change as it went into force
	 * @throws PolicyChangeRefusedException naming the field when the new policy is invalid; nothing changed
	 */
	public PolicyChange update(String actor, UnaryOperator<GuardPolicy.Builder> change) {
		checkActor(actor);
		Objects.requireNonNull(change, "change");
		for (;;) {
			PolicyView<T> old = guard.view();
			GuardPolicy next;
			try {
				GuardPolicy.Builder b = change.apply(old.policy.toBuilder());
				if (b == null) {
					throw new IllegalArgumentException("change returned no builder");
				}
				next = b.inheritBreaker(old.policy).build();
				if (!next.name().equals(old.policy.name())) {
					throw new IllegalArgumentException(
							"name must stay '" + old.policy.name() + "', was '" + next.name() + "'");
				}
				AiGuard.checkFits(next, guard.inspector());
			}
			catch (IllegalArgumentException invalid) {
				old.policy.metrics().policyChangeRefused(old.policy.name());
				throw new PolicyChangeRefusedException(old.policy.name(), actor, invalid);
			}
			PolicyChange made = new PolicyChange(next.name(), actor,
					Instant.ofEpochMilli(next.timer().now(TimeUnit.MILLISECONDS)), old.version + 1,
					PolicyChange.between(old.policy.describe(), next.describe()));
			PolicyView<T> view = new PolicyView<>(next, old.version + 1, made);
			if (AiGuard.VIEW.compareAndSet(guard, old, view)) {
				// the drain loop walks the chain; a link it has not seen yet is picked up by this drain
				old.next = view;
				drain();
				return made;
			}
		}
	}

	/**
	 * Puts {@code policy} in force in place of the current one: the same as an {@link #update}
	 * whose builder holds {@code policy}'s settings. A breaker the policy builds itself from a
	 * {@code BreakerConfig} is the one in force, reconfigured, as for any update.
	 *
	 * @param actor who makes the change, for the audit trail
	 * @param policy the new policy; its name must be the name in force
	 * @return the change as it went into force
	 * @throws PolicyChangeRefusedException naming the field when {@code policy} cannot replace the one in force
	 */
	public PolicyChange replace(String actor, GuardPolicy policy) {
		Objects.requireNonNull(policy, "policy");
		return update(actor, ignored -> policy.toBuilder());
	}

	/** @param listener hears each change once it is in force, in order; must not block */
	public void addListener(Consumer<? super PolicyChange> listener) {
		listeners.add(Objects.requireNonNull(listener, "listener"));
	}

	/** @return whether {@code listener} was listening */
	public boolean removeListener(Consumer<? super PolicyChange> listener) {
		return listeners.remove(listener);
	}

	/** @return the last {@value #HISTORY_SIZE} changes in force, oldest first (an immutable snapshot) */
	public List<PolicyChange> history() {
		return history;
	}

	@Override
	public String toString() {
		PolicyView<T> v = guard.view();
		return "GuardControl{" + v.policy.name() + ", version=" + v.version + '}';
	}

	private static void checkActor(String actor) {
		if (actor == null || actor.isBlank() || actor.length() > MAX_ACTOR_LENGTH) {
			throw new IllegalArgumentException("actor must be 1 to " + MAX_ACTOR_LENGTH
					+ " characters, not blank, was " + (actor == null ? "null" : "'" + actor + "'"));
		}
	}

	/**
	 * Carries out the changes in force that are not yet carried out, in order, on one thread at a
	 * time: whoever finds the loop busy leaves its change to the thread in it.
	 */
	private void drain() {
		if (WIP.getAndIncrement(this) != 0) {
			return;
		}
		int missed = 1;
		for (;;) {
			PolicyView<T> done = applied;
			for (PolicyView<T> n = done.next; n != null; n = done.next) {
				inForce(done.policy, n);
				done = n;
			}
			applied = done;
			missed = WIP.addAndGet(this, -missed);
			if (missed == 0) {
				return;
			}
		}
	}

	/** What follows a change in force: shared components follow it, and the audit event goes out. */
	private void inForce(GuardPolicy before, PolicyView<T> now) {
		GuardPolicy policy = now.policy;
		PolicyChange change = now.change;
		try {
			policy.applyLaneSizes(before);
		}
		catch (Throwable resizeFailure) {
			Callbacks.dropped(resizeFailure);
		}
		BreakerConfig config = policy.breakerConfig();
		CircuitBreaker breaker = policy.breaker();
		if (config != null && breaker != null && breaker == before.breaker() && !config.equals(breaker.config())) {
			try {
				breaker.reconfigure(config, "policy change by " + (change != null ? change.actor() : "an unnamed actor"));
			}
			catch (Throwable reconfigureFailure) {
				Callbacks.dropped(reconfigureFailure);
			}
		}
		List<PolicyChange> kept = history;
		List<PolicyChange> next = new ArrayList<>(Math.min(kept.size() + 1, HISTORY_SIZE));
		next.addAll(kept.size() < HISTORY_SIZE ? kept : kept.subList(kept.size() - HISTORY_SIZE + 1, kept.size()));
		next.add(change);
		history = List.copyOf(next);
		// the policy's meters are isolated (GuardMetrics.isolated): a throwing one never gets here
		policy.metrics().policyChanged(policy.name());
		for (Consumer<? super PolicyChange> listener : listeners) {
			try {
				listener.accept(change);
			}
			catch (Throwable listenerFailure) {
				Callbacks.dropped(listenerFailure);
			}
		}
	}
}
