package dev.aiguard.metrics;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Source;
import dev.aiguard.stall.StallSpec;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

class MicrometerGuardMetricsTest {

	final SimpleMeterRegistry registry = new SimpleMeterRegistry();
	final MicrometerGuardMetrics metrics = new MicrometerGuardMetrics(registry);

	@Test
	void guardRecordsStreamsTokensTtftDurationAndStalls() {
		GuardPolicy policy = GuardPolicy.builder("chat").metrics(metrics)
				.stall(StallSpec.defaults().idleTimeout(Duration.ofSeconds(2))).build();
		StepVerifier.withVirtualTime(() -> Flux.just("a", "b", "c").delayElements(Duration.ofMillis(100))
						.map(ChatChunk::token).concatWith(Flux.just(ChatChunk.done()))
						.transform(AiGuard.of(policy)).contextWrite(Priority.P0.asContext()))
				.thenAwait(Duration.ofSeconds(1))
				.expectNextCount(4)
				.verifyComplete();
		StepVerifier.withVirtualTime(() -> Flux.just(ChatChunk.token("x")).concatWith(Flux.never())
						.transform(AiGuard.of(policy)))
				.expectNextCount(1)
				.thenAwait(Duration.ofSeconds(5))
				.verifyError();

		assertThat(registry.get("aiguard.streams").tags("policy", "chat", "priority", "P0", "outcome", "SUCCESS")
				.counter().count()).isEqualTo(1.0);
		assertThat(registry.get("aiguard.streams").tags("policy", "chat", "priority", "P1", "outcome", "STALLED")
				.counter().count()).isEqualTo(1.0);
		assertThat(registry.get("aiguard.delivered.chunks").tags("priority", "P0").counter().count()).isEqualTo(3.0);
		assertThat(registry.get("aiguard.stream.ttft").tags("priority", "P0").timer().totalTime(TimeUnit.MILLISECONDS))
				.isEqualTo(100.0);
		assertThat(registry.get("aiguard.stream.duration").tags("priority", "P0", "outcome", "SUCCESS").timer()
				.totalTime(TimeUnit.MILLISECONDS)).isEqualTo(300.0);
		assertThat(registry.get("aiguard.stalls").tags("priority", "P1", "phase", "IDLE").counter().count())
				.isEqualTo(1.0);
	}

	@Test
	void everyMeterStartsWithAiguard() {
		metrics.streamEnded("p", Priority.P1, Outcome.SUCCESS, 1, 1, 1);
		metrics.breakerCreated("b", () -> Outcome.SUCCESS, () -> 0.5, () -> 0.1);
		metrics.breakerTransition("b", Outcome.SUCCESS, Outcome.FAILURE);
		metrics.breakerRejected("b");
		metrics.lanesCreated("l", p -> 1, p -> 0, p -> 2);
		metrics.admissionWaited("l", Priority.P0, 5);
		metrics.admissionRejected("l", Priority.P2, "QUEUE_FULL");
		metrics.preempted("l", Priority.P2);
		metrics.retried("p", Priority.P1, "ProviderServerException");
		metrics.retryBudgetExhausted("p", Priority.P1);
		metrics.tokensWasted("p", Priority.P1, 7);
		metrics.promptTruncated("p", Priority.P1, 100);
		metrics.continued("p", Priority.P1);
		metrics.answered("p", Priority.P1, Source.CACHE);
		metrics.fallbackStepFailed("p", Priority.P1, Source.FALLBACK_MODEL);
		metrics.fallbackStepTime("p", Priority.P1, Source.STATIC, 10);
		metrics.cacheLookup("p", true);
		metrics.outputTruncated("p", Priority.P1);
		metrics.stalled("p", Priority.P1, dev.aiguard.core.StallPhase.IDLE);
		assertThat(registry.getMeters()).isNotEmpty()
				.allSatisfy(m -> assertThat(m.getId().getName()).startsWith("aiguard."));
		assertThat(registry.get("aiguard.breaker.state").tags("breaker", "b", "state", "SUCCESS").gauge().value())
				.isEqualTo(1.0);
		assertThat(registry.get("aiguard.lane.queued").tags("lanes", "l", "priority", "P1").gauge().value())
				.isEqualTo(2.0);
		assertThat(registry.get("aiguard.answers").tags("priority", "P1", "source", "CACHE").counter().count()).isEqualTo(1.0);
	}

