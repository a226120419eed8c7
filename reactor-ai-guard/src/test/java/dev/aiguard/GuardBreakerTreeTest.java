package dev.aiguard;

import static java.util.concurrent.TimeUnit.NANOSECONDS;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerOpenException;
import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.BreakerState;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.fallback.FallbackRequest;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.Reports;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

/**
 * A policy on a path of a breaker tree, in virtual time: every attempt passes each level once and
 * settles each once; a refusal names its level and takes the ladder, whose siblings step goes to a
 * sibling endpoint first, then another provider; and priorities reach the breakers.
 */
@Timeout(60)
class GuardBreakerTreeTest {

	static final ChatRequest REQUEST = ChatRequest.of("primary", List.of(ChatMessage.user("hi")));

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	/** Which model each upstream or sibling call asked for. */
	final List<String> asked = new CopyOnWriteArrayList<>();
	final List<FallbackRequest> ladderRequests = new CopyOnWriteArrayList<>();

	@AfterEach
	void disposeClock() {
		vts.dispose();
	}

	BreakerTree tree(BreakerConfig system) {
		BreakerConfig endpoint = BreakerConfig.custom().countWindow(10).minimumCalls(2).failureRateThreshold(0.5)
				.openWait(Duration.ofSeconds(10)).openWaitJitter(0).minimumDwell(Duration.ZERO).halfOpenProbes(1)
				.successesToClose(1).build();
		return BreakerTree.builder("llm").clock(() -> vts.now(NANOSECONDS)).endpointConfig(endpoint)
				.providerConfig(endpoint).systemConfig(system).provider("mock", "primary", "secondary")
				.provider("backup", "small").build();
	}

	BreakerTree tree() {
		return tree(BreakerConfig.custom().countWindow(10).minimumCalls(2).openWait(Duration.ofSeconds(10))
				.minimumDwell(Duration.ZERO).build());
	}

	static Flux<ChatChunk> answer(String text) {
		return Flux.just(ChatChunk.token(text), ChatChunk.finish("stop"), ChatChunk.done());
	}

	/** The model answers with its own name. */
	Flux<ChatChunk> model(String name) {
		return Flux.defer(() -> {
			asked.add(name);
			return answer(name);
		});
	}

	AiGuard<ChatChunk> guard(BreakerTree tree, GuardPolicy.Builder extra) {
		FallbackChain<ChatChunk> ladder = FallbackChain.<ChatChunk>builder()
				.step(Fallback.lightweight(req -> {
					ladderRequests.add(req);
					return Flux.empty();
				}, false))
				.step(Fallback.siblings(tree, (path, req) -> model(path.endpoint().name())))
				.step(Fallback.staticText("busy"))
				.build();
		return AiGuard.of(extra.breaker(tree.path("mock", "primary")).fallback(ladder).build());
	}

	GuardPolicy.Builder policy() {
		return Policies.onVirtualTime("chat", vts, reports);
	}

	static String text(Flux<ChatChunk> answer) {
		StringBuilder text = new StringBuilder();
		StepVerifier.create(answer).thenConsumeWhile(c -> true, c -> {
			if (c.text() != null) {
				text.append(c.text());
			}
		}).verifyComplete();
		return text.toString();
	}

	@Test
	void everyAttemptPassesEachLevelOnceAndSettlesEachOnce() {
		BreakerTree tree = tree();
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().breaker(tree.path("mock", "primary"))
				.retry(RetryRules.backoff(3, Duration.ofMillis(10)))
				.build());
		Flux<ChatChunk> failsOnce = Flux.defer(() -> calls.getAndIncrement() == 0
				? Flux.error(new ProviderServerException("mock", 503, "server_error", null, "503", null))
				: answer("ok"));

		StepVerifier.withVirtualTime(() -> guard.call(REQUEST, req -> failsOnce), () -> vts, Long.MAX_VALUE)
				.thenAwait(Duration.ofSeconds(1)).expectNextCount(3).verifyComplete();

