package dev.aiguard.boot.autoconfigure;

import java.time.Duration;

import dev.aiguard.breaker.BreakerSnapshot;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.CircuitBreaker;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;

/**
 * One breaker's health: its state, window and, when open, when the next probe may go. An OPEN or
 * FORCED_OPEN breaker reports {@code aiguard.health.open-status} (UP by default, with
 * {@code degraded: true}), HALF_OPEN {@code aiguard.health.half-open-status}; CLOSED and DISABLED
 * are UP.
 */
final class BreakerHealthIndicator implements HealthIndicator {

	private final CircuitBreaker breaker;
	private final Status open;
	private final Status halfOpen;

	BreakerHealthIndicator(CircuitBreaker breaker, Status open, Status halfOpen) {
		this.breaker = breaker;
		this.open = open;
		this.halfOpen = halfOpen;
	}

	@Override
	public Health health() {
		BreakerState state = breaker.state();
		BreakerSnapshot window = breaker.snapshot();
		Status status = switch (state) {
			case OPEN, FORCED_OPEN -> open;
			case HALF_OPEN -> halfOpen;
			default -> Status.UP;
		};
		Health.Builder health = Health.status(status)
			.withDetail("state", state.name())
			.withDetail("degraded", state != BreakerState.CLOSED && state != BreakerState.DISABLED)
			.withDetail("failureRate", window.failureRate())
			.withDetail("slowCallRate", window.slowCallRate())
			.withDetail("calls", window.calls())
			.withDetail("rejected", breaker.rejectedCalls());
		breaker.untilProbe().map(Duration::toMillis).ifPresent(ms -> health.withDetail("probeInMs", ms));
		return health.build();
	}
}
