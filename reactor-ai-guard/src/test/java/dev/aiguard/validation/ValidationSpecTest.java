package dev.aiguard.validation;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ValidationSpecTest {

	@Test
	void noneValidatesNothing() {
		assertThat(ValidationSpec.none().validators()).isEmpty();
		assertThat(ValidationSpec.none().streamingValidators()).isEmpty();
		assertThat(ValidationSpec.none().validates()).isFalse();
	}

	@Test
	void aNullArrayOrElementIsRefusedNamingTheField() {
		ValidationSpec spec = ValidationSpec.none();
		assertThatThrownBy(() -> spec.validate((OutputValidator[]) null))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("validate must not be null");
		assertThatThrownBy(() -> spec.validate(Validators.emptyAnswer(), null))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("validate must not be null");
		assertThatThrownBy(() -> spec.validateStreaming((StreamingValidator[]) null))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("validateStreaming must not be null");
		assertThatThrownBy(() -> spec.validateStreaming(RepetitionDetector.defaults(), null))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("validateStreaming must not be null");
	}

	@Test
	void validatorsAreAddedInOrderToANewSpec() {
		OutputValidator empty = Validators.emptyAnswer();
		OutputValidator finish = Validators.finishReason();
		StreamingValidator repetition = RepetitionDetector.defaults();
		ValidationSpec first = ValidationSpec.none().validate(empty);
		ValidationSpec both = first.validate(finish).validateStreaming(repetition);
		assertThat(first.validators()).containsExactly(empty);
		assertThat(first.streamingValidators()).isEmpty();
		assertThat(both.validators()).containsExactly(empty, finish);
		assertThat(both.streamingValidators()).containsExactly(repetition);
		assertThat(both.validates()).isTrue();
		assertThat(ValidationSpec.none().validateStreaming(repetition).validates()).isTrue();
		assertThatThrownBy(() -> both.validators().add(empty)).isInstanceOf(UnsupportedOperationException.class);
	}

	@Test
	void aRefusedAdditionLeavesTheSpecAsItWas() {
		OutputValidator empty = Validators.emptyAnswer();
		ValidationSpec spec = ValidationSpec.none().validate(empty);
		assertThatThrownBy(() -> spec.validate(Validators.finishReason(), null))
				.isInstanceOf(IllegalArgumentException.class);
		assertThat(spec.validators()).containsExactly(empty);
	}
}
