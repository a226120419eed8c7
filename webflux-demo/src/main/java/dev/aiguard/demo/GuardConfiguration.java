package dev.aiguard.demo;

import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.core.Priority;
import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.fallback.ResponseCacheSpec;
import dev.aiguard.metrics.GuardMetrics;
import dev.aiguard.metrics.MicrometerGuardMetrics;
import dev.aiguard.retry.MidStreamPolicy;
import dev.aiguard.retry.RetryBudget;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.springai.AiGuardAdvisor;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.truncation.TruncationSpec;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import tools.jackson.databind.json.JsonMapper;

/**
 * Wires the demo: the upstream (embedded mock or a real server), the guard and its parts, the
 * handlers and their routes. Every part of the guard is built once here and shared by all
 * requests.
 */
@Configuration(proxyBeanMethods = false)
class GuardConfiguration {

	@Bean(destroyMethod = "stop")
	@Conditional(UsesMock.class)
	MockModelServer mockModelServer(DemoProperties properties) {
		DemoProperties.Mock m = properties.mock();
		MockModelServer server;
		try {
			server = MockModelServer.builder()
				.port(m.port())
				.faults(FaultProfile.defaults(m.firstTokenDelay(), m.tokenInterval()))
				.random(() -> ThreadLocalRandom.current().nextDouble())
				.start();
		}
		catch (RuntimeException e) {
			throw new IllegalStateException("the embedded mock model cannot listen on 127.0.0.1:" + m.port()
					+ " (aiguard.mock.port): " + e.getMessage() + "; choose another port, or 0 for a free one", e);
		}
		MockServerLifecycle.logAddress(server);
		return server;
	}

	@Bean
	@Conditional(UsesMock.class)
	MockServerLifecycle mockServerLifecycle(MockModelServer mock) {
		return new MockServerLifecycle(mock);
	}

	@Bean
	ModelUpstream modelUpstream(DemoProperties properties, ObjectProvider<MockModelServer> mock) {
		return new ModelUpstream(properties, mock.getIfAvailable());
	}

	@Bean
	GuardMetrics guardMetrics(MeterRegistry registry) {
		return new MicrometerGuardMetrics(registry);
	}

	@Bean
	CircuitBreaker modelBreaker(DemoProperties properties, GuardMetrics metrics) {
		return CircuitBreaker.builder("model")
			.config(breakerConfig(properties.breaker()))
			.metrics(metrics)
			.build();
	}

	/**
	 * The breaker's settings. Each consecutive re-open doubles the open wait, up to 8 times the
	 * first, and jitter adds up to 10 % of it (the library's default: replicas of the demo do not
	 * probe in step). The breaker says the wait it drew, so the page still shows exactly when the
	 * next probe goes through.
	 */
	static BreakerConfig breakerConfig(DemoProperties.Breaker b) {
		return BreakerConfig.custom()
			.failureRateThreshold(b.failureRateThreshold())
			.minimumCalls(b.minimumCalls())
			.timeWindow(b.windowSeconds(), Duration.ofSeconds(1))
			.openWait(b.openWait())
			.openWaitMultiplier(2)
			.maxOpenWait(b.openWait().multipliedBy(8))
			.openWaitJitter(0.1)
			.halfOpenProbes(b.halfOpenProbes())
			.successesToClose(b.successesToClose())
			.minimumDwell(b.minimumDwell())
			.slowTimeToFirstToken(b.slowTimeToFirstToken())
			.build();
	}

	@Bean(destroyMethod = "dispose")
	PriorityLanes priorityLanes(DemoProperties properties, GuardMetrics metrics) {
		DemoProperties.Lanes l = properties.lanes();
		return PriorityLanes.builder()
			.name("chat")
			.lane(Priority.P0, lane(l.p0(), l))
			.lane(Priority.P1, lane(l.p1(), l))
			.lane(Priority.P2, lane(l.p2(), l))
			.metrics(metrics)
			.build();
	}

	private static LaneSpec lane(int concurrency, DemoProperties.Lanes l) {
		return LaneSpec.of(concurrency).maxQueueSize(l.maxQueueSize()).maxQueueWait(l.maxQueueWait());
	}

	@Bean
	GuardStats guardStats() {
		return new GuardStats();
	}

	@Bean
	ResponseCache<ChatChunk> responseCache(DemoProperties properties) {
		DemoProperties.Fallback f = properties.fallback();
		return ResponseCache.caffeine(ResponseCacheSpec.defaults()
			.maximumEntries(f.cacheEntries())
			.timeToLive(f.cacheTtl()));
	}

	@Bean
	FallbackChain<ChatChunk> fallbackChain(DemoProperties properties, ResponseCache<ChatChunk> cache) {
		DemoProperties.Fallback f = properties.fallback();
		return FallbackChain.<ChatChunk>builder()
			.step(Fallback.cache(cache))
			.step(new DemoFaq().step())
			.step(Fallback.staticText(f.staticText()))
			.timeout(f.timeout())
			.build();
	}

