package dev.aiguard.boot.autoconfigure;

import java.time.Duration;

import dev.aiguard.AiGuard;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.chat.ChatChunk;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The starter brings the guard and its auto-configuration and nothing else: every library below is
 * one an application adds for a feature. With all of them hidden the context still starts and the
 * guards from properties run; each one present switches on only its own piece.
 */
class OptionalLibrariesTest {

	/**
	 * Every optional library's packages: Bucket4j, jtokkit, Reactor Netty, both Jackson lines, Caffeine,
	 * the schema validator, Lettuce, Micrometer, the Redis module and the Actuator.
	 */
	private static final FilteredClassLoader NONE_OF_THEM = new FilteredClassLoader("io.github.bucket4j.",
			"com.knuddels.jtokkit.", "reactor.netty.", "com.fasterxml.jackson.", "tools.jackson.",
			"com.github.benmanes.caffeine.", "com.networknt.", "io.lettuce.", "io.micrometer.", "dev.aiguard.redis.",
			"org.springframework.boot.actuate.", "org.springframework.boot.health.");

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class, AiGuardRedisAutoConfiguration.class,
				AiGuardEndpointAutoConfiguration.class, AiGuardHealthAutoConfiguration.class))
		.withPropertyValues("aiguard.breakers.openai.minimum-calls=4", "aiguard.lanes.p0.concurrency=2",
				"aiguard.lanes.p1.concurrency=1", "aiguard.lanes.p2.concurrency=1",
				"aiguard.policies.chat.breaker=openai", "aiguard.policies.chat.lanes=true",
				"aiguard.policies.chat.stall.first-token-timeout=2s", "aiguard.policies.chat.retry.max-attempts=2",
				"aiguard.policies.chat.truncation.enabled=true",
				"aiguard.policies.chat.fallback.static-text=Busy, try again.");

	@Test
	void withoutAnyOptionalLibraryTheGuardsFromPropertiesRun() {
		runner.withClassLoader(NONE_OF_THEM).run(context -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean(BucketStore.class);
			assertThat(context).doesNotHaveBean(AiGuardEndpoint.class);
			AiGuard<ChatChunk> chat = context.getBean(AiGuardRegistry.class).guard("chat");
			StepVerifier.create(Flux.just(ChatChunk.token("Hel"), ChatChunk.token("lo"), ChatChunk.finish("stop"))
				.transform(chat))
				.expectNext(ChatChunk.token("Hel"), ChatChunk.token("lo"), ChatChunk.finish("stop"))
				.expectComplete()
				.verify(Duration.ofSeconds(5));
		});
	}

	@Test
	void withoutBucket4jNoInProcessStoreIsConfigured() {
		runner.withClassLoader(new FilteredClassLoader("io.github.bucket4j."))
			.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(BucketStore.class));
	}

	@Test
	void withBucket4jTheBudgetsShareAnInProcessStore() {
		runner.run(context -> assertThat(context.getBean(BucketStore.class)).isInstanceOf(LocalBucketStore.class));
	}
}
