package dev.aiguard.budget;

import java.math.BigDecimal;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PriceTableTest {

	final PriceTable prices = PriceTable.in("USD")
			.model("gpt-4o", new BigDecimal("2.50"), new BigDecimal("10"))
			.model("gpt-4o-mini", new BigDecimal("0.15"), new BigDecimal("0.60"));

	@Test
	void theLongestMatchingNamePrices() {
		assertThat(prices.cost("gpt-4o-mini-2024-07-18", 1_000_000, 0)).isEqualByComparingTo("0.15");
		assertThat(prices.cost("gpt-4o-2024-08-06", 0, 1_000_000)).isEqualByComparingTo("10");
		assertThat(prices.cost("claude", 1_000, 1_000)).isEqualByComparingTo("0");
		assertThat(prices.otherwise(BigDecimal.ONE, BigDecimal.ONE).cost("claude", 1_000_000, 0))
				.isEqualByComparingTo("1");
	}

	@Test
	void costsRoundUpToNanoUnitsAndNeverOverflow() {
		// 1 token at 0.15 per million = 0.00000015
		assertThat(prices.cost("gpt-4o-mini", 1, 0)).isEqualByComparingTo("0.00000015");
		PriceTable odd = PriceTable.in("EUR").model("m", new BigDecimal("0.000000001"), BigDecimal.ZERO);
		assertThat(odd.cost("m", 1, 0)).isEqualByComparingTo("0.000000001");
		PriceTable dear = PriceTable.in("EUR").model("m", new BigDecimal("9000000000"), BigDecimal.ZERO);
		assertThat(dear.costNanos("m", Long.MAX_VALUE / 2, 0)).isEqualTo(Long.MAX_VALUE);
	}

	@Test
	void badPricesAreRefusedNamingTheField() {
		assertThatThrownBy(() -> PriceTable.in("US D")).hasMessageContaining("currency must be");
		assertThatThrownBy(() -> prices.model("x", new BigDecimal("-1"), BigDecimal.ONE))
				.hasMessage("prices.x.input must be >= 0, was -1");
		assertThatThrownBy(() -> prices.model("x", BigDecimal.ONE, new BigDecimal("0.0000000001")))
				.hasMessage("prices.x.output must have at most 9 decimals, was 0.0000000001");
		assertThat(prices.toString()).isEqualTo("PriceTable(USD, gpt-4o-mini=0.15/0.6, gpt-4o=2.5/10 per 1M tokens)");
	}

	@Test
	void reservesNestByPriority() {
		BudgetSpec spec = BudgetSpec.defaults().tenants(TenantLimits.unlimited().requestsPerMinute(100))
				.reserve(dev.aiguard.core.Priority.P0, 0.1).reserve(dev.aiguard.core.Priority.P1, 0.3);
		assertThat(spec.floorFor(dev.aiguard.core.Priority.P0)).isZero();
		assertThat(spec.floorFor(dev.aiguard.core.Priority.P1)).isEqualTo(0.1);
		assertThat(spec.floorFor(dev.aiguard.core.Priority.P2)).isEqualTo(0.3);
	}
}
