package dev.aiguard.consumer;

import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.aiguard.AiGuard;
import dev.aiguard.boot.autoconfigure.AiGuardAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** A Spring Boot application with the starter: Boot's dependency management first, then the BOM. */
class StarterConsumerTest {

	@Test
	void resolvesTheTestedVersions() {
		ClassPathCheck.fromSystemProperties().verify();
	}

	@Test
	void buildsAGuardFromProperties() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class))
			.withPropertyValues("aiguard.policies.chat.stall.first-token-timeout=10s")
			.run(context -> assertNotNull(context.getBean("aiguard.chat", AiGuard.class)));
	}
}
