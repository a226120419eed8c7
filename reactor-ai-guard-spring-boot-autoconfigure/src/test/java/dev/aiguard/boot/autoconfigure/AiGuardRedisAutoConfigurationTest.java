package dev.aiguard.boot.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.redis.RedisBucketStore;
import dev.aiguard.redis.RedisEndpoint;

/**
 * {@code aiguard.budgets.redis.*}: the budgets' store moves to Redis when a URL is set, the in-process
 * store stays otherwise, and a wrong value fails startup naming its property. (The store's behaviour
 * against a real Redis is tested in {@code reactor-ai-guard-redis}; here nothing listens on the URL,
 * so the store starts on its fallback.)
 */
class AiGuardRedisAutoConfigurationTest {

	private static final String AT = "aiguard.budgets.redis";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardRedisAutoConfiguration.class, AiGuardAutoConfiguration.class));

	/** A loopback port nothing listens on. */
	private static String nowhere() throws IOException {
		try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			return "redis://127.0.0.1:" + socket.getLocalPort();
		}
	}

	@Test
	void withoutAUrlTheBucketsStayInProcess() {
		runner.withPropertyValues("aiguard.policies.chat.budget=true", "aiguard.budgets.tenant.requests-per-minute=5")
			.run(context -> {
				assertThat(context).doesNotHaveBean(RedisEndpoint.class);
				assertThat(context.getBean(BucketStore.class)).isInstanceOf(LocalBucketStore.class);
			});
	}

	@Test
	void aBlankUrlLeavesTheBucketsInProcess() {
		runner.withPropertyValues("aiguard.policies.chat.budget=true", "aiguard.budgets.tenant.requests-per-minute=5",
				AT + ".url=", AT + ".instances=3")
			.run(context -> {
				assertThat(context).hasNotFailed().doesNotHaveBean(RedisEndpoint.class);
				assertThat(context.getBean(BucketStore.class)).isInstanceOf(LocalBucketStore.class);
			});
		runner.withPropertyValues(AT + ".url=   ")
			.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(RedisBucketStore.class));
	}

	@Test
	void aUrlPutsEveryPolicysBucketsInRedis() throws IOException {
		runner.withPropertyValues("aiguard.policies.chat.budget=true", "aiguard.budgets.tenant.requests-per-minute=5",
				AT + ".url=" + nowhere(), AT + ".instances=3", AT + ".fallback=closed", AT + ".name=shared-budgets",
				AT + ".command-timeout=150ms", AT + ".probe-interval=1s", AT + ".key-prefix=app1:")
			.run(context -> {
				RedisBucketStore store = context.getBean(RedisBucketStore.class);
				assertThat(context.getBean(BucketStore.class)).isSameAs(store);
				assertThat(store.instances()).isEqualTo(3);
				assertThat(store.name()).isEqualTo("shared-budgets");
				assertThat(store.fallbackMode()).isEqualTo(BucketStore.Mode.FALLBACK_CLOSED);
				assertThat(store.mode()).as("nothing listens there").isEqualTo(BucketStore.Mode.FALLBACK_CLOSED);
				RedisEndpoint endpoint = context.getBean(RedisEndpoint.class);
				assertThat(endpoint.settings().commandTimeout()).isEqualTo(Duration.ofMillis(150));
				assertThat(endpoint.settings().probeInterval()).isEqualTo(Duration.ofSeconds(1));
				assertThat(endpoint.settings().keyPrefix()).isEqualTo("app1:");
				assertThat(context.getBean(AiGuardRegistry.class).guard("chat").policy().bucketStore()).isSameAs(store);
			});
	}

	@Test
	void wrongValuesFailStartupNamingTheirProperty() throws IOException {
		String url = nowhere();
		runner.withPropertyValues(AT + ".url=" + url, AT + ".instances=0")
			.run(context -> assertThat(context).getFailure().rootCause()
				.hasMessageContaining("instances must be >= 1, was 0"));
		runner.withPropertyValues(AT + ".url=" + url, AT + ".instances=0")
			.run(context -> assertThat(context).getFailure().hasStackTraceContaining(AT + ".instances"));
		runner.withPropertyValues(AT + ".url=" + url, AT + ".fallback=sometimes")
			.run(context -> assertThat(context).getFailure().hasStackTraceContaining(AT + ".fallback"));
		runner.withPropertyValues(AT + ".url=" + url, AT + ".command-timeout=0s")
			.run(context -> assertThat(context).getFailure().hasStackTraceContaining(AT + ".command-timeout")
				.hasStackTraceContaining("commandTimeout must be > 0"));
		runner.withPropertyValues(AT + ".url=http://[broken")
			.run(context -> assertThat(context).getFailure().hasStackTraceContaining(AT + ".url"));
	}
}
