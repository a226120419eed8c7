package dev.aiguard;

import dev.aiguard.stall.StallSpec;
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
