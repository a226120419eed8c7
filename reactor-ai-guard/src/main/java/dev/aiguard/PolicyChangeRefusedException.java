package dev.aiguard;

/**
 * A live change of a guard's policy was refused: the new policy is invalid as a whole (its
 * builder, or the guard, named the field at fault), and nothing of it was applied. The message
 * names the policy, the actor and the field; the cause is the check that failed.
 *
 * <pre>{@code
 * try {
 *     control.update("ops:alice", b -> b.forPriority(Priority.P0, p -> p.firstTokenTimeout(Duration.ZERO)));
 * }
 * catch (PolicyChangeRefusedException refused) {
 *     // "policy 'chat': the change by 'ops:alice' was refused, nothing changed:
 *     //  priority.P0.firstTokenTimeout must be > 0, was PT0S"
 * }
 * }</pre>
 */
public final class PolicyChangeRefusedException extends IllegalArgumentException {

	private static final long serialVersionUID = 1L;

	private final String policy;
	private final String actor;
	private final String reason;

	public PolicyChangeRefusedException(String policy, String actor, IllegalArgumentException cause) {
		super("policy '" + policy + "': the change by '" + actor + "' was refused, nothing changed: "
				+ cause.getMessage(), cause);
		this.policy = policy;
		this.actor = actor;
		this.reason = String.valueOf(cause.getMessage());
	}

	/** @return the name of the policy that stays in force */
	public String policy() {
		return policy;
	}

	/** @return who asked for the change */
	public String actor() {
		return actor;
	}

	/** @return what the check said, naming the field and its value */
	public String reason() {
		return reason;
	}
}
