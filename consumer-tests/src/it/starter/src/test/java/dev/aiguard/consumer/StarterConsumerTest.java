package dev.aiguard.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.aiguard.AiGuard;
import dev.aiguard.boot.autoconfigure.AiGuardAutoConfiguration;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * A Spring Boot application with the starter and nothing else: Boot's dependency management first,
 * then the BOM. Bucket4j and jtokkit are not on its class path, so the settings that need them fail
 * at startup naming the artifact to add.
 */
class StarterConsumerTest {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class));

	@Test
	void resolvesTheTestedVersions() {
		ClassPathCheck.fromSystemProperties().verify();
	}

	@Test
	void buildsAGuardFromProperties() {
		runner.withPropertyValues("aiguard.policies.chat.stall.first-token-timeout=10s")
			.run(context -> assertThat(context.getBean("aiguard.chat", AiGuard.class)).isNotNull());
	}

	@Test
	void budgetsWithoutBucket4jNameWhatToAdd() {
		runner.withPropertyValues("aiguard.policies.chat.budget=true", "aiguard.budgets.tenant.requests-per-minute=60")
			.run(context -> assertThat(context).getFailure()
				.hasStackTraceContaining("aiguard.policies.chat")
				.hasStackTraceContaining("com.bucket4j:bucket4j_jdk17-core"));
	}

	@Test
	void exactTokenCountsWithoutJtokkitNameWhatToAdd() {
		runner.withPropertyValues("aiguard.budgets.encodings.gpt-4o=o200k_base", "aiguard.policies.chat.budget=true")
			.run(context -> assertThat(context).getFailure()
				.hasStackTraceContaining("aiguard.budgets.encodings.gpt-4o")
				.hasStackTraceContaining("com.knuddels:jtokkit"));
	}
}