	@Test
	void countedMetersSayTheirUnitAndEndTheirNameInIt() {
		metrics.streamEnded("p", Priority.P1, Outcome.SUCCESS, 1, 1, 4);
		metrics.tokensWasted("p", Priority.P1, 7);
		metrics.tokensUsed("p", "m", "t", "provider", 10, 5);
		metrics.retryCost("p", "m", "t", 3, 2, "USD", 0.5);
		metrics.promptTruncated("p", Priority.P1, 100);
		assertThat(registry.get("aiguard.wasted.chunks").counter().count()).isEqualTo(7.0);
		assertThat(registry.getMeters()).filteredOn(m -> !(m instanceof Timer) && m.getId().getBaseUnit() != null)
				.extracting(m -> m.getId().getName())
				.containsExactlyInAnyOrder("aiguard.delivered.chunks", "aiguard.delivered.chunks",
						"aiguard.delivered.chunks", "aiguard.wasted.chunks", "aiguard.tokens", "aiguard.tokens",
						"aiguard.retry.tokens", "aiguard.retry.tokens", "aiguard.retry.cost",
						"aiguard.prompt.dropped.tokens")
				.allSatisfy(name -> assertThat(name).doesNotContain("tokens.").doesNotContain("chunks."));
		assertThat(registry.getMeters()).filteredOn(m -> m.getId().getName().endsWith("chunks"))
				.allSatisfy(m -> assertThat(m.getId().getBaseUnit()).isEqualTo("chunks"));
		assertThat(registry.getMeters()).filteredOn(m -> m.getId().getName().endsWith("tokens"))
				.allSatisfy(m -> assertThat(m.getId().getBaseUnit()).isEqualTo("tokens"));
	}

	@Test
	void whatABudgetHoldsHasOneMeterPerUnit() {
		metrics.budgetRemaining("p", "provider", "key", "requests", () -> 3L);
		metrics.budgetRemaining("p", "provider", "key", "tokens", () -> -40L);
		metrics.budgetRemaining("p", "provider", "key", "cost", () -> 2_500_000L);
		assertThat(registry.get("aiguard.budget.remaining.requests").tags("scope", "provider", "id", "key").gauge()
				.value()).isEqualTo(3.0);
		assertThat(registry.get("aiguard.budget.remaining.requests").gauge().getId().getBaseUnit()).isEqualTo("requests");
		assertThat(registry.get("aiguard.budget.remaining.tokens").gauge().value()).as("in debt").isEqualTo(-40.0);
		assertThat(registry.get("aiguard.budget.remaining.tokens").gauge().getId().getBaseUnit()).isEqualTo("tokens");
		assertThat(registry.get("aiguard.budget.remaining.cost").gauge().value()).as("in the currency's units")
				.isEqualTo(2.5);
	}

	@Test
	void aPolicyBuiltAgainUnderItsNameHasTheGaugesOfItsOwnBudget() {
		metrics.bucketStoreMode("p", () -> Outcome.SUCCESS);
		metrics.budgetRemaining("p", "provider", "key", "tokens", () -> 1L);
		// a live change or toBuilder() builds the policy's budget again, with its own store and buckets
		metrics.bucketStoreMode("p", () -> Outcome.FAILURE);
		metrics.budgetRemaining("p", "provider", "key", "tokens", () -> 2L);
		assertThat(registry.find("aiguard.budget.store.mode").gauges()).hasSize(Outcome.values().length);
		assertThat(registry.get("aiguard.budget.store.mode").tag("mode", "FAILURE").gauge().value()).isEqualTo(1.0);
		assertThat(registry.get("aiguard.budget.store.mode").tag("mode", "SUCCESS").gauge().value()).isZero();
		assertThat(registry.find("aiguard.budget.remaining.tokens").gauges()).singleElement()
				.satisfies(g -> assertThat(g.value()).isEqualTo(2.0));
	}
}
