package dev.aiguard;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Source;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.Reports;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;
import reactor.util.context.Context;

import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.ChunkInspector;

class AiGuardTest {

	final Reports reports = new Reports();

	GuardPolicy.Builder policy() {
		return Policies.reporting("test", reports);
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token).concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()));
	}

	@Test
	void passesTokensThroughAndReportsOnce() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().build());
		StepVerifier.create(answer("Hel", "lo").transform(guard))
				.expectNext(ChatChunk.token("Hel"), ChatChunk.token("lo"), ChatChunk.finish("stop"), ChatChunk.done())
				.verifyComplete();
		assertThat(reports).hasSize(1);
		GuardReport r = reports.get(0);
		assertThat(r.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(r.source()).isEqualTo(Source.REALTIME);
		assertThat(r.priority()).isEqualTo(Priority.P1);
		assertThat(r.tokens()).isEqualTo(2);
		assertThat(r.finishReason()).isEqualTo("stop");
		assertThat(r.outputTruncated()).isFalse();
		assertThat(r.attempts()).hasSize(1);
		assertThat(r.attempts().get(0).outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(r.error()).isNull();
	}

	@Test
	void oneGuardServesManySubscriptionsAndResubscriptions() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().build());
		AtomicInteger subscriptions = new AtomicInteger();
		Flux<ChatChunk> source = Flux.defer(() -> {
			subscriptions.incrementAndGet();
			return answer("a");
		});
		Flux<ChatChunk> viaTransform = source.transform(guard);
		Flux<ChatChunk> viaDeferred = source.transformDeferred(guard);
		for (int i = 0; i < 3; i++) {
			StepVerifier.create(viaTransform).expectNextCount(3).verifyComplete();
			StepVerifier.create(viaDeferred).expectNextCount(3).verifyComplete();
		}
		StepVerifier.create(viaTransform.repeat(2)).expectNextCount(9).verifyComplete();
		assertThat(subscriptions).hasValue(9);
		assertThat(reports).hasSize(9).allMatch(r -> r.outcome() == Outcome.SUCCESS && r.tokens() == 1);
	}

	@Test
	void timeToFirstTokenAndDurationComeFromTheTimer() {
		StepVerifier.withVirtualTime(() -> Flux.just("a", "b").delayElements(Duration.ofMillis(300))
						.map(ChatChunk::token).concatWith(Flux.just(ChatChunk.done()))
						.transform(AiGuard.of(policy().build())))
				.thenAwait(Duration.ofSeconds(1))
				.expectNextCount(3)
				.verifyComplete();
		GuardReport r = reports.get(0);
		assertThat(r.timeToFirstToken()).isEqualTo(Duration.ofMillis(300));
		assertThat(r.duration()).isEqualTo(Duration.ofMillis(600));
		assertThat(r.attempts().get(0).timeToFirstToken()).isEqualTo(Duration.ofMillis(300));
	}

	@Test
	void stallIsReportedWithItsPhase() {
		StepVerifier.withVirtualTime(() -> Flux.just(ChatChunk.token("a")).concatWith(Flux.never())
						.transform(AiGuard.of(policy().stall(StallSpec.defaults().idleTimeout(Duration.ofSeconds(2)))
								.build())))
				.expectNextCount(1)
				.thenAwait(Duration.ofSeconds(3))
				.expectErrorSatisfies(e -> {
					// a token had reached the subscriber: the stall arrives marked partial
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(((StreamStalledException) e.getCause()).phase()).isEqualTo(StallPhase.IDLE);
				})
				.verify(Duration.ofSeconds(5));
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.STALLED);
			assertThat(r.tokens()).isEqualTo(1);
			assertThat(r.error()).isInstanceOf(PartialStreamException.class)
					.hasCauseInstanceOf(StreamStalledException.class);
		});
	}

	@Test
	void missingTerminalMarkerIsIncomplete() {
		StepVerifier.create(Flux.just(ChatChunk.token("a")).transform(AiGuard.of(policy().build())))
				.expectNextCount(1)
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
						.hasCauseInstanceOf(IncompleteStreamException.class))
				.verify(Duration.ofSeconds(5));
		StepVerifier.create(Flux.<ChatChunk>empty().transform(AiGuard.of(policy().build())))
				.verifyError(IncompleteStreamException.class);
		assertThat(reports).extracting(GuardReport::outcome).containsExactly(Outcome.INCOMPLETE, Outcome.INCOMPLETE);
	}

	@Test
	void lengthFinishReasonIsReportedAsTruncatedOutput() {
		StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.finish("length"), ChatChunk.done())
						.transform(AiGuard.of(policy().build())))
				.expectNextCount(3)
				.verifyComplete();
		assertThat(reports.get(0).outputTruncated()).isTrue();
		assertThat(reports.get(0).finishReason()).isEqualTo("length");
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.SUCCESS);
	}

	@Test
	void cancelIsItsOwnOutcomeAndCancelsUpstream() {
		TestPublisher<ChatChunk> upstream = TestPublisher.create();
		StepVerifier.create(upstream.flux().transform(AiGuard.of(policy().build())))
				.then(() -> upstream.next(ChatChunk.token("a")))
				.expectNextCount(1)
				.thenCancel()
				.verify(Duration.ofSeconds(5));
		upstream.assertWasCancelled();
		assertThat(reports).singleElement().satisfies(r -> {
			assertThat(r.outcome()).isEqualTo(Outcome.CANCELLED);
			assertThat(r.tokens()).isEqualTo(1);
		});
	}

	@Test
	void priorityComesFromTheContextElseTheDefault() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().defaultPriority(Priority.P2).build());
		StepVerifier.create(answer("a").transform(guard).contextWrite(Priority.P0.asContext()))
				.expectNextCount(3).verifyComplete();
		StepVerifier.create(answer("a").transform(guard).contextWrite(Context.of(Priority.CONTEXT_KEY, "p1")))
				.expectNextCount(3).verifyComplete();
		StepVerifier.create(answer("a").transform(guard)).expectNextCount(3).verifyComplete();
		assertThat(reports).extracting(GuardReport::priority).containsExactly(Priority.P0, Priority.P1, Priority.P2);
	}

	@Test
	void unknownPriorityInContextIsATypedErrorNotAHang() {
		StepVerifier.create(answer("a").transform(AiGuard.of(policy().build()))
						.contextWrite(Context.of(Priority.CONTEXT_KEY, "urgent")))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
						.hasMessageContaining("urgent"))
				.verify(Duration.ofSeconds(5));
		assertThat(reports).singleElement().extracting(GuardReport::outcome).isEqualTo(Outcome.REJECTED);
	}

	@Test
	void throwingListenerIsIsolated() {
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		try {
			AiGuard<ChatChunk> guard = AiGuard.of(policy()
					.onReport(r -> {
						throw new IllegalStateException("listener bug");
					})
					.build());
			StepVerifier.create(answer("a", "b").transform(guard)).expectNextCount(4).verifyComplete();
			StepVerifier.create(answer("c").transform(guard)).expectNextCount(3).verifyComplete();
		}
		finally {
			Hooks.resetOnErrorDropped();
		}
		assertThat(reports).hasSize(2);
		assertThat(dropped).hasSize(2).allMatch(e -> "listener bug".equals(e.getMessage()));
	}

	@Test
	void throwingMetricsAreIsolated() {
		Hooks.onErrorDropped(e -> { });
		try {
			AiGuard<ChatChunk> guard = AiGuard.of(policy().metrics(new dev.aiguard.metrics.GuardMetrics() {
				@Override
				public void streamEnded(String policy, Priority priority, Outcome outcome, long durationNanos,
						long timeToFirstTokenNanos, long tokens) {
					throw new IllegalStateException("metrics bug");
				}
			}).build());
			StepVerifier.create(answer("a").transform(guard)).expectNextCount(3).verifyComplete();
		}
		finally {
			Hooks.resetOnErrorDropped();
		}
		assertThat(reports).hasSize(1);
	}

	@Test
	void errorsAreClassifiedByThePolicy() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy()
				.errorClassifier(e -> e instanceof IllegalArgumentException ? Outcome.CLIENT_ERROR : Outcome.FAILURE)
				.build());
		StepVerifier.create(Flux.<ChatChunk>error(new IllegalArgumentException("bad request")).transform(guard))
				.verifyError(IllegalArgumentException.class);
		StepVerifier.create(Flux.<ChatChunk>error(new IllegalStateException("reset")).transform(guard))
				.verifyError(IllegalStateException.class);
		assertThat(reports).extracting(GuardReport::outcome).containsExactly(Outcome.CLIENT_ERROR, Outcome.FAILURE);
	}

	@Test
	void honoursBackpressureFromZeroDemand() {
		StepVerifier.create(answer("a", "b", "c").transform(AiGuard.of(policy().build())), 0)
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(10))
				.thenRequest(2)
				.expectNextCount(2)
				.expectNoEvent(Duration.ofMillis(10))
				.thenRequest(10)
				.expectNextCount(3)
				.verifyComplete();
	}

	@Test
	void worksWithAnyChunkTypeThroughItsInspector() {
		ChunkInspector<String> strings = ChunkInspector.of(s -> !s.startsWith(":") && !s.equals("[DONE]"),
				s -> s.startsWith(":"), "[DONE]"::equals, s -> null);
		StepVerifier.create(Flux.just("a", ": ping", "b", "[DONE]").transform(AiGuard.of(policy().build(), strings)))
				.expectNext("a", ": ping", "b", "[DONE]")
				.verifyComplete();
		assertThat(reports.get(0).tokens()).isEqualTo(2);
	}

	@Test
	void reportListenersCanRunOnAnotherScheduler() {
		List<Runnable> queued = new CopyOnWriteArrayList<>();
		AiGuard<ChatChunk> guard = AiGuard.of(policy()
				.reportScheduler(reactor.core.scheduler.Schedulers.fromExecutor(queued::add)).build());
		StepVerifier.create(answer("a").transform(guard)).expectNextCount(3).verifyComplete();
		assertThat(reports).isEmpty();
		queued.forEach(Runnable::run);
		assertThat(reports).hasSize(1);
	}

	@Test
	void signalsTellTheSourceWhileStreamingAndTheReportAtTheEnd() {
		GuardSignals signals = GuardSignals.create();
		List<Object> seen = new CopyOnWriteArrayList<>();
		signals.source().subscribe(seen::add);
		signals.report().subscribe(seen::add);
		Flux<ChatChunk> guarded = answer("a", "b").transform(AiGuard.of(policy().build()));
		StepVerifier.create(guarded.doOnNext(c -> seen.add(c.text())).contextWrite(signals::into))
				.expectNextCount(4)
				.verifyComplete();
		// the source is announced before the first token reaches the subscriber, the report after the end
		assertThat(seen).hasSize(6);
		assertThat(seen.get(0)).isEqualTo(Source.REALTIME);
		assertThat(seen.get(1)).isEqualTo("a");
		assertThat(seen.get(5)).isInstanceOfSatisfying(GuardReport.class,
				r -> assertThat(r.tokens()).isEqualTo(2));
	}
}