		BreakerPath path = tree.path("mock", "primary");
		for (var breaker : List.of(path.system().breaker(), path.provider().breaker(), path.endpoint().breaker())) {
			assertThat(breaker.snapshot().calls()).as(breaker.name()).isEqualTo(2);
			assertThat(breaker.snapshot().failures()).as(breaker.name()).isEqualTo(1);
		}
		assertThat(tree.path("mock", "secondary").endpoint().breaker().snapshot().calls()).isZero();
		assertThat(guard.policy().breakerGate()).isSameAs(path);
		assertThat(guard.policy().breaker()).isSameAs(path.endpoint().breaker());
	}

	@Test
	void anOpenEndpointUnderAHealthyProviderSendsTheRequestToItsSibling() {
		BreakerTree tree = tree();
		AiGuard<ChatChunk> guard = guard(tree, policy());
		tree.path("mock", "primary").endpoint().breaker().transitionToForcedOpen();

		assertThat(text(guard.call(REQUEST, req -> model("primary")))).isEqualTo("secondary");

		assertThat(asked).containsExactly("secondary");
		assertThat(reports.last().source()).isEqualTo(Source.FALLBACK_MODEL);
		assertThat(reports.last().outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(ladderRequests).singleElement().satisfies(r -> {
			assertThat(r.breakerPath()).isSameAs(tree.path("mock", "primary"));
			assertThat(r.cause()).isInstanceOfSatisfying(BreakerOpenException.class,
					e -> assertThat(e.breakerName()).isEqualTo("llm/mock/primary"));
		});
		// the sibling's call went through its own path, settled once as a success
		BreakerPath secondary = tree.path("mock", "secondary");
		assertThat(secondary.endpoint().breaker().snapshot().calls()).isEqualTo(1);
		assertThat(secondary.endpoint().breaker().snapshot().failures()).isZero();
		assertThat(secondary.provider().breaker().snapshot().calls()).isEqualTo(1);
		assertThat(secondary.system().breaker().snapshot().calls()).isEqualTo(1);
	}

	@Test
	void anOpenProviderSendsTheRequestToAnotherProvider() {
		BreakerTree tree = tree();
		AiGuard<ChatChunk> guard = guard(tree, policy());
		tree.provider("mock").breaker().transitionToForcedOpen();

		assertThat(text(guard.call(REQUEST, req -> model("primary")))).isEqualTo("small");
		assertThat(asked).containsExactly("small");
		assertThat(ladderRequests.get(0).cause()).isInstanceOfSatisfying(BreakerOpenException.class,
				e -> assertThat(e.breakerName()).isEqualTo("llm/mock"));
	}

	@Test
	void aFailingEndpointTripsAloneAndTheNextRequestsGoToItsSibling() {
		BreakerTree tree = tree();
		AiGuard<ChatChunk> guard = guard(tree, policy());
		Flux<ChatChunk> broken = Flux.defer(() -> {
			asked.add("primary");
			return Flux.error(new ProviderServerException("mock", 529, "overloaded", null, "529", null));
		});
		// two failures: the ladder answers each from the sibling, and the endpoint opens alone
		assertThat(text(guard.call(REQUEST, req -> broken))).isEqualTo("secondary");
		assertThat(text(guard.call(REQUEST, req -> broken))).isEqualTo("secondary");
		assertThat(tree.path("mock", "primary").endpoint().breaker().state()).isEqualTo(BreakerState.OPEN);
		assertThat(tree.provider("mock").breaker().state()).isEqualTo(BreakerState.CLOSED);
		assertThat(tree.root().breaker().state()).isEqualTo(BreakerState.CLOSED);

		assertThat(text(guard.call(REQUEST, req -> broken))).isEqualTo("secondary");
		assertThat(asked).containsExactly("primary", "secondary", "primary", "secondary", "secondary");
		// the refused call never reached the provider: 2 failures + 3 sibling successes
		assertThat(tree.provider("mock").breaker().snapshot().calls()).isEqualTo(5);
	}

	@Test
	void aSystemWideOpenLetsAShareOfP0ThroughWhileP1FallsBack() {
		BreakerTree tree = tree(BreakerConfig.custom().countWindow(10).minimumCalls(2)
				.openWait(Duration.ofSeconds(10)).minimumDwell(Duration.ZERO).openP0ProbeShare(0.5).build());
		AiGuard<ChatChunk> guard = guard(tree, policy());
		// the system opens (as on a peer's verdict; a tree with a one-endpoint provider cannot trip it)
		tree.root().breaker().transitionToOpen(Duration.ofSeconds(10), "every provider fails");
		assertThat(tree.root().breaker().state()).isEqualTo(BreakerState.OPEN);
		tree.paths().forEach(p -> {
			p.endpoint().breaker().transitionToClosed();
			p.provider().breaker().transitionToClosed();
		});

		List<String> p1 = new CopyOnWriteArrayList<>();
		List<String> p0 = new CopyOnWriteArrayList<>();
		for (int i = 0; i < 4; i++) {
			p1.add(text(guard.call(REQUEST, req -> model("primary")).contextWrite(Priority.P1.asContext())));
			p0.add(text(guard.call(REQUEST, req -> model("primary")).contextWrite(Priority.P0.asContext())));
		}
		assertThat(p1).containsOnly("busy");
		// every other P0 call passes the open system: the first request live, each later one refused live
		// and let through for the sibling (the system's share counts the ladder's P0 calls too)
		assertThat(p0).containsExactly("primary", "secondary", "secondary", "secondary");
		assertThat(tree.root().breaker().state()).isEqualTo(BreakerState.OPEN);
	}

	@Test
	void halfOpenProbesGoToP0First() {
		BreakerTree tree = tree();
		BreakerPath primary = tree.path("mock", "primary");
		primary.endpoint().breaker().reconfigure(BreakerConfig.from(primary.endpoint().breaker().config())
				.p0ProbeWindow(Duration.ofSeconds(2)).build(), "P0 probes first");
		AiGuard<ChatChunk> guard = AiGuard.of(policy().breaker(primary).build());
		primary.acquire(Priority.P1).record(Outcome.FAILURE, -1);
		primary.acquire(Priority.P1).record(Outcome.FAILURE, -1);
		assertThat(primary.endpoint().breaker().state()).isEqualTo(BreakerState.OPEN);
		vts.advanceTimeBy(Duration.ofSeconds(10));

		StepVerifier.create(guard.call(REQUEST, req -> model("primary")).contextWrite(Priority.P1.asContext()))
				.verifyErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(BreakerOpenException.class,
						refused -> assertThat(refused.state()).isEqualTo(BreakerState.HALF_OPEN)));
		StepVerifier.create(guard.call(REQUEST, req -> model("primary")).contextWrite(Priority.P0.asContext()))
				.expectNextCount(3).verifyComplete();
		assertThat(primary.endpoint().breaker().state()).isEqualTo(BreakerState.CLOSED);
	}
}
