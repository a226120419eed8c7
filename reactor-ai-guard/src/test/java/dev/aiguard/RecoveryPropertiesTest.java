package dev.aiguard;

import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.core.Outcome;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.retry.MidStreamPolicy;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import static dev.aiguard.Recovery.Action.CONTINUE;
import static dev.aiguard.Recovery.Action.FAIL;
import static dev.aiguard.Recovery.Action.FAIL_PARTIAL;
import static dev.aiguard.Recovery.Action.FALLBACK;
import static dev.aiguard.Recovery.Action.NOTICE;
import static dev.aiguard.Recovery.Action.PROMPT_TOO_LARGE;
import static dev.aiguard.Recovery.Action.RETRY;
import static dev.aiguard.Recovery.Action.TRUNCATE;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The recovery decision's rules, as properties over every combination of how an attempt ended,
 * what the request has delivered and spent, and the policy's rules.
 */
class RecoveryPropertiesTest {

	/** A budget that answers as told and counts how often it was asked. */
	static final class Budget {
		final boolean grants;
		final AtomicInteger asked = new AtomicInteger();

		Budget(boolean grants) {
			this.grants = grants;
		}

		boolean ask() {
			asked.incrementAndGet();
			return grants;
		}
	}

	@Provide
	Arbitrary<Recovery.Facts> facts() {
		return Combinators.combine(
				Arbitraries.of(Outcome.FAILURE, Outcome.STALLED, Outcome.INCOMPLETE, Outcome.INVALID, Outcome.CLIENT_ERROR,
						Outcome.REJECTED),
				Arbitraries.of(true, false), Arbitraries.of(true, false), Arbitraries.of(true, false),
				Arbitraries.of(true, false), Arbitraries.of(true, false),
				Arbitraries.longs().between(0, 3),
				Arbitraries.integers().between(1, 6))
				.flatAs((outcome, preempted, contextLength, retryable, continuable, stalled, delivered, attempts) ->
						Combinators.combine(Arbitraries.integers().between(0, 4), Arbitraries.integers().between(0, 4),
								Arbitraries.of(true, false))
								.as((truncations, continuations, transcript) -> new Recovery.Facts(outcome, preempted,
										contextLength, retryable, continuable, stalled, delivered, attempts,
										truncations, continuations, transcript)));
	}

	@Provide
	Arbitrary<Recovery.Rules> rules() {
		return Combinators.combine(Arbitraries.of(true, false), Arbitraries.integers().between(1, 5),
				Arbitraries.of(Integer.MAX_VALUE, 1, 2, 3, 5), Arbitraries.integers().between(0, 3),
				Arbitraries.of(MidStreamPolicy.Mode.class), Arbitraries.integers().between(0, 3),
				Arbitraries.of(true, false), Arbitraries.subsetOf(FallbackTrigger.values()))
				.as((callForm, maxAttempts, maxAnswerAttempts, maxTruncations, mode, maxContinuations, canContinue,
						triggers) -> {
					Set<FallbackTrigger> entered = triggers.isEmpty() ? EnumSet.noneOf(FallbackTrigger.class)
							: EnumSet.copyOf(triggers);
					return new Recovery.Rules(callForm, maxAttempts, maxAnswerAttempts, maxTruncations, mode,
							mode == MidStreamPolicy.Mode.CONTINUE ? Math.max(1, maxContinuations) : 0, canContinue,
							entered::contains);
				});
	}

	@Property(tries = 2000)
	void neverRetriesTruncatesOrFallsBackAfterContentWasDelivered(@ForAll("facts") Recovery.Facts f,
			@ForAll("rules") Recovery.Rules r, @ForAll boolean grants) {
		Recovery.Step step = Recovery.decide(f, r, new Budget(grants)::ask);
		if (f.deliveredTokens() > 0L) {
			assertThat(step.action()).isIn(FAIL_PARTIAL, CONTINUE, NOTICE);
			if (step.action() == CONTINUE) {
				assertThat(r.midStream()).isEqualTo(MidStreamPolicy.Mode.CONTINUE);
				assertThat(f.continuationsMade()).isLessThan(r.maxContinuations());
				assertThat(r.callForm() && r.canContinue() && f.transcriptContinuable() && !f.preempted()).isTrue();
				assertThat(f.outcome()).isNotEqualTo(Outcome.INVALID);
			}
			if (step.action() == NOTICE) {
				assertThat(r.midStream()).isEqualTo(MidStreamPolicy.Mode.NOTICE);
			}
		}
	}

	@Property(tries = 2000)
	void attemptsNeverExceedTheConfiguredCaps(@ForAll("facts") Recovery.Facts f, @ForAll("rules") Recovery.Rules r,
			@ForAll boolean grants) {
		Recovery.Step step = Recovery.decide(f, r, new Budget(grants)::ask);
		if (step.action() == RETRY) {
			assertThat(f.attemptsMade()).isLessThan(r.maxAttempts());
		}
		if (step.action() == TRUNCATE) {
			assertThat(f.attemptsMade()).isLessThan(r.maxAnswerAttempts());
			assertThat(f.truncationsMade()).isLessThan(r.maxTruncations());
			assertThat(r.callForm() && f.contextLength()).isTrue();
		}
		if (step.action() == PROMPT_TOO_LARGE) {
			assertThat(f.truncationsMade()).isGreaterThanOrEqualTo(r.maxTruncations());
		}
	}

