package dev.aiguard.boot.autoconfigure;

import java.util.Locale;
import java.util.function.Function;

import io.micrometer.core.instrument.MeterRegistry;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.core.type.AnnotatedTypeMetadata;

import dev.aiguard.budget.BucketStore;
import dev.aiguard.redis.MicrometerRedisMetrics;
import dev.aiguard.redis.RedisBucketStore;
import dev.aiguard.redis.RedisEndpoint;
import dev.aiguard.redis.RedisMetrics;
import dev.aiguard.redis.RedisSettings;

/**
 * The budgets' {@link BucketStore} in Redis ({@code reactor-ai-guard-redis}) when
 * {@code aiguard.budgets.redis.url} is set to a non-blank value (so {@code url=${REDIS_URL:}} leaves
 * the budgets in process when the variable is unset) and the module and Lettuce are on the class path. Runs
 * before {@link AiGuardAutoConfiguration}, whose in-process store then steps aside; an application's
 * own {@code BucketStore} bean wins over both. A wrong value fails startup naming its property.
 */
@AutoConfiguration(before = AiGuardAutoConfiguration.class)
@ConditionalOnClass(name = { "dev.aiguard.redis.RedisBucketStore", "io.lettuce.core.RedisClient",
		"io.github.bucket4j.redis.lettuce.Bucket4jLettuce" })
@Conditional(AiGuardRedisAutoConfiguration.UrlSet.class)
@EnableConfigurationProperties(AiGuardRedisProperties.class)
public class AiGuardRedisAutoConfiguration {

	private static final String AT = AiGuardRedisProperties.PREFIX;

	/** @return the Lettuce client the store talks through; closed with the context */
	@Bean(destroyMethod = "close")
	@ConditionalOnMissingBean
	RedisEndpoint aiGuardRedisEndpoint(AiGuardRedisProperties p) {
		RedisSettings.Builder b = make(AT + ".url", p.getUrl(), RedisSettings::builder);
		with(AT + ".command-timeout", p.getCommandTimeout(), b::commandTimeout);
		with(AT + ".connect-timeout", p.getConnectTimeout(), b::connectTimeout);
		with(AT + ".reconnect-delay", p.getReconnectDelay(), b::reconnectDelay);
		with(AT + ".probe-interval", p.getProbeInterval(), b::probeInterval);
		with(AT + ".key-prefix", p.getKeyPrefix(), b::keyPrefix);
		return RedisEndpoint.create(b.build());
	}

	/** @return the budgets' store in Redis, connecting in the background; closed with the context */
	@Bean(destroyMethod = "close")
	@ConditionalOnMissingBean(BucketStore.class)
	RedisBucketStore aiGuardBucketStore(RedisEndpoint endpoint, AiGuardRedisProperties p,
			ObjectProvider<MeterRegistry> registry) {
		RedisBucketStore.Builder b = RedisBucketStore.builder(endpoint);
		with(AT + ".instances", p.getInstances(), b::instances);
		with(AT + ".name", p.getName(), b::name);
		if (p.getFallback() != null) {
			RedisBucketStore.Fallback fallback = make(AT + ".fallback", p.getFallback(),
					v -> RedisBucketStore.Fallback.valueOf(v.trim().toUpperCase(Locale.ROOT)));
			b.fallback(fallback);
		}
		MeterRegistry meters = registry.getIfAvailable();
		RedisMetrics metrics = meters == null ? RedisMetrics.NOOP : new MicrometerRedisMetrics(meters);
		return b.metrics(metrics).build();
	}

	private static <T> void with(String property, @Nullable T value, Function<T, ?> setter) {
		if (value != null) {
			make(property, value, setter);
		}
	}

	private static <T, R> R make(String property, @Nullable T value, Function<T, R> factory) {
		try {
			if (value == null) {
				throw new IllegalArgumentException("must be set");
			}
			return factory.apply(value);
		}
		catch (RuntimeException e) {
			throw new InvalidGuardPropertyException(property, value, e.getMessage(), e);
		}
	}

	/** Matches when {@code aiguard.budgets.redis.url} has text: an empty value means "not shared". */
	static final class UrlSet extends SpringBootCondition {

		@Override
		public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
			String url = context.getEnvironment().getProperty(AT + ".url");
			return url != null && !url.isBlank() ? ConditionOutcome.match(AT + ".url is set")
					: ConditionOutcome.noMatch(AT + ".url is not set or blank");
		}
	}
}
