package dev.aiguard.boot.autoconfigure;

import java.util.Map;

import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.env.DefaultPropertiesPropertySource;
import org.springframework.core.env.ConfigurableEnvironment;

/**
 * Declares the health group {@code aiguard} ({@code /actuator/health/aiguard}) holding the
 * {@code aiguardBreakers} contributor, as a default: any setting of the application for
 * {@code management.endpoint.health.group.aiguard.include} wins.
 */
class HealthGroupDefaults implements EnvironmentPostProcessor {

	static final String INCLUDE = "management.endpoint.health.group.aiguard.include";

	@Override
	public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
		if (!environment.containsProperty(INCLUDE)) {
			DefaultPropertiesPropertySource.addOrMerge(Map.of(INCLUDE, "aiguardBreakers"), environment.getPropertySources());
		}
	}
}
