package dev.aiguard;

import dev.aiguard.fallback.FallbackTrigger;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The ladder's trigger a failed attempt's step names reaches the fallback stage as the shortfall of the same name. */
class RecoveryShortfallTest {

	@Test
	void aFallbackStepNamesItsTriggerInTheStageContractsWords() {
		for (FallbackTrigger trigger : FallbackTrigger.values()) {
			Recovery.Step step = new Recovery.Step(Recovery.Action.FALLBACK, trigger, false);
			if (trigger == FallbackTrigger.LOAD) {
				assertThatThrownBy(step::shortfall).isInstanceOf(IllegalStateException.class);
			}
			else {
				assertThat(step.shortfall().name()).isEqualTo(trigger.name());
			}
		}
	}
}
