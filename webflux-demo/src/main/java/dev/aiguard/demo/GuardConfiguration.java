package dev.aiguard.demo;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardControl;
import dev.aiguard.GuardPolicy;
import dev.aiguard.boot.autoconfigure.AiGuardPolicyCustomizer;
import dev.aiguard.boot.autoconfigure.AiGuardProperties;
import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Tenant;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackTrigger;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.fallback.ResponseCacheSpec;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.springai.AiGuardAdvisor;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.web.reactive.function.server.RouterFunction;
import org.springframework.web.reactive.function.server.RouterFunctions;
import org.springframework.web.reactive.function.server.ServerResponse;
import tools.jackson.databind.json.JsonMapper;

/**
 * Wires the demo: the upstream (embedded mock or a real server), what the guard needs beyond its
 * properties (the fallback ladder, the response cache, the page's counters), the two clients, the
 * handlers and their routes. The guard's policy, breaker tree and lanes come from the starter
 * ({@code aiguard.policies.chat}, {@code aiguard.breaker-tree}, {@code aiguard.lanes}), built once
 * and shared by all requests of both clients.
 */
@Configuration(proxyBeanMethods = false)
class GuardConfiguration {

	/** The name of the guard policy under {@code aiguard.policies}. */
	static final String POLICY = "chat";

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
	ModelUpstream modelUpstream(DemoProperties properties, ObjectProvider<MockModelServer> mock,
			AiGuardProperties guard) {
		return new ModelUpstream(properties, mock.getIfAvailable(), primaryModel(guard));
	}

