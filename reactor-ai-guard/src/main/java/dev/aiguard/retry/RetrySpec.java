package dev.aiguard.retry;

import org.jspecify.annotations.Nullable;

/**
 * The retry capability of a policy: the rules for attempts that failed before their first token,
 * the shared budget retries draw from, and what happens when an attempt fails after tokens reached
 * the subscriber. Immutable and copy-on-write: every setter checks its argument and returns a new
 * spec, so one spec can be a shared template.
 *
 * <pre>{@code
 * RetrySpec retry = RetrySpec.defaults()
 *     .rules(RetryRules.backoff(3, Duration.ofMillis(250)))
 *     .budget(sharedBudget)
 *     .midStream(MidStreamPolicy.notice("[answer cut short]"));
 * }</pre>
 *
 * Defaults: no rules set (a failed attempt is not retried), no budget, {@link MidStreamPolicy#fail()}.
 * The messages name the fields as a policy builder does: {@code retry}, {@code retryBudget},
 * {@code midStream}.
 */
public final class RetrySpec {

	private static final RetrySpec DEFAULTS = new RetrySpec(null, null, MidStreamPolicy.fail());
	/** What a spec without rules answers: one instance, so the rules read stay the same object. */
	private static final RetryRules NEVER = RetryRules.none();

	/** {@code null}: no rules were set, the spec never retries. */
	@Nullable
	private final RetryRules rules;
	@Nullable
	private final RetryBudget budget;
	private final MidStreamPolicy<?> midStream;

	private RetrySpec(@Nullable RetryRules rules, @Nullable RetryBudget budget, MidStreamPolicy<?> midStream) {
		this.rules = rules;
		this.budget = budget;
		this.midStream = midStream;
	}

	/** @return no retries, no budget, mid-stream failures fail */
	public static RetrySpec defaults() {
		return DEFAULTS;
	}

	/**
	 * @param retryRules when and how attempts that failed before their first token are retried; its
	 *        {@code maxAttempts} then also caps truncated retries
	 */
	public RetrySpec rules(RetryRules retryRules) {
		return new RetrySpec(require("retry", retryRules), budget, midStream);
	}

	/** @param retryBudget shared limit on retries as a share of requests */
	public RetrySpec budget(RetryBudget retryBudget) {
		return new RetrySpec(rules, require("retryBudget", retryBudget), midStream);
	}

	/** @param policy what happens when an attempt fails after tokens reached the subscriber */
	public RetrySpec midStream(MidStreamPolicy<?> policy) {
		return new RetrySpec(rules, budget, require("midStream", policy));
	}

	/** @return the rules set, else {@link RetryRules#none()} */
	public RetryRules rules() {
		return rules != null ? rules : NEVER;
	}

	/** @return whether rules were set: only then does their {@code maxAttempts} cap truncations too */
	public boolean hasRules() {
		return rules != null;
	}

	/** @return the shared budget retries draw from, or {@code null} for none */
	@Nullable
	public RetryBudget budget() {
		return budget;
	}

	public MidStreamPolicy<?> midStream() {
		return midStream;
	}

	/**
	 * The most upstream calls a request makes for the start of its answer (first attempt, retries
	 * and truncated retries together) when a priority may bring rules of its own.
	 *
	 * @param priorityRules the priority's own rules, or {@code null} to follow this spec's
	 * @return the {@code maxAttempts} of the rules in force when rules were set for the spec or the
	 *         priority, else unbounded (truncations are then bounded by their own spec)
	 */
	public int maxAnswerAttempts(@Nullable RetryRules priorityRules) {
		RetryRules r = priorityRules != null ? priorityRules : rules;
		return r != null ? r.maxAttempts() : Integer.MAX_VALUE;
	}

	@Override
	public String toString() {
		return "RetrySpec{rules=" + (rules == null ? "unset" : rules.toString()) + ", budget=" + budget
				+ ", midStream=" + midStream + '}';
	}

	private static <V> V require(String field, @Nullable V value) {
		if (value == null) {
			throw new IllegalArgumentException(field + " must not be null");
		}
		return value;
	}
}
