package dev.aiguard.breaker;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import dev.aiguard.core.Outcome;
import dev.aiguard.testing.ManualClock;
import dev.aiguard.testing.RecordingMetrics;

class BreakerRegistryTest {

	@Test
	void sharesOneBreakerPerName() {
		BreakerRegistry registry = BreakerRegistry.ofDefaults();
		CircuitBreaker a = registry.breaker("openai");
		assertThat(registry.breaker("openai")).isSameAs(a);
		assertThat(registry.breaker("anthropic")).isNotSameAs(a);
		assertThat(registry.breakers()).hasSize(2);
		assertThat(registry.find("openai")).containsSame(a);
		assertThat(registry.find("none")).isEmpty();
	}

	@Test
	void theFirstRequestDecidesTheConfig() {
		BreakerConfig strict = BreakerConfig.custom().failureRateThreshold(0.1).build();
		BreakerRegistry registry = BreakerRegistry.ofDefaults();
		CircuitBreaker first = registry.breaker("llm", strict);
		assertThat(registry.breaker("llm", BreakerConfig.defaults()).config()).isSameAs(strict);
		assertThat(registry.breaker("llm")).isSameAs(first);
		assertThat(registry.breaker("other").config()).isSameAs(registry.defaultConfig());
	}

	@Test
	void breakersGetTheRegistrysClockMetricsAndListeners() {
		ManualClock clock = new ManualClock();
		RecordingMetrics metrics = new RecordingMetrics();
		List<BreakerEvent> events = new CopyOnWriteArrayList<>();
		BreakerRegistry registry = BreakerRegistry.builder()
				.defaultConfig(BreakerConfig.custom().minimumCalls(2).openWait(Duration.ofSeconds(5))
						.minimumDwell(Duration.ZERO).build())
				.clock(clock).metrics(metrics).listener(events::add).build();
		CircuitBreaker breaker = registry.breaker("llm");
		assertThat(metrics.breakerName()).isEqualTo("llm");

		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		breaker.tryAcquire().record(Outcome.FAILURE, -1);
		assertThat(breaker.state()).isEqualTo(BreakerState.OPEN);
		assertThat(events).hasSize(1);
		clock.advance(Duration.ofSeconds(6));
		assertThat(breaker.tryAcquire()).isNotNull();
		assertThat(metrics.transitions()).containsExactly("CLOSED->OPEN", "OPEN->HALF_OPEN");
	}
}