	/**
	 * The guard policy both clients use: one breaker, one set of lanes, one retry budget, the same
	 * deadlines and fallback ladder. Each client's guard adds where it stores complete answers (one
	 * cache in the end) and whose reports it files.
	 */
	@Bean
	GuardPolicy guardPolicy(DemoProperties properties, GuardMetrics metrics, CircuitBreaker breaker,
			PriorityLanes lanes, FallbackChain<ChatChunk> fallback) {
		DemoProperties.Stall s = properties.stall();
		DemoProperties.Retry r = properties.retry();
		DemoProperties.Truncation t = properties.truncation();
		return GuardPolicy.builder("chat")
			.defaultPriority(Priority.P1)
			.stall(StallSpec.defaults()
				.firstTokenTimeout(s.firstTokenTimeout())
				.idleTimeout(s.idleTimeout())
				.maxDuration(s.maxDuration()))
			.lanes(lanes)
			.breaker(breaker)
			.retry(RetryRules.backoff(r.maxAttempts(), r.minBackoff())
				.maxBackoff(r.maxBackoff())
				.maxRetryAfter(r.maxRetryAfter()))
			.retryBudget(RetryBudget.of(r.budgetRatio(), r.budgetMinPerSecond(), Duration.ofSeconds(10)))
			.midStream(MidStreamPolicy.fail())
			.truncation(TruncationSpec.defaults()
				.maxTruncations(t.maxTruncations())
				.reservedOutputTokens(t.reservedOutputTokens()))
			.fallback(fallback)
			.metrics(metrics)
			.build();
	}

	/** The library client's guard: the shared policy, storing its answers in the response cache. */
	@Bean
	AiGuard<ChatChunk> chatGuard(GuardPolicy policy, ResponseCache<ChatChunk> cache, GuardStats stats) {
		return AiGuard.of(policy.toBuilder()
			.responseCache(cache)
			.onReport(stats.listener(AnswerClient.LIBRARY))
			.build());
	}

	/**
	 * The Spring AI client's guard: the same policy in an advisor, storing its answers in the same
	 * cache (as the library's chunks, see {@link SpringAiAnswerCache}). Its upstream, the rest of the
	 * advisor chain down to the OpenAI SDK, blocks the thread that subscribes it: the SDK prepares
	 * each request there, with Kotlin reflection that reads class files from the jars. The advisor
	 * subscribes each attempt on boundedElastic by itself; the demo puts them on the request's own
	 * lane threads instead, so batch questions cannot take the threads interactive ones need.
	 */
	@Bean
	AiGuardAdvisor springAiAdvisor(GuardPolicy policy, ResponseCache<ChatChunk> cache, GuardStats stats) {
		return AiGuardAdvisor.of(policy.toBuilder()
			.blockingUpstream(true)
			.responseCache(new SpringAiAnswerCache(cache))
			.onReport(stats.listener(AnswerClient.SPRING_AI))
			.build());
	}

	@Bean
	SpringAiClient springAiClient(ModelUpstream upstream, AiGuardAdvisor advisor, DemoProperties properties) {
		return new SpringAiClient(upstream, advisor, properties.springAi().timeout());
	}

	@Bean
	BreakerHealthIndicator breakerHealthIndicator(CircuitBreaker breaker) {
		return new BreakerHealthIndicator(breaker);
	}

	@Bean
	RouterFunction<ServerResponse> demoRoutes(DemoProperties properties, AiGuard<ChatChunk> guard,
			ModelUpstream upstream, SpringAiClient springAi, JsonMapper json, CircuitBreaker breaker,
			PriorityLanes lanes, GuardStats stats) {
		// Jackson builds and caches its tree (de)serializers under a lock on first use: requests racing
		// to be first would park an event loop on it, so the handlers' one JSON type is made here
		json.writeValueAsString(json.readTree("{\"warm\":[1,0.5,true,null,\"x\"]}"));
		AnswerClient defaultClient = properties.chat().client();
		ChatHandler chat = new ChatHandler(guard, upstream, springAi, defaultClient, json,
				(int) properties.chat().maxBodySize().toBytes());
		FaultHandler faults = new FaultHandler(upstream.mock(), json);
		GuardStatusHandler status = new GuardStatusHandler(breaker, Clock.systemUTC(), lanes, stats, upstream,
				defaultClient);
		return RouterFunctions.route()
			.POST("/api/chat", chat::chat)
			.GET("/api/faults", faults::get)
			.PUT("/api/faults", faults::put)
			.PATCH("/api/faults", faults::patch)
			.DELETE("/api/faults", faults::reset)
			.GET("/api/guard", status::status)
			.build();
	}

	/** The mock runs unless {@code aiguard.base-url} ({@code AIGUARD_BASE_URL}) names a real server. */
	static final class UsesMock implements Condition {

		@Override
		public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
			String url = context.getEnvironment().getProperty("aiguard.base-url");
			return url == null || url.isBlank();
		}
	}
}
