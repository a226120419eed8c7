package dev.aiguard.metrics;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TenantSeriesTest {

	private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

	@Test
	void byDefaultNoTenantHasSeriesOfItsOwn() {
		MicrometerGuardMetrics metrics = new MicrometerGuardMetrics(registry);
		for (int i = 0; i < 100; i++) {
			metrics.tokensUsed("chat", "m", "t" + i, "counted", 10, 5);
			metrics.budgetRemaining("chat", "tenant", "t" + i, "requests", () -> 1L);
		}
		assertThat(registry.find("aiguard.tokens").counters()).hasSize(2)
			.allSatisfy(c -> assertThat(c.getId().getTag("tenant")).isEqualTo(MicrometerGuardMetrics.OTHER_TENANTS));
		assertThat(registry.find("aiguard.budget.remaining.requests").gauges()).isEmpty();
	}

	@Test
	void theFirstTenantsGetSeriesTheRestShareOtherAndGaugesGoWithTheTenant() {
		MicrometerGuardMetrics metrics = new MicrometerGuardMetrics(registry, 2);
		for (int i = 0; i < 100; i++) {
			metrics.cost("chat", "m", "t" + i, "counted", "USD", 0.01);
			metrics.budgetRemaining("chat", "tenant", "t" + i, "requests", () -> 1L);
		}
		assertThat(registry.find("aiguard.cost").counters()).extracting(c -> c.getId().getTag("tenant"))
			.containsExactlyInAnyOrder("t0", "t1", MicrometerGuardMetrics.OTHER_TENANTS);
		assertThat(registry.find("aiguard.cost").tag("tenant", "__other__").counter().count()).isEqualTo(0.98, org.assertj.core.data.Offset.offset(1e-9));
		assertThat(registry.find("aiguard.budget.remaining.requests").gauges()).hasSize(2);
		metrics.budgetForgotten("chat", "tenant", "t0");
		assertThat(registry.find("aiguard.budget.remaining.requests").gauges()).extracting(g -> g.getId().getTag("id"))
			.containsExactly("t1");
		metrics.budgetRemaining("chat", "provider", "key", "requests", () -> 1L); // a provider key always has its gauge
		assertThat(registry.find("aiguard.budget.remaining.requests").tag("scope", "provider").gauges()).hasSize(1);
	}

	@Test
	void aNegativeNumberOfSeriesIsRefused() {
		assertThatThrownBy(() -> new MicrometerGuardMetrics(registry, -1)).isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("tenantSeries");
	}
}
