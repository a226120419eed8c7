package dev.aiguard.demo;

import dev.aiguard.breaker.BreakerSnapshot;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.ReactiveHealthIndicator;
import reactor.core.publisher.Mono;

/**
 * Actuator health component {@code breaker}: the model breaker's state and window. An open
 * breaker keeps the service {@code UP} — the fallbacks still answer, and restarting the instance
 * would not heal the provider — but says {@code degraded: true} so a dashboard can show it.
 */
final class BreakerHealthIndicator implements ReactiveHealthIndicator {

	private final CircuitBreaker breaker;

	BreakerHealthIndicator(CircuitBreaker breaker) {
		this.breaker = breaker;
	}

	@Override
	public Mono<Health> health() {
		return Mono.fromSupplier(() -> {
			BreakerState state = breaker.state();
			BreakerSnapshot window = breaker.snapshot();
			return Health.up()
				.withDetail("name", breaker.name())
				.withDetail("state", state.name())
				.withDetail("degraded", state != BreakerState.CLOSED && state != BreakerState.DISABLED)
				.withDetail("failureRate", window.failureRate())
				.withDetail("calls", window.calls())
				.withDetail("rejected", breaker.rejectedCalls())
				.build();
		});
	}
}
