package dev.aiguard.boot.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/** A key under {@code aiguard.*} that no bound class knows stops the start, naming the nearest known key. */
class UnknownPropertyTest {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class))
		.withPropertyValues("aiguard.policies.chat.default-priority=P0");

	@Test
	void aMisspelledDeadlineStopsTheStartNamingTheKeyAndTheNearestOne() {
		runner.withPropertyValues("aiguard.policies.chat.stall.idle-timout=400ms").run(context -> {
			assertThat(context).hasFailed();
			InvalidGuardPropertyException e = invalid(context.getStartupFailure());
			assertThat(e.isUnknown()).isTrue();
			assertThat(e.property()).isEqualTo("aiguard.policies.chat.stall.idle-timout");
			assertThat(e.nearest()).isEqualTo("aiguard.policies.chat.stall.idle-timeout");
			assertThat(e.value()).as("a value is never shown: the key may hold a secret").isNull();
			FailureAnalysis analysis = new InvalidGuardPropertyFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis.getDescription()).contains("Unknown property 'aiguard.policies.chat.stall.idle-timout'",
					"did you mean 'aiguard.policies.chat.stall.idle-timeout'", "first-token-timeout", "max-duration")
				.doesNotContain("400ms");
			assertThat(analysis.getAction()).contains(
					"Rename 'aiguard.policies.chat.stall.idle-timout' to 'aiguard.policies.chat.stall.idle-timeout'",
					"section \"Properties\" of the reactor-ai-guard Spring Boot guide")
				.as("a user has the jar, not the repository").doesNotContain("docs/", ".md");
		});
	}

	@Test
	void misspelledKeysAtEveryLevelNameTheirNearestKnownKey() {
		expectUnknown("aiguard.polices.chat.breaker=m", "aiguard.polices", "aiguard.policies");
		expectUnknown("aiguard.enabeld=true", "aiguard.enabeld", "aiguard.enabled");
		expectUnknown("aiguard.policies.chat.retyr.max-attempts=2", "aiguard.policies.chat.retyr", "aiguard.policies.chat.retry");
		expectUnknown("aiguard.policies.chat.validate.repetition.ngrams=4",
				"aiguard.policies.chat.validate.repetition.ngrams", "aiguard.policies.chat.validate.repetition.ngram");
		expectUnknown("aiguard.breakers.model.failure-rate-treshold=0.5", "aiguard.breakers.model.failure-rate-treshold",
				"aiguard.breakers.model.failure-rate-threshold");
		expectUnknown("aiguard.lanes.p0.concurency=2", "aiguard.lanes.p0.concurency", "aiguard.lanes.p0.concurrency");
		expectUnknown("aiguard.lanes.p3.concurrency=2", "aiguard.lanes.p3", "aiguard.lanes.p0");
		expectUnknown("aiguard.load.rules.degraded.p1.acton=shed", "aiguard.load.rules.degraded.p1.acton",
				"aiguard.load.rules.degraded.p1.action");
		expectUnknown("aiguard.budgets.tenants.acme.request-per-minute=6",
				"aiguard.budgets.tenants.acme.request-per-minute", "aiguard.budgets.tenants.acme.requests-per-minute");
		expectUnknown("aiguard.budgets.redis.urll=redis://x", "aiguard.budgets.redis.urll", "aiguard.budgets.redis.url");
		expectUnknown("aiguard.breaker-tree.provider.openai=a", "aiguard.breaker-tree.provider",
				"aiguard.breaker-tree.providers");
		expectUnknown("aiguard.health.open-stauts=DOWN", "aiguard.health.open-stauts", "aiguard.health.open-status");
		// a value has no keys below it
		expectUnknown("aiguard.reports.recent.size=5", "aiguard.reports.recent.size", null);
	}

	@Test
	void everyRelaxedSpellingThatBindsIsAcceptedAndBinds() {
		for (String spelling : List.of("idle-timeout", "idleTimeout", "idle_timeout", "IDLE_TIMEOUT")) {
			runner.withPropertyValues("aiguard.policies.chat.stall." + spelling + "=400ms").run(context -> {
				assertThat(context).as(spelling).hasNotFailed();
				assertThat(idleTimeout(context.getBean(AiGuardRegistry.class))).as(spelling).isEqualTo(Duration.ofMillis(400));
			});
		}
		for (String variable : List.of("AIGUARD_POLICIES_CHAT_STALL_IDLETIMEOUT", "AIGUARD_POLICIES_CHAT_STALL_IDLE_TIMEOUT")) {
			withEnvironment(Map.of(variable, "400ms")).run(context -> {
				assertThat(context).as(variable).hasNotFailed();
				assertThat(idleTimeout(context.getBean(AiGuardRegistry.class))).as(variable).isEqualTo(Duration.ofMillis(400));
			});
		}
	}

	@Test
	void aMisspelledEnvironmentVariableStopsTheStartButAnotherProgramsVariableDoesNot() {
		withEnvironment(Map.of("AIGUARD_POLICIES_CHAT_STALL_IDLETIMOUT", "400ms")).run(context -> {
			InvalidGuardPropertyException e = invalid(context.getStartupFailure());
			assertThat(e.nearest()).isEqualTo("aiguard.policies.chat.stall.idle-timeout");
			assertThat(e.reason()).contains("systemEnvironment");
		});
		// the demo reads AIGUARD_BASE_URL itself; an unknown first level in the environment is not ours to refuse
		withEnvironment(Map.of("AIGUARD_BASE_URL", "http://localhost", "AIGUARD_HOME", "/opt/x"))
			.run(context -> assertThat(context).hasNotFailed());
	}

	@Test
	void mapKeysAndListIndexesAreFreeButWhatIsBelowAKeyIsChecked() {
		runner.withPropertyValues("aiguard.policies[has.dot].default-priority=P1", "aiguard.breakers.any-name.minimum-calls=3",
				"aiguard.breakers.any-name.trip-policy[0]=failure-rate", "aiguard.load.signals.my.own.signal=0.1",
				"aiguard.budgets.encodings.gpt-4o=o200k_base", "aiguard.budgets.prices[gpt-4.1].input=2",
				"aiguard.budgets.prices[gpt-4.1].output=8", "aiguard.breaker-tree.providers.openai[0]=gpt-4o",
				"aiguard.policies.chat.validate.finish-reasons[0]=content_filter")
			.run(context -> assertThat(context).hasNotFailed());
		expectUnknown("aiguard.budgets.prices[gpt-4.1].inptu=2", "aiguard.budgets.prices[gpt-4.1].inptu",
				"aiguard.budgets.prices[gpt-4.1].input");
	}

	@Test
	void anApplicationsOwnPropertiesUnderAiguardAreKnownToo() {
		runner.withUserConfiguration(OwnSettings.class)
			.withPropertyValues("aiguard.base-url=http://localhost", "aiguard.mock.port=0")
			.run(context -> assertThat(context).hasNotFailed());
		runner.withUserConfiguration(OwnSettings.class)
			.withPropertyValues("aiguard.mock.prot=0")
			.run(context -> assertThat(invalid(context.getStartupFailure()).nearest()).isEqualTo("aiguard.mock.port"));
	}

	@Test
	void propertiesBoundByABeanMethodAreKnownToo() {
		runner.withUserConfiguration(OwnBeanSettings.class)
			.withPropertyValues("aiguard.extra.greeting=hi")
			.run(context -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(Extra.class).getGreeting()).isEqualTo("hi");
			});
		runner.withUserConfiguration(OwnBeanSettings.class)
			.withPropertyValues("aiguard.extra.greting=hi")
			.run(context -> assertThat(invalid(context.getStartupFailure()).nearest()).isEqualTo("aiguard.extra.greeting"));
	}

	@Test
	void everyMistakeIsListedWhenThereAreSeveral() {
		runner.withPropertyValues("aiguard.policies.chat.stall.idle-timout=1s", "aiguard.lanes.p0.concurency=2")
			.run(context -> {
				InvalidGuardPropertyException e = invalid(context.getStartupFailure());
				assertThat(e.property()).isEqualTo("aiguard.lanes.p0.concurency");
				assertThat(e.reason()).contains("also unknown: aiguard.policies.chat.stall.idle-timout");
			});
	}

	@Test
	void levenshteinDistance() {
		assertThat(KnownProperties.distance("idletimout", "idletimeout")).isEqualTo(1);
		assertThat(KnownProperties.distance("", "abc")).isEqualTo(3);
		assertThat(KnownProperties.distance("kitten", "sitting")).isEqualTo(3);
	}

	/** Settings an application keeps under {@code aiguard} (as the demo does). */
	@ConfigurationProperties("aiguard")
	record OwnProperties(@Nullable String baseUrl, @Nullable Mock mock) {

		record Mock(int port) {
		}
	}

	@Configuration(proxyBeanMethods = false)
	@EnableConfigurationProperties(OwnProperties.class)
	static class OwnSettings {
	}

	/** A JavaBean an application binds through a bean method. */
	static class Extra {

		private String greeting = "";

		public String getGreeting() {
			return greeting;
		}

		public void setGreeting(String greeting) {
			this.greeting = greeting;
		}
	}

	@Configuration(proxyBeanMethods = false)
	@EnableConfigurationProperties
	static class OwnBeanSettings {

		@Bean
		@ConfigurationProperties("aiguard.extra")
		Extra extra() {
			return new Extra();
		}
	}

	private ApplicationContextRunner withEnvironment(Map<String, Object> variables) {
		// the real environment is replaced, so a variable of the machine running the test cannot interfere
		return runner.withInitializer(context -> context.getEnvironment().getPropertySources().replace(
				StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, new SystemEnvironmentPropertySource(
						StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, variables)));
	}

	private static Duration idleTimeout(AiGuardRegistry registry) {
		return registry.guard("chat").policy().stall().idleTimeout();
	}

	private void expectUnknown(String setting, String property, @Nullable String nearest) {
		runner.withPropertyValues(setting).run(context -> {
			assertThat(context).as(setting).hasFailed();
			InvalidGuardPropertyException e = invalid(context.getStartupFailure());
			assertThat(e.isUnknown()).as(setting).isTrue();
			assertThat(e.property()).as(setting).isEqualTo(property);
			assertThat(e.nearest()).as(setting).isEqualTo(nearest);
			assertThat(e.getMessage()).as(setting).contains(property);
		});
	}

	static InvalidGuardPropertyException invalid(Throwable failure) {
		for (Throwable t = failure; t != null; t = t.getCause()) {
			if (t instanceof InvalidGuardPropertyException e) {
				return e;
			}
		}
		throw new AssertionError("no InvalidGuardPropertyException in the failure", failure);
	}
}