	@Property(tries = 2000)
	void aDrainedRetryBudgetNeverYieldsARetry(@ForAll("facts") Recovery.Facts f, @ForAll("rules") Recovery.Rules r) {
		Budget drained = new Budget(false);
		Recovery.Step step = Recovery.decide(f, r, drained::ask);
		assertThat(step.action()).isNotEqualTo(RETRY);
		assertThat(step.budgetRefused()).isEqualTo(drained.asked.get() == 1);
	}

	@Property(tries = 2000)
	void theBudgetIsAskedAtMostOnceAndOnlyForARetry(@ForAll("facts") Recovery.Facts f,
			@ForAll("rules") Recovery.Rules r) {
		Budget granting = new Budget(true);
		Recovery.Step step = Recovery.decide(f, r, granting::ask);
		assertThat(granting.asked.get()).isLessThanOrEqualTo(1);
		assertThat(granting.asked.get() == 1).isEqualTo(step.action() == RETRY);
		if (step.action() == RETRY) {
			assertThat(f.retryable()).isTrue();
			assertThat(f.deliveredTokens()).isZero();
			assertThat(f.preempted()).isFalse();
		}
	}

	@Property(tries = 1000)
	void aPreemptedRequestAlwaysEnds(@ForAll("facts") Recovery.Facts f, @ForAll("rules") Recovery.Rules r,
			@ForAll boolean grants) {
		Recovery.Facts preempted = new Recovery.Facts(f.outcome(), true, f.contextLength(), f.retryable(),
				f.continuable(), f.stalledBeforeMaxDuration(), f.deliveredTokens(), f.attemptsMade(),
				f.truncationsMade(), f.continuationsMade(), f.transcriptContinuable());
		Recovery.Step step = Recovery.decide(preempted, r, new Budget(grants)::ask);
		assertThat(step.action()).isEqualTo(f.deliveredTokens() > 0L ? FAIL_PARTIAL : FAIL);
	}

	@Property(tries = 1000)
	void theLadderIsEnteredOnlyByATriggerItListsAndBeforeTheFirstToken(@ForAll("facts") Recovery.Facts f,
			@ForAll("rules") Recovery.Rules r, @ForAll boolean grants) {
		Recovery.Step step = Recovery.decide(f, r, new Budget(grants)::ask);
		if (step.action() == FALLBACK) {
			assertThat(r.fallbackEnteredBy().test(step.trigger())).isTrue();
			assertThat(f.deliveredTokens()).isZero();
			FallbackTrigger expected = f.outcome() == Outcome.CLIENT_ERROR ? FallbackTrigger.CLIENT_ERROR
					: f.outcome() == Outcome.INVALID ? FallbackTrigger.INVALID_OUTPUT
					: f.stalledBeforeMaxDuration() ? FallbackTrigger.STALLED_BEFORE_FIRST_TOKEN
					: FallbackTrigger.RETRIES_EXHAUSTED;
			assertThat(step.trigger()).isEqualTo(expected);
		}
	}

	/** An answer a validator rejected after it reached the subscriber is never continued: it would only grow. */
	@Property(tries = 2000)
	void aRejectedAnswerThatWasDeliveredIsNeverContinued(@ForAll("facts") Recovery.Facts f,
			@ForAll("rules") Recovery.Rules r, @ForAll boolean grants) {
		Recovery.Facts invalid = new Recovery.Facts(Outcome.INVALID, f.preempted(), false, f.retryable(),
				f.continuable(), false, Math.max(1L, f.deliveredTokens()), f.attemptsMade(), f.truncationsMade(),
				f.continuationsMade(), f.transcriptContinuable());
		Recovery.Step step = Recovery.decide(invalid, r, new Budget(grants)::ask);
		assertThat(step.action()).isIn(FAIL_PARTIAL, NOTICE);
		if (step.action() == NOTICE) {
			assertThat(r.midStream()).isEqualTo(MidStreamPolicy.Mode.NOTICE);
			assertThat(invalid.preempted()).isFalse();
		}
	}

	/**
	 * A rejected answer nobody saw (an empty one, a held structured one) is retried when its
	 * rejection allows it and attempts and budget remain; otherwise it enters the ladder by
	 * INVALID_OUTPUT when the ladder lists it, and fails when not.
	 */
	@Property(tries = 2000)
	void aRejectedAnswerNobodySawIsRetriedOrEntersTheLadderAsInvalidOutput(@ForAll("facts") Recovery.Facts f,
			@ForAll("rules") Recovery.Rules r, @ForAll boolean grants) {
		Recovery.Facts invalid = new Recovery.Facts(Outcome.INVALID, false, false, f.retryable(), f.continuable(),
				false, 0L, f.attemptsMade(), f.truncationsMade(), f.continuationsMade(), f.transcriptContinuable());
		Recovery.Step step = Recovery.decide(invalid, r, new Budget(grants)::ask);
		boolean retry = invalid.retryable() && invalid.attemptsMade() < r.maxAttempts() && grants;
		if (retry) {
			assertThat(step.action()).isEqualTo(RETRY);
		}
		else if (r.fallbackEnteredBy().test(FallbackTrigger.INVALID_OUTPUT)) {
			assertThat(step.action()).isEqualTo(FALLBACK);
			assertThat(step.trigger()).isEqualTo(FallbackTrigger.INVALID_OUTPUT);
		}
		else {
			assertThat(step.action()).isEqualTo(FAIL);
		}
	}
}
