package dev.aiguard.retry;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class RetrySpecTest {

	@Test
	void defaultsNeverRetryAndFailMidStream() {
		RetrySpec spec = RetrySpec.defaults();
		assertThat(spec.hasRules()).isFalse();
		assertThat(spec.rules().maxAttempts()).isEqualTo(1);
		assertThat(spec.rules()).isSameAs(spec.rules());
		assertThat(spec.budget()).isNull();
		assertThat(spec.midStream().mode()).isEqualTo(MidStreamPolicy.Mode.FAIL);
	}

	@Test
	void settersNameTheFieldAPolicyBuilderNames() {
		RetrySpec spec = RetrySpec.defaults();
		assertThatThrownBy(() -> spec.rules(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("retry must not be null");
		assertThatThrownBy(() -> spec.budget(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("retryBudget must not be null");
		assertThatThrownBy(() -> spec.midStream(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("midStream must not be null");
	}

	@Test
	void everySetterReturnsANewSpecAndLeavesTheTemplateAlone() {
		RetrySpec template = RetrySpec.defaults();
		RetryRules rules = RetryRules.backoff(3, Duration.ofMillis(100));
		RetryBudget budget = RetryBudget.unlimited();
		RetrySpec spec = template.rules(rules).budget(budget).midStream(MidStreamPolicy.notice("cut"));
		assertThat(spec.rules()).isSameAs(rules);
		assertThat(spec.hasRules()).isTrue();
		assertThat(spec.budget()).isSameAs(budget);
		assertThat(spec.midStream().mode()).isEqualTo(MidStreamPolicy.Mode.NOTICE);
		assertThat(template.hasRules()).isFalse();
		assertThat(template.budget()).isNull();
		assertThat(template.midStream().mode()).isEqualTo(MidStreamPolicy.Mode.FAIL);
	}

	@Test
	void answerAttemptsAreBoundedOnlyByRulesSomebodySet() {
		RetryRules three = RetryRules.backoff(3, Duration.ofMillis(100));
		RetryRules five = RetryRules.backoff(5, Duration.ofMillis(100));
		assertThat(RetrySpec.defaults().maxAnswerAttempts(null)).isEqualTo(Integer.MAX_VALUE);
		assertThat(RetrySpec.defaults().maxAnswerAttempts(five)).isEqualTo(5);
		assertThat(RetrySpec.defaults().rules(three).maxAnswerAttempts(null)).isEqualTo(3);
		assertThat(RetrySpec.defaults().rules(three).maxAnswerAttempts(five)).isEqualTo(5);
		// RetryRules.none() set on purpose caps answers at one attempt, unlike rules never set
		assertThat(RetrySpec.defaults().rules(RetryRules.none()).maxAnswerAttempts(null))
				.isEqualTo(RetryRules.none().maxAttempts());
	}
}
