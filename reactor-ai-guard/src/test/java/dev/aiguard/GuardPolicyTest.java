package dev.aiguard;

import java.time.Duration;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.validation.OutputValidator;
import dev.aiguard.validation.StreamingValidator;
import dev.aiguard.validation.Validators;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import dev.aiguard.core.Priority;

class GuardPolicyTest {

	@Test
	void buildNamesTheBadName() {
		assertThatThrownBy(() -> GuardPolicy.builder("").build())
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("name").hasMessageContaining("''");
		assertThatThrownBy(() -> GuardPolicy.builder("has space").build())
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("'has space'");
		assertThatThrownBy(() -> GuardPolicy.builder(null).build())
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("name");
	}

	@Test
	void settersNameTheirField() {
		GuardPolicy.Builder b = GuardPolicy.builder("p");
		assertThatThrownBy(() -> b.defaultPriority(null)).hasMessageContaining("defaultPriority");
		assertThatThrownBy(() -> b.stall(null)).hasMessageContaining("stall");
		assertThatThrownBy(() -> b.metrics(null)).hasMessageContaining("metrics");
		assertThatThrownBy(() -> b.onReport(null)).hasMessageContaining("onReport");
		assertThatThrownBy(() -> b.timer(null)).hasMessageContaining("timer");
		assertThatThrownBy(() -> b.errorClassifier(null)).hasMessageContaining("errorClassifier");
	}

	@Test
	void capabilitySettersNameTheirFieldThroughTheirSpec() {
		GuardPolicy.Builder b = GuardPolicy.builder("p");
		assertThatThrownBy(() -> b.retry(null)).hasMessage("retry must not be null");
		assertThatThrownBy(() -> b.retryBudget(null)).hasMessage("retryBudget must not be null");
		assertThatThrownBy(() -> b.midStream(null)).hasMessage("midStream must not be null");
		assertThatThrownBy(() -> b.fallback(null)).hasMessage("fallback must not be null");
		assertThatThrownBy(() -> b.responseCache(null)).hasMessage("responseCache must not be null");
		assertThatThrownBy(() -> b.cacheKey(null)).hasMessage("cacheKey must not be null");
		assertThatThrownBy(() -> b.validate((OutputValidator[]) null)).hasMessage("validate must not be null");
		assertThatThrownBy(() -> b.validateStreaming((StreamingValidator) null))
				.hasMessage("validateStreaming must not be null");
		assertThatThrownBy(() -> b.breaker((CircuitBreaker) null)).hasMessage("breaker must not be null");
		assertThatThrownBy(() -> b.breaker((BreakerConfig) null)).hasMessage("breaker must not be null");
		assertThatThrownBy(() -> b.breaker((BreakerPath) null)).hasMessage("breaker must not be null");
		// nothing refused reached the policy
		GuardPolicy policy = b.build();
		assertThat(policy.validators()).isEmpty();
		assertThat(policy.breakerGate()).isNull();
		assertThat(policy.describe()).containsEntry("retry", "unset (no retry)");
	}

	@Test
	void aLaneSizeWithoutLanesFailsAtBuildNamingThePriority() {
		GuardPolicy.Builder b = GuardPolicy.builder("p").forPriority(Priority.P2, o -> o.laneConcurrency(2));
		assertThatThrownBy(b::build).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("priority.P2.laneConcurrency").hasMessageContaining("2 without lanes");
	}

	@Test
	void thePolicyComposesTheSpecsAndTheOverrides() {
		RetryRules three = RetryRules.backoff(3, Duration.ofMillis(100));
		RetryRules never = RetryRules.none();
		GuardPolicy policy = GuardPolicy.builder("p").retry(three).retryBudget(RetryBudget.unlimited())
				.midStream(MidStreamPolicy.notice("cut")).breaker(BreakerConfig.defaults())
				.validate(Validators.emptyAnswer())
				.forPriority(Priority.P0, o -> o.retry(never).countedByBreaker(false))
				.build();
		assertThat(policy.retry()).isSameAs(three);
		assertThat(policy.retry(Priority.P1)).isSameAs(three);
		assertThat(policy.retry(Priority.P0)).isSameAs(never);
		assertThat(policy.resolved(Priority.P1).maxAnswerAttempts()).isEqualTo(3);
		assertThat(policy.resolved(Priority.P0).maxAnswerAttempts()).isEqualTo(RetryRules.none().maxAttempts());
		assertThat(policy.countedByBreaker(Priority.P0)).isFalse();
		assertThat(policy.countedByBreaker(Priority.P1)).isTrue();
		assertThat(policy.breaker()).isNotNull();
		assertThat(policy.breaker().name()).isEqualTo("p");
		assertThat(policy.breakerConfig()).isSameAs(BreakerConfig.defaults());
		assertThat(policy.validates()).isTrue();
		assertThat(policy.describe()).containsEntry("retry.maxAttempts", "3").containsEntry("breaker", "own")
				.containsEntry("priority.P0.countedByBreaker", "false");

		// a copy keeps every spec and builds a breaker of its own from the same config
		GuardPolicy copy = policy.toBuilder().build();
		assertThat(copy.describe()).isEqualTo(policy.describe());
		assertThat(copy.breaker()).isNotSameAs(policy.breaker());
		assertThat(copy.resolved(Priority.P1).maxAnswerAttempts()).isEqualTo(3);
		assertThat(policy.toBuilder().withoutValidation().build().validates()).isFalse();
	}

	@Test
	void withoutRulesARequestIsNotBoundedByTheRetrySpec() {
		GuardPolicy policy = GuardPolicy.builder("p").build();
		assertThat(policy.resolved(Priority.P1).maxAnswerAttempts()).isEqualTo(Integer.MAX_VALUE);
		assertThat(policy.toBuilder().adjustRetry(r -> r).build().resolved(Priority.P1).maxAnswerAttempts())
				.isEqualTo(RetryRules.none().maxAttempts());
	}

	@Test
	void policyIsImmutableAndDerivable() {
		GuardPolicy base = GuardPolicy.builder("base").defaultPriority(Priority.P0).build();
		GuardPolicy derived = base.toBuilder().defaultPriority(Priority.P2).stall(StallSpec.defaults()
				.idleTimeout(java.time.Duration.ofSeconds(3))).build();
		assertThat(base.defaultPriority()).isEqualTo(Priority.P0);
		assertThat(base.stall().idleTimeout()).isNull();
		assertThat(derived.defaultPriority()).isEqualTo(Priority.P2);
		assertThatThrownBy(() -> base.reportListeners().add(r -> { }))
				.isInstanceOf(UnsupportedOperationException.class);
	}

	@Test
	void priorityParsesAndRejectsClearly() {
		assertThat(Priority.parse(" p0 ")).isEqualTo(Priority.P0);
		assertThatThrownBy(() -> Priority.parse("P9")).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("'P9'");
		assertThat(Priority.P2.promoted()).isEqualTo(Priority.P1);
		assertThat(Priority.P0.promoted()).isEqualTo(Priority.P0);
		assertThat(Priority.P0.isHigherThan(Priority.P1)).isTrue();
	}
}
