package dev.aiguard.boot.autoconfigure;

import java.util.Locale;

import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthContributor;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.annotation.Bean;

/**
 * The health contributor {@code aiguardBreakers}: one indicator per breaker (a single UP indicator
 * when there is no breaker), in the health group {@code aiguard} unless the application defines
 * that group itself. {@code management.health.aiguard.enabled=false} turns it off.
 */
@AutoConfiguration(after = AiGuardAutoConfiguration.class)
@ConditionalOnClass(name = "org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator")
@ConditionalOnBean(AiGuardRegistry.class)
public class AiGuardHealthAutoConfiguration {

	@Bean
	@ConditionalOnMissingBean(name = "aiguardBreakersHealthContributor")
	@ConditionalOnEnabledHealthIndicator("aiguard")
	HealthContributor aiguardBreakersHealthContributor(AiGuardRegistry registry, AiGuardProperties properties) {
		if (registry.breakers().isEmpty()) {
			return (HealthIndicator) () -> Health.up().withDetail("breakers", 0).build();
		}
		Status open = status(properties.getHealth().getOpenStatus());
		Status halfOpen = status(properties.getHealth().getHalfOpenStatus());
		return CompositeHealthContributor.fromMap(registry.breakers(),
				breaker -> new BreakerHealthIndicator(breaker, open, halfOpen));
	}

	private static Status status(String code) {
		return new Status(code.trim().toUpperCase(Locale.ROOT));
	}
}
