package dev.aiguard.boot.autoconfigure;

import java.util.ArrayList;
import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.load.HealthSignal;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.load.MicrometerHealthSignals;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.GuardObserver;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import dev.aiguard.metrics.ObservationGuardObserver;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * Builds the guards, breakers, lanes and load governor described under {@code aiguard.*}: an
 * {@link AiGuardRegistry} holding them, a {@link LoadGovernor} bean when {@code aiguard.load.enabled},
 * and one {@code AiGuard<ChatChunk>} bean per policy,
 * qualified by the policy's name ({@code @Qualifier("chat") AiGuard<ChatChunk> guard}). Meters go to
 * the context's {@link MeterRegistry} when there is one, and each request is an {@code Observation}
 * of the context's {@link ObservationRegistry} when there is one. Every bean backs off when the application
 * defines its own; {@code aiguard.enabled=false} turns the whole configuration off.
 */
@AutoConfiguration(afterName = {
		"org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
		"org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration",
		"org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration" })
@ConditionalOnClass(AiGuard.class)
@ConditionalOnBooleanProperty(name = AiGuardProperties.PREFIX + ".enabled", matchIfMissing = true)
@EnableConfigurationProperties(AiGuardProperties.class)
public class AiGuardAutoConfiguration {

	/** The bean name prefix of the per-policy guards: {@code aiguard.chat} for the policy {@code chat}. */
	public static final String GUARD_BEAN_PREFIX = "aiguard.";

	@Bean
	@ConditionalOnMissingBean
	RecentReports aiGuardRecentReports(AiGuardProperties properties) {
		int recent = properties.getReports().getRecent();
		if (recent < 1 || recent > 10_000) {
			throw new InvalidGuardPropertyException(AiGuardProperties.PREFIX + ".reports.recent", recent,
					"must be between 1 and 10000", null);
		}
		return new RecentReports(recent);
	}

	@Bean
	@ConditionalOnMissingBean
	AiGuardRegistry aiGuardRegistry(AiGuardProperties properties, ObjectProvider<GuardMetrics> metrics,
			ObjectProvider<AiGuardPolicyCustomizer> customizers, RecentReports recent, SharedLanes lanes,
			ObjectProvider<LoadGovernor> governor, ObjectProvider<BucketStore> bucketStore) {
		List<AiGuardPolicyCustomizer> all = new ArrayList<>();
		all.add((name, builder) -> builder.onReport(recent));
		customizers.orderedStream().forEach(all::add);
		return new GuardFactory(properties, metrics.getIfAvailable(GuardMetrics::noop), all)
			.bucketStore(bucketStore.getIfAvailable())
			.build(lanes.lanes(), governor.getIfAvailable());
	}

	@Bean
	SharedLanes aiGuardSharedLanes(AiGuardProperties properties, ObjectProvider<GuardMetrics> metrics) {
		return new SharedLanes(new GuardFactory(properties, metrics.getIfAvailable(GuardMetrics::noop), List.of())
			.lanes(properties.getLanes()));
	}

	/**
	 * The load governor of {@code aiguard.load}, started now and disposed with the context, with
	 * the context's metrics and every {@link HealthSignal} bean.
	 */
	@Bean(destroyMethod = "dispose")
	@ConditionalOnMissingBean
	@ConditionalOnBooleanProperty(name = AiGuardProperties.PREFIX + ".load.enabled")
	LoadGovernor aiGuardLoadGovernor(AiGuardProperties properties, ObjectProvider<GuardMetrics> metrics,
			ObjectProvider<HealthSignal> signals, SharedLanes lanes) {
		return new GuardFactory(properties, metrics.getIfAvailable(GuardMetrics::noop), List.of())
			.governor(signals.orderedStream().toList(), lanes.lanes())
			.start();
	}

	@Bean
	static PolicyBeanRegistrar aiGuardPolicyBeans(Environment environment) {
		return new PolicyBeanRegistrar(environment);
	}

	/** Fails startup on a misspelled or unknown key under {@code aiguard.*}, naming the nearest known one. */
	@Bean
	static UnknownPropertyCheck aiGuardUnknownPropertyCheck(Environment environment) {
		return new UnknownPropertyCheck(environment);
	}

	/**
	 * The in-process bucket store the budgets of every policy share, when Bucket4j is on the class
	 * path and the application (or a shared-store module) defines no {@code BucketStore} of its own.
	 */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(name = "io.github.bucket4j.Bucket")
	static class LocalBucketStoreConfiguration {

		@Bean
		@ConditionalOnMissingBean(BucketStore.class)
		BucketStore aiGuardBucketStore() {
			return LocalBucketStore.create();
		}
	}

	/** One Observation per guarded request (a span, with tracing on), when the application has a registry. */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(ObservationRegistry.class)
	@ConditionalOnBean(ObservationRegistry.class)
	static class ObservationConfiguration {

		@Bean
		@ConditionalOnMissingBean(name = "aiGuardObservation")
		AiGuardPolicyCustomizer aiGuardObservation(ObservationRegistry registry) {
			GuardObserver observer = new ObservationGuardObserver(registry);
			return (name, builder) -> builder.observer(observer);
		}
	}

	/** Micrometer, when the application has a registry. */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(MeterRegistry.class)
	@ConditionalOnBean(MeterRegistry.class)
	static class MicrometerConfiguration {

		@Bean
		@ConditionalOnMissingBean
		GuardMetrics aiGuardMetrics(MeterRegistry registry, AiGuardProperties properties) {
			int series = properties.getBudgets().getTenantSeries();
			if (series < 0) {
				throw new InvalidGuardPropertyException(AiGuardProperties.PREFIX + ".budgets.tenant-series", series,
						"must be >= 0", null);
			}
			return new MicrometerGuardMetrics(registry, series);
		}

		/** The load governor's cpu signal from Micrometer's CPU gauges, when the governor is on. */
		@Bean
		@ConditionalOnBooleanProperty(name = AiGuardProperties.PREFIX + ".load.enabled")
		@ConditionalOnMissingBean(name = "aiGuardCpuSignal")
		HealthSignal aiGuardCpuSignal(MeterRegistry registry) {
			return MicrometerHealthSignals.cpu(registry);
		}
	}
}