	/**
	 * @return the model the chat asks the mock for: the endpoint of {@code aiguard.policies.chat.breaker-path}
	 *         ({@code mock/mock-large}: {@code mock-large}), else the mock's default name
	 */
	static String primaryModel(AiGuardProperties guard) {
		AiGuardProperties.Policy chat = guard.getPolicies().get(POLICY);
		String path = chat == null ? null : chat.getBreakerPath();
		int slash = path == null ? -1 : path.indexOf('/');
		return slash < 0 ? MockModelServer.MODEL : path.substring(slash + 1);
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

	/**
	 * The ladder below the model, for the starter's policy {@code chat}: with the mock, a sibling
	 * model of the breaker tree first ({@code Fallback.siblings}: {@code mock-small} when
	 * {@code mock-large} cannot answer, on its own path); then the response cache, canned answers
	 * on known topics, then a fixed message. Every trigger enters it but a client error and a budget's
	 * refusal, which the chat answers with 429. Properties can name only the last rung; the policy's
	 * breaker path, which the sibling step needs, comes from the builder the starter filled in.
	 */
	@Bean
	AiGuardPolicyCustomizer fallbackLadder(DemoProperties properties, ResponseCache<ChatChunk> cache,
			ModelUpstream upstream, AiGuardProperties guard) {
		DemoProperties.Fallback f = properties.fallback();
		AiGuardProperties.Policy chat = guard.getPolicies().get(POLICY);
		Duration idle = chat == null || chat.getStall().getIdleTimeout() == null ? StallSpec.defaults().idleTimeout()
				: chat.getStall().getIdleTimeout();
		SiblingModels siblings = new SiblingModels(upstream, idle);
		return (name, builder) -> {
			FallbackChain.Builder<ChatChunk> ladder = FallbackChain.builder();
			BreakerPath path = builder.breakerPath();
			// a real upstream is one model the demo knows by name: no sibling to ask
			if (path != null && upstream.mock() != null) {
				ladder.step(Fallback.siblings(path.tree(), siblings::stream));
			}
			// a budget's refusal is the caller's to hear (429 with Retry-After), not the ladder's to hide
			Set<FallbackTrigger> triggers = FallbackTrigger.defaults();
			triggers.remove(FallbackTrigger.BUDGET);
			builder.fallback(ladder
				.step(Fallback.cache(cache))
				.step(new DemoFaq().step())
				.step(Fallback.staticText(f.staticText()))
				.timeout(f.timeout())
				.triggers(triggers)
				.build());
		};
	}

	/**
	 * The policy both clients share, as the starter built it from {@code aiguard.policies.chat}:
	 * one breaker path, one set of lanes, one retry budget, the same deadlines and ladder.
	 */
	static GuardPolicy chatPolicy(AiGuardRegistry registry) {
		return registry.guard(POLICY).policy();
	}

	/**
	 * The library client's guard, live: the shared policy, storing its answers in the response cache
	 * and filing its reports under {@code library}, whose settings {@code PUT /api/policy} changes
	 * while it serves. The breaker, lanes, budget, metrics and the starter's report listener (the
	 * Actuator endpoint's recent reports) are the same objects. The starter's own guard
	 * ({@code registry.guard("chat")}) and the Spring AI client's keep the policy of the properties.
	 */
	@Bean
	GuardControl<ChatChunk> libraryGuard(AiGuardRegistry registry, ResponseCache<ChatChunk> cache, GuardStats stats) {
		return AiGuard.live(chatPolicy(registry).toBuilder()
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
	 * lane threads instead, so batch questions cannot take the threads interactive ones need. It
	 * leaves out the policy's output validators, which read the library client's chunks only.
	 */
	@Bean
	AiGuardAdvisor springAiAdvisor(AiGuardRegistry registry, ResponseCache<ChatChunk> cache, GuardStats stats) {
		return AiGuardAdvisor.of(chatPolicy(registry).toBuilder()
			// the output validators read the library's ChatChunk answers, not Spring AI's responses
			.withoutValidation()
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
	RouterFunction<ServerResponse> demoRoutes(DemoProperties properties, AiGuardRegistry registry,
			ModelUpstream upstream, SpringAiClient springAi, JsonMapper json,
			GuardStats stats, AiGuardProperties guardProperties, GuardControl<ChatChunk> libraryGuard,
			ObjectProvider<MeterRegistry> meters) {
		// Jackson builds and caches its tree (de)serializers under a lock on first use: requests racing
		// to be first would park an event loop on it, so the handlers' one JSON type is made here
		json.writeValueAsString(json.readTree("{\"warm\":[1,0.5,true,null,\"x\"]}"));
		AnswerClient defaultClient = properties.chat().client();
		GuardPolicy policy = chatPolicy(registry);
		LoadGovernor governor = registry.load().orElse(null);
		ChatHandler chat = new ChatHandler(libraryGuard.guard(), upstream, springAi, defaultClient, json,
				(int) properties.chat().maxBodySize().toBytes(), governor,
				Tenant.of(guardProperties.getBudgets().getDefaultTenant()));
		FaultHandler faults = new FaultHandler(upstream.mock(), json);
		PolicyHandler livePolicy = new PolicyHandler(libraryGuard, json);
		// the same for the map types of the policy view
		json.writeValueAsString(livePolicy.view());
		GuardStatusHandler status = new GuardStatusHandler(
				Objects.requireNonNull(policy.breaker(), "aiguard.policies.chat.breaker names no breaker"),
				Clock.systemUTC(),
				Objects.requireNonNull(policy.lanes(), "aiguard.policies.chat.lanes is not true"), stats, upstream,
				defaultClient, governor, governor == null ? null : guardProperties.getLoad().getCapacity(),
				registry.breakerTree().orElse(null),
				new BudgetStatus(libraryGuard::policy, meters.getIfAvailable(SimpleMeterRegistry::new), upstream.mock()));
		return RouterFunctions.route()
			.POST("/api/chat", chat::chat)
			.GET("/api/faults", faults::get)
			.PUT("/api/faults", faults::put)
			.PATCH("/api/faults", faults::patch)
			.DELETE("/api/faults", faults::reset)
			.GET("/api/guard", status::status)
			.GET("/api/policy", livePolicy::get)
			.PUT("/api/policy", livePolicy::put)
			.build();
	}

	/**
	 * The Host, Origin, media-type and token checks in front of every route, Actuator's included.
	 * Without {@code aiguard.access.token} the token is new at each start.
	 */
	@Bean
	LocalAccessFilter localAccessFilter(DemoProperties properties, Environment environment, JsonMapper json) {
		DemoProperties.Access access = properties.access();
		String token = access.token() == null || access.token().isBlank() ? LocalAccessFilter.newToken() : access.token();
		return new LocalAccessFilter(environment.getProperty("server.address"), access.allowedHosts(), token, json);
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
