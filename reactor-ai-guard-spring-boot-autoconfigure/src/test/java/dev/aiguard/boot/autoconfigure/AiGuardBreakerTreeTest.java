package dev.aiguard.boot.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import java.util.concurrent.CopyOnWriteArrayList;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardSignals;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.core.Source;
import reactor.core.publisher.Flux;
import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.chat.ChatChunk;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/** {@code aiguard.breaker-tree.*}: the tree built from properties, policies on its paths, the read view. */
class AiGuardBreakerTreeTest {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class, AiGuardEndpointAutoConfiguration.class))
		.withPropertyValues("management.endpoints.web.exposure.include=aiguard",
				"aiguard.breakers.endpoint.minimum-calls=3", "aiguard.breakers.endpoint.open-wait=20s",
				"aiguard.breaker-tree.name=llm", "aiguard.breaker-tree.providers.mock=primary,secondary",
				"aiguard.breaker-tree.providers.backup=small", "aiguard.breaker-tree.endpoint-config=endpoint",
				"aiguard.breaker-tree.p0-probe-window=2s", "aiguard.breaker-tree.system-p0-probe-share=0.05",
				"aiguard.policies.chat.breaker-path=mock/primary");

	@Test
	void theTreeIsBuiltFromPropertiesAndThePolicyPassesItsPath() {
		runner.run(context -> {
			assertThat(context).hasNotFailed();
			AiGuardRegistry registry = context.getBean(AiGuardRegistry.class);
			BreakerTree tree = registry.breakerTree().orElseThrow();
			assertThat(tree.name()).isEqualTo("llm");
			assertThat(tree.paths()).extracting(BreakerPath::name)
					.containsExactly("llm/mock/primary", "llm/mock/secondary", "llm/backup/small");
			BreakerPath primary = tree.path("mock", "primary");
			assertThat(primary.endpoint().breaker().config().minimumCalls()).isEqualTo(3);
			assertThat(primary.endpoint().breaker().config().openWait()).isEqualTo(Duration.ofSeconds(20));
			assertThat(primary.endpoint().breaker().config().p0ProbeWindow()).isEqualTo(Duration.ofSeconds(2));
			assertThat(tree.root().breaker().config().openP0ProbeShare()).isEqualTo(0.05);
			assertThat(primary.provider().breaker().config().openP0ProbeShare()).isZero();
			AiGuard<ChatChunk> chat = registry.guard("chat");
			assertThat(chat.policy().breakerPath()).isSameAs(primary);
			// the tree's breakers stay in the tree (no '/' in health contributor names or selectors)
			assertThat(registry.breakers()).containsOnlyKeys("endpoint");
		});
	}

	@Test
	void theParentsRuleIsSetByProperties() {
		runner.run(context -> {
			BreakerTree tree = context.getBean(AiGuardRegistry.class).breakerTree().orElseThrow();
			assertThat(tree.childrenToTrip()).isEqualTo(2);
			assertThat(tree.childrenShareToTrip()).isEqualTo(0.5);
		});
		runner.withPropertyValues("aiguard.breaker-tree.children-to-trip=3",
				"aiguard.breaker-tree.children-share-to-trip=0.75").run(context -> {
			BreakerTree tree = context.getBean(AiGuardRegistry.class).breakerTree().orElseThrow();
			assertThat(tree.childrenToTrip()).isEqualTo(3);
			assertThat(tree.childrenShareToTrip()).isEqualTo(0.75);
		});
	}

	@Test
	@SuppressWarnings("unchecked")
	void theReadViewShowsTheTree() {
		runner.run(context -> {
			AiGuardRegistry registry = context.getBean(AiGuardRegistry.class);
			registry.breakerTree().orElseThrow().path("mock", "secondary").endpoint().breaker().transitionToForcedOpen();
			Map<String, Object> body = context.getBean(AiGuardEndpoint.class).guard();
			Map<String, Object> root = (Map<String, Object>) body.get("breakerTree");
			assertThat(root).containsEntry("name", "llm").containsEntry("level", "SYSTEM").containsEntry("state",
					"CLOSED");
			List<Map<String, Object>> providers = (List<Map<String, Object>>) root.get("children");
			assertThat(providers).extracting(p -> p.get("name")).containsExactly("mock", "backup");
			List<Map<String, Object>> endpoints = (List<Map<String, Object>>) providers.get(0).get("children");
			assertThat(endpoints).extracting(e -> e.get("name"), e -> e.get("state")).containsExactly(
					org.assertj.core.groups.Tuple.tuple("primary", BreakerState.CLOSED.name()),
					org.assertj.core.groups.Tuple.tuple("secondary", BreakerState.FORCED_OPEN.name()));
			assertThat(endpoints.get(1)).containsEntry("breaker", "llm/mock/secondary").containsEntry("level", "ENDPOINT")
					.containsKeys("calls", "failureRate", "slowCallRate", "rejectedCalls");
		});
	}

	@Test
	void withoutProvidersThereIsNoTree() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(AiGuardAutoConfiguration.class,
				AiGuardEndpointAutoConfiguration.class))
			.withPropertyValues("management.endpoints.web.exposure.include=aiguard")
			.run(context -> {
				assertThat(context.getBean(AiGuardRegistry.class).breakerTree()).isEmpty();
				assertThat(context.getBean(AiGuardEndpoint.class).guard()).doesNotContainKey("breakerTree");
			});
	}

	@Test
	void badTreePropertiesFailNamingTheProperty() {
		runner.withPropertyValues("aiguard.policies.chat.breaker-path=mock/nope").run(context -> assertThat(context)
			.getFailure().hasStackTraceContaining("aiguard.policies.chat.breaker-path")
			.hasStackTraceContaining("endpoint 'nope'"));
		runner.withPropertyValues("aiguard.breaker-tree.endpoint-config=missing").run(context -> assertThat(context)
			.getFailure().hasStackTraceContaining("aiguard.breaker-tree.endpoint-config")
			.hasStackTraceContaining("missing"));
		runner.withPropertyValues("aiguard.breaker-tree.children-to-trip=1").run(context -> assertThat(context)
			.getFailure().hasStackTraceContaining("aiguard.breaker-tree.children-to-trip")
			.hasStackTraceContaining("between 2 and 100"));
		runner.withPropertyValues("aiguard.breaker-tree.children-share-to-trip=1.5").run(context -> assertThat(context)
			.getFailure().hasStackTraceContaining("aiguard.breaker-tree.children-share-to-trip")
			.hasStackTraceContaining("childrenShareToTrip must be a fraction in (0, 1], was 1.5"));
		runner.withPropertyValues("aiguard.policies.chat.breaker=endpoint").run(context -> assertThat(context)
			.getFailure().hasStackTraceContaining("either a breaker or a breaker-path"));
		runner.withPropertyValues("aiguard.breaker-tree.system-p0-probe-share=0.9").run(context -> assertThat(context)
			.getFailure().hasStackTraceContaining("aiguard.breaker-tree.system-p0-probe-share"));
	}

	@Test
	void aCustomizerAddsTheSiblingsStepForThePolicysPath() {
		List<String> asked = new CopyOnWriteArrayList<>();
		AiGuardPolicyCustomizer siblings = (name, builder) -> {
			BreakerPath path = builder.breakerPath();
			assertThat(path).as("the path of aiguard.policies.chat.breaker-path").isNotNull();
			builder.fallback(FallbackChain.<ChatChunk>builder()
				.step(Fallback.siblings(path.tree(), (sibling, request) -> {
					asked.add(sibling.name() + " as " + request.withModel(sibling.endpoint().name()).model());
					return Flux.just(ChatChunk.token("from " + sibling.endpoint().name()), ChatChunk.finish("stop"),
							ChatChunk.done());
				}))
				.step(Fallback.staticText("busy"))
				.build());
		};
		runner.withBean(AiGuardPolicyCustomizer.class, () -> siblings).run(context -> {
			AiGuardRegistry registry = context.getBean(AiGuardRegistry.class);
			BreakerTree tree = registry.breakerTree().orElseThrow();
			tree.path("mock", "primary").endpoint().breaker().transitionToForcedOpen();
			GuardSignals signals = GuardSignals.create();

			List<ChatChunk> answer = registry.guard("chat")
				.call(ChatRequest.of("primary", List.of(ChatMessage.user("hi"))),
						request -> Flux.<ChatChunk>error(new IllegalStateException("the primary is never asked")))
				.contextWrite(signals::into)
				.collectList().block(Duration.ofSeconds(5));

			assertThat(answer).extracting(ChatChunk::text).contains("from secondary");
			assertThat(asked).containsExactly("llm/mock/secondary as secondary");
			assertThat(signals.report().block(Duration.ofSeconds(5)).source()).isEqualTo(Source.FALLBACK_MODEL);
			assertThat(tree.path("mock", "secondary").endpoint().breaker().snapshot().calls())
				.as("the sibling's call counts on its own path").isEqualTo(1);
		});
	}
}
