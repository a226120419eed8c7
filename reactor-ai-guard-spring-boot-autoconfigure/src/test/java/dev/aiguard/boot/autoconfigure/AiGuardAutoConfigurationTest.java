package dev.aiguard.boot.autoconfigure;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.TripPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Priority;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.GuardObserver;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import dev.aiguard.metrics.ObservationGuardObserver;
import dev.aiguard.stall.StreamStalledException;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.ResolvableType;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

class AiGuardAutoConfigurationTest {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class));

	private static final String[] FULL = { "aiguard.breakers.openai.failure-rate-threshold=0.5",
			"aiguard.breakers.openai.minimum-calls=4", "aiguard.breakers.openai.window-size=10",
			"aiguard.breakers.openai.open-wait=15s", "aiguard.lanes.p0.concurrency=4",
			"aiguard.lanes.p1.concurrency=2", "aiguard.lanes.p2.concurrency=1", "aiguard.lanes.p2.max-queue-wait=2s",
			"aiguard.policies.chat.breaker=openai", "aiguard.policies.chat.lanes=true",
			"aiguard.policies.chat.default-priority=P0", "aiguard.policies.chat.stall.first-token-timeout=2s",
			"aiguard.policies.chat.stall.idle-timeout=300ms", "aiguard.policies.chat.retry.max-attempts=2",
			"aiguard.policies.chat.retry.budget=true", "aiguard.policies.chat.truncation.enabled=true",
			"aiguard.policies.chat.fallback.static-text=Busy, try again.",
			"aiguard.policies.batch.default-priority=P2" };

	@Test
	void withoutPropertiesThereIsAnEmptyRegistryAndNoGuardBean() {
		runner.run(context -> {
			assertThat(context).hasSingleBean(AiGuardRegistry.class);
			assertThat(context.getBeanNamesForType(AiGuard.class)).isEmpty();
			assertThat(context.getBean(AiGuardRegistry.class).lanes()).isEmpty();
		});
	}

	@Test
	void eachPolicyBecomesAGuardBeanQualifiedByItsName() {
		runner.withPropertyValues(FULL).withUserConfiguration(InjectsChat.class).run(context -> {
			assertThat(context.getBeanNamesForType(ResolvableType.forClassWithGenerics(AiGuard.class, ChatChunk.class)))
				.containsExactly("aiguard.chat", "aiguard.batch");
			AiGuardRegistry registry = context.getBean(AiGuardRegistry.class);
			AiGuard<ChatChunk> chat = context.getBean(InjectsChat.class).guard;
			assertThat(chat).isSameAs(registry.guard("chat"));
			GuardPolicy policy = chat.policy();
			assertThat(policy.name()).isEqualTo("chat");
			assertThat(policy.defaultPriority()).isEqualTo(Priority.P0);
			assertThat(policy.breaker()).isSameAs(registry.breaker("openai").orElseThrow());
			assertThat(policy.lanes()).isSameAs(registry.lanes().orElseThrow());
			assertThat(policy.stall().idleTimeout()).isEqualTo(Duration.ofMillis(300));
			assertThat(policy.retry().maxAttempts()).isEqualTo(2);
			assertThat(policy.truncation()).isNotNull();
			assertThat(registry.breaker("openai").orElseThrow().state()).isEqualTo(BreakerState.CLOSED);
			assertThat(registry.guard("batch").policy().defaultPriority()).isEqualTo(Priority.P2);
			assertThat(registry.guard("batch").policy().breaker()).isNull();
		});
	}

	@Test
	void aGuardFromPropertiesDetectsAStall() {
		runner.withPropertyValues(FULL).run(context -> {
			AiGuard<ChatChunk> batch = context.getBean(AiGuardRegistry.class).guard("chat");
			Flux<ChatChunk> stalls = Flux.concat(Flux.just(ChatChunk.token("Hel")), Flux.never());
			StepVerifier.create(stalls.transform(batch))
				.expectNext(ChatChunk.token("Hel"))
				.expectErrorSatisfies(e -> assertThat(e).hasCauseInstanceOf(StreamStalledException.class))
				.verify(Duration.ofSeconds(5));
		});
	}

	@Test
	void metersGoToTheContextsRegistry() {
		runner.withPropertyValues(FULL).withBean(MeterRegistry.class, SimpleMeterRegistry::new).run(context -> {
			assertThat(context.getBean(GuardMetrics.class)).isInstanceOf(MicrometerGuardMetrics.class);
			AiGuard<ChatChunk> chat = context.getBean(AiGuardRegistry.class).guard("batch");
			StepVerifier.create(Flux.just(ChatChunk.token("hi"), ChatChunk.finish("stop")).transform(chat))
				.expectNextCount(2)
				.verifyComplete();
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			assertThat(registry.getMeters()).anyMatch(m -> m.getId().getName().startsWith("aiguard.")
					&& "batch".equals(m.getId().getTag("policy")));
		});
	}

	@Test
	void eachRequestIsAnObservationOfTheContextsRegistry() {
		runner.withPropertyValues(FULL).withBean(ObservationRegistry.class, TestObservationRegistry::create).run(context -> {
			AiGuard<ChatChunk> batch = context.getBean(AiGuardRegistry.class).guard("batch");
			assertThat(batch.policy().observer()).isInstanceOf(ObservationGuardObserver.class);
			StepVerifier.create(Flux.just(ChatChunk.token("hi"), ChatChunk.finish("stop")).transform(batch))
				.expectNextCount(2)
				.verifyComplete();
			TestObservationRegistryAssert.assertThat((TestObservationRegistry) context.getBean(ObservationRegistry.class))
				.hasObservationWithNameEqualTo(ObservationGuardObserver.NAME)
				.that()
				.hasLowCardinalityKeyValue("policy", "batch")
				.hasLowCardinalityKeyValue("outcome", "SUCCESS")
				.hasBeenStopped();
		});
		runner.withPropertyValues(FULL).run(context -> assertThat(
				context.getBean(AiGuardRegistry.class).guard("batch").policy().observer()).isSameAs(GuardObserver.noop()));
	}

	@Test
	void tripPoliciesComeFromProperties() {
		runner.withPropertyValues("aiguard.breakers.a.trip-policy=adaptive-ttft",
				"aiguard.breakers.b.trip-policy=failure-rate,performance-score", "aiguard.breakers.b.baseline-ttft=800ms",
				"aiguard.breakers.c.trip-policy=decayed-failure-rate", "aiguard.breakers.c.predictive=true",
				"aiguard.breakers.d.failure-rate-threshold=0.3")
			.run(context -> {
				AiGuardRegistry registry = context.getBean(AiGuardRegistry.class);
				assertThat(policyOf(registry, "a")).isEqualTo(TripPolicy.adaptiveTtft());
				assertThat(policyOf(registry, "b"))
					.isEqualTo(TripPolicy.anyOf(TripPolicy.failureRate(), TripPolicy.performanceScore(Duration.ofMillis(800))));
				assertThat(policyOf(registry, "c")).isEqualTo(TripPolicy.predictive(TripPolicy.decayedFailureRate()));
				assertThat(policyOf(registry, "d")).as("the default").isEqualTo(TripPolicy.failureRate());
			});
		expectInvalid("aiguard.breakers.b.baseline-ttft", "aiguard.breakers.b.trip-policy=performance-score");
	}

	@Test
	void theExpectedLossPolicyTakesItsCostsFromProperties() {
		runner.withPropertyValues("aiguard.breakers.e.trip-policy=expected-loss",
				"aiguard.breakers.e.expected-loss.unavailable-cost=0.003",
				"aiguard.breakers.e.expected-loss.prompt-tokens=2000",
				"aiguard.breakers.e.expected-loss.prompt-price-per-million=2.50",
				"aiguard.breakers.e.expected-loss.wait-price-per-second=0.0005",
				"aiguard.breakers.e.expected-loss.failure-wait=8s",
				"aiguard.breakers.e.expected-loss.failed-answer-cost=0.003", "aiguard.breakers.e.predictive=true")
			.run(context -> assertThat(policyOf(context.getBean(AiGuardRegistry.class), "e"))
				.isEqualTo(TripPolicy.predictive(TripPolicy.expectedLoss(0.003).promptTokens(2000)
					.promptPricePerMillion(2.50).waitPricePerSecond(0.0005).failureWait(Duration.ofSeconds(8))
					.failedAnswerCost(0.003))));
		expectInvalid("aiguard.breakers.e.expected-loss.unavailable-cost", "aiguard.breakers.e.trip-policy=expected-loss");
		expectInvalid("aiguard.breakers.e.expected-loss.prompt-tokens", "aiguard.breakers.e.trip-policy=expected-loss",
				"aiguard.breakers.e.expected-loss.unavailable-cost=0.01", "aiguard.breakers.e.expected-loss.prompt-tokens=-5");
	}

	@Test
	void recoverySettingsComeFromProperties() {
		runner.withPropertyValues("aiguard.breakers.m.open-wait=500ms", "aiguard.breakers.m.half-open-probes=3",
				"aiguard.breakers.m.successes-to-close=2", "aiguard.breakers.m.minimum-dwell=300ms",
				"aiguard.breakers.m.hysteresis=0.1", "aiguard.breakers.m.record-client-errors=true",
				"aiguard.breakers.r.half-open-probe-ratio=0.2")
			.run(context -> {
				BreakerConfig config = context.getBean(AiGuardRegistry.class).breaker("m").orElseThrow().config();
				assertThat(config.successesToClose()).isEqualTo(2);
				assertThat(config.minimumDwell()).isEqualTo(Duration.ofMillis(300));
				assertThat(config.hysteresis()).isEqualTo(0.1);
				assertThat(config.recordClientErrors()).isTrue();
				assertThat(context.getBean(AiGuardRegistry.class).breaker("r").orElseThrow().config().halfOpenProbeRatio())
					.isEqualTo(0.2);
			});
		expectInvalid("aiguard.breakers.m.successes-to-close", "aiguard.breakers.m.successes-to-close=0");
		expectInvalid("aiguard.breakers.m.minimum-dwell", "aiguard.breakers.m.minimum-dwell=-1s");
		expectInvalid("aiguard.breakers.m.hysteresis", "aiguard.breakers.m.hysteresis=2");
		expectInvalid("aiguard.breakers.m.half-open-probe-ratio", "aiguard.breakers.m.half-open-probe-ratio=1.5");
	}

	@Test
	void tripRuleSettingsComeFromProperties() {
		runner.withPropertyValues("aiguard.breakers.t.slow-time-to-first-token-per-prompt-token=7ms",
				"aiguard.breakers.t.consecutive-failures-to-trip=5", "aiguard.breakers.t.trip-delay=3s",
				"aiguard.breakers.t.ramp-up=30s", "aiguard.breakers.t.warm-up=2m",
				"aiguard.breakers.t.warm-up-threshold-factor=1.5",
				"aiguard.breakers.t.trip-policy=failure-rate,ttft-percentile,adaptive-ttft",
				"aiguard.breakers.t.ttft-percentile-limit=8s", "aiguard.breakers.t.ttft-percentile=0.99",
				"aiguard.breakers.t.adaptive-ttft-baseline=800ms", "aiguard.breakers.p.trip-policy=ttft-percentile",
				"aiguard.breakers.p.ttft-percentile-limit=5s")
			.run(context -> {
				AiGuardRegistry registry = context.getBean(AiGuardRegistry.class);
				BreakerConfig config = registry.breaker("t").orElseThrow().config();
				assertThat(config.slowTimeToFirstTokenPerPromptToken()).isEqualTo(Duration.ofMillis(7));
				assertThat(config.consecutiveFailuresToTrip()).isEqualTo(5);
				assertThat(config.tripDelay()).isEqualTo(Duration.ofSeconds(3));
				assertThat(config.rampUp()).isEqualTo(Duration.ofSeconds(30));
				assertThat(config.warmUp()).isEqualTo(Duration.ofMinutes(2));
				assertThat(config.warmUpThresholdFactor()).isEqualTo(1.5);
				assertThat(config.tripPolicy()).isEqualTo(TripPolicy.anyOf(TripPolicy.failureRate(),
						TripPolicy.ttftPercentile(Duration.ofSeconds(8)).percentile(0.99),
						TripPolicy.adaptiveTtft().startingBaseline(Duration.ofMillis(800))));
				assertThat(policyOf(registry, "p")).isEqualTo(TripPolicy.ttftPercentile(Duration.ofSeconds(5)));
			});
		expectInvalid("aiguard.breakers.t.ttft-percentile-limit", "aiguard.breakers.t.trip-policy=ttft-percentile");
		expectInvalid("aiguard.breakers.t.ttft-percentile", "aiguard.breakers.t.trip-policy=ttft-percentile",
				"aiguard.breakers.t.ttft-percentile-limit=8s", "aiguard.breakers.t.ttft-percentile=95");
		expectInvalid("aiguard.breakers.t.adaptive-ttft-baseline", "aiguard.breakers.t.trip-policy=adaptive-ttft",
				"aiguard.breakers.t.adaptive-ttft-baseline=2h");
		expectInvalid("aiguard.breakers.t.consecutive-failures-to-trip",
				"aiguard.breakers.t.consecutive-failures-to-trip=-1");
		expectInvalid("aiguard.breakers.t.trip-delay", "aiguard.breakers.t.trip-delay=-1s");
		expectInvalid("aiguard.breakers.t.ramp-up", "aiguard.breakers.t.ramp-up=2h");
		expectInvalid("aiguard.breakers.t.warm-up-threshold-factor", "aiguard.breakers.t.warm-up-threshold-factor=0.5");
		expectInvalid("aiguard.breakers.t.slow-time-to-first-token-per-prompt-token",
				"aiguard.breakers.t.slow-time-to-first-token-per-prompt-token=2s");
	}

	private static TripPolicy policyOf(AiGuardRegistry registry, String breaker) {
		return registry.breaker(breaker).orElseThrow().config().tripPolicy();
	}

	@Test
	void withoutMicrometerOnTheClassPathTheGuardsStillWork() {
		runner.withPropertyValues(FULL).withClassLoader(new FilteredClassLoader(MeterRegistry.class, ObservationRegistry.class)).run(context -> {
			assertThat(context).doesNotHaveBean(GuardMetrics.class);
			assertThat(context.getBean(AiGuardRegistry.class).guards()).containsOnlyKeys("chat", "batch");
		});
	}

	@Test
	void withoutTheLibraryNothingIsConfigured() {
		runner.withPropertyValues(FULL).withClassLoader(new FilteredClassLoader(AiGuard.class))
			.run(context -> assertThat(context).doesNotHaveBean(AiGuardRegistry.class));
	}

	@Test
	void disabledConfiguresNothing() {
		runner.withPropertyValues(FULL).withPropertyValues("aiguard.enabled=false").run(context -> {
			assertThat(context).doesNotHaveBean(AiGuardRegistry.class);
			assertThat(context.getBeanNamesForType(AiGuard.class)).isEmpty();
		});
	}

	@Test
	void theApplicationsOwnBeansWin() {
		GuardMetrics mine = GuardMetrics.noop();
		runner.withPropertyValues(FULL).withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.withBean("myMetrics", GuardMetrics.class, () -> mine)
			.run(context -> {
				assertThat(context.getBean(GuardMetrics.class)).isSameAs(mine);
				assertThat(context.getBean(AiGuardRegistry.class).guard("chat").policy().metrics()).isSameAs(mine);
			});
		runner.withPropertyValues(FULL).withUserConfiguration(OwnChatGuard.class).run(context -> {
			assertThat(context.getBean("aiguard.chat")).isSameAs(OwnChatGuard.GUARD);
		});
	}

	@Test
	void customizersSeeEveryPolicyInOrder() {
		runner.withPropertyValues(FULL).withUserConfiguration(Customizers.class).run(context -> {
			assertThat(context.getBean(Customizers.class).seen).containsExactly("chat", "batch");
			assertThat(context.getBean(AiGuardRegistry.class).guard("chat").policy().defaultPriority())
				.isEqualTo(Priority.P1);
		});
	}

	@Test
	void anInvalidValueFailsStartupNamingTheProperty() {
		runner.withPropertyValues("aiguard.policies.chat.stall.idle-timeout=-1s").run(context -> {
			assertThat(context).hasFailed();
			InvalidGuardPropertyException e = invalid(context.getStartupFailure());
			assertThat(e.property()).isEqualTo("aiguard.policies.chat.stall.idle-timeout");
			assertThat(e.value()).isEqualTo(Duration.ofSeconds(-1));
			FailureAnalysis analysis = new InvalidGuardPropertyFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis.getDescription()).contains("aiguard.policies.chat.stall.idle-timeout", "PT-1S",
					"idleTimeout");
			assertThat(analysis.getAction()).contains("aiguard.policies.chat.stall.idle-timeout");
		});
	}

	@Test
	void eachKindOfMistakeNamesItsProperty() {
		expectInvalid("aiguard.policies.chat.breaker", "aiguard.policies.chat.breaker=missing");
		expectInvalid("aiguard.policies.chat.lanes", "aiguard.policies.chat.lanes=true");
		expectInvalid("aiguard.policies.chat.retry.budget", "aiguard.policies.chat.retry.budget=true");
		expectInvalid("aiguard.policies.chat.retry.max-attempts", "aiguard.policies.chat.retry.max-attempts=0");
		expectInvalid("aiguard.policies.chat.retry.jitter", "aiguard.policies.chat.retry.max-attempts=2",
				"aiguard.policies.chat.retry.jitter=3");
		expectInvalid("aiguard.policies.chat.truncation.shrink-factor", "aiguard.policies.chat.truncation.enabled=true",
				"aiguard.policies.chat.truncation.shrink-factor=1.5");
		expectInvalid("aiguard.policies.chat.mid-stream.notice", "aiguard.policies.chat.mid-stream.mode=notice");
		expectInvalid("aiguard.policies.has space", "aiguard.policies[has space].default-priority=P0");
		expectInvalid("aiguard.breakers.b.failure-rate-threshold", "aiguard.breakers.b.failure-rate-threshold=2");
		expectInvalid("aiguard.breakers.b.window-size", "aiguard.breakers.b.window-size=10",
				"aiguard.breakers.b.window-buckets=5");
		expectInvalid("aiguard.breakers.b.bucket-length", "aiguard.breakers.b.window-buckets=5");
		expectInvalid("aiguard.lanes.p1.concurrency", "aiguard.lanes.p0.concurrency=1", "aiguard.lanes.p1.concurrency=-1",
				"aiguard.lanes.p2.concurrency=1");
		expectInvalid("aiguard.lanes.p2.concurrency", "aiguard.lanes.p0.concurrency=1", "aiguard.lanes.p1.concurrency=1");
		expectInvalid("aiguard.lanes.p1.max-queue-size", "aiguard.lanes.p0.concurrency=1",
				"aiguard.lanes.p1.max-queue-size=-5", "aiguard.lanes.p2.concurrency=1");
		expectInvalid("aiguard.retry-budget", "aiguard.retry-budget.ratio=7");
	}

	private void expectInvalid(String property, String... values) {
		runner.withPropertyValues(values).run(context -> {
			assertThat(context).hasFailed();
			InvalidGuardPropertyException e = invalid(context.getStartupFailure());
			assertThat(e.property()).as("for %s", List.of(values)).isEqualTo(property);
			assertThat(e.getMessage()).contains(property);
		});
	}

	private static InvalidGuardPropertyException invalid(Throwable failure) {
		for (Throwable t = failure; t != null; t = t.getCause()) {
			if (t instanceof InvalidGuardPropertyException e) {
				return e;
			}
		}
		throw new AssertionError("no InvalidGuardPropertyException in the failure", failure);
	}

	@Configuration(proxyBeanMethods = false)
	static class InjectsChat {

		final AiGuard<ChatChunk> guard;

		InjectsChat(@Qualifier("chat") AiGuard<ChatChunk> guard) {
			this.guard = guard;
		}
	}

	@Configuration(proxyBeanMethods = false)
	static class OwnChatGuard {

		static final AiGuard<ChatChunk> GUARD = AiGuard.of(GuardPolicy.builder("mine").build());

		@Bean("aiguard.chat")
		AiGuard<ChatChunk> chat() {
			return GUARD;
		}
	}

	@Configuration(proxyBeanMethods = false)
	static class Customizers {

		final List<String> seen = new ArrayList<>();

		@Bean
		AiGuardPolicyCustomizer recordNames() {
			return (name, builder) -> seen.add(name);
		}

		@Bean
		AiGuardPolicyCustomizer downgradeChat() {
			return (name, builder) -> {
				if (name.equals("chat")) {
					builder.defaultPriority(Priority.P1);
				}
			};
		}
	}
}
