package dev.aiguard;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.admission.LaneSpec;
import dev.aiguard.admission.PriorityLanes;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Source;
import dev.aiguard.fallback.Fallback;
import dev.aiguard.fallback.FallbackChain;
import dev.aiguard.metrics.GuardObserver;
import dev.aiguard.metrics.ObservationGuardObserver;
import dev.aiguard.metrics.RequestObserver;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.retry.RetryRules;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.contextpropagation.ObservationThreadLocalAccessor;
import io.micrometer.observation.tck.TestObservationRegistry;
import io.micrometer.observation.tck.TestObservationRegistryAssert;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Hooks;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.util.context.Context;

import static org.assertj.core.api.Assertions.assertThat;

class GuardObserverTest {

	static final ChatRequest REQUEST = ChatRequest.of("m", List.of(ChatMessage.user("hi")));

	/** Records every event an observation receives, as {@code name: contextual name}. */
	static final class EventRecorder implements ObservationHandler<Observation.Context> {

		final List<String> events = new CopyOnWriteArrayList<>();
		final List<String> highCardinalityKeys = new CopyOnWriteArrayList<>();

		@Override
		public void onStop(Observation.Context context) {
			context.getHighCardinalityKeyValues().forEach(kv -> highCardinalityKeys.add(kv.getKey()));
		}

		@Override
		public void onEvent(Observation.Event event, Observation.Context context) {
			events.add(event.getName() + ": " + event.getContextualName());
		}

		@Override
		public boolean supportsContext(Observation.Context context) {
			return true;
		}
	}

	@Test
	void aRetriedRequestIsOneObservationWhoseEventsTellTheStory() {
		TestObservationRegistry registry = TestObservationRegistry.create();
		EventRecorder recorder = new EventRecorder();
		registry.observationConfig().observationHandler(recorder);
		AtomicInteger calls = new AtomicInteger();

		StepVerifier.withVirtualTime(() -> {
			VirtualTimeScheduler vts = VirtualTimeScheduler.get();
			GuardPolicy policy = GuardPolicy.builder("chat").timer(vts)
				.breaker(BreakerConfig.custom().minimumCalls(10).build())
				.retry(RetryRules.backoff(3, Duration.ofSeconds(1)).jitter(0))
				.observer(new ObservationGuardObserver(registry))
				.build();
			return AiGuard.of(policy).call(REQUEST, request -> Flux.defer(() -> calls.incrementAndGet() == 1
					? Flux.error(new ProviderServerException("test", 503, "server_error", null, "unavailable", null))
					: Flux.just(ChatChunk.token("hello"), ChatChunk.finish("stop"))))
				.contextWrite(Priority.P0.asContext());
		})
			.expectSubscription()
			.thenAwait(Duration.ofSeconds(1))
			.expectNextCount(2)
			.verifyComplete();

		TestObservationRegistryAssert.assertThat(registry)
			.hasNumberOfObservationsEqualTo(1)
			.hasObservationWithNameEqualTo(ObservationGuardObserver.NAME)
			.that()
			.hasContextualNameEqualTo("aiguard chat")
			.hasLowCardinalityKeyValue("policy", "chat")
			.hasLowCardinalityKeyValue("priority", "P0")
			.hasLowCardinalityKeyValue("outcome", "SUCCESS")
			.hasLowCardinalityKeyValue("source", "REALTIME")
			.doesNotHaveError()
			.hasBeenStarted()
			.hasBeenStopped();
		assertThat(recorder.highCardinalityKeys).as("no high-cardinality key by default").isEmpty();
		assertThat(recorder.events).containsExactly(
				"aiguard.breaker.permitted: aiguard.breaker.permitted",
				"aiguard.attempt.started: attempt 1",
				"aiguard.attempt.ended: attempt 1 FAILURE",
				"aiguard.backoff: backoff 1000 ms",
				"aiguard.breaker.permitted: aiguard.breaker.permitted",
				"aiguard.retry: retry after ProviderServerException",
				"aiguard.attempt.started: attempt 2",
				"aiguard.attempt.ended: attempt 2 SUCCESS");
	}

	@Test
	void theObservationIsAChildOfTheOneInTheSubscribersContext() {
		TestObservationRegistry registry = TestObservationRegistry.create();
		Observation parent = Observation.start("http.server.requests", registry);
		GuardPolicy policy = GuardPolicy.builder("chat").observer(new ObservationGuardObserver(registry)).build();

		StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.finish("stop")).transform(AiGuard.of(policy))
				.contextWrite(Context.of(ObservationThreadLocalAccessor.KEY, parent)))
			.expectNextCount(2)
			.verifyComplete();
		parent.stop();

		TestObservationRegistryAssert.assertThat(registry)
			.hasObservationWithNameEqualTo(ObservationGuardObserver.NAME)
			.that()
			.hasParentObservationEqualTo(parent);
	}

	@Test
	void aFailedRequestStopsItsObservationWithTheError() {
		TestObservationRegistry registry = TestObservationRegistry.create();
		GuardPolicy policy = GuardPolicy.builder("chat").observer(new ObservationGuardObserver(registry)).build();
		ProviderServerException failure = new ProviderServerException("test", 500, "server_error", null, "boom", null);

		StepVerifier.create(Flux.<ChatChunk>error(failure).transform(AiGuard.of(policy)))
			.verifyErrorSatisfies(e -> assertThat(e).isSameAs(failure));

		TestObservationRegistryAssert.assertThat(registry)
			.hasObservationWithNameEqualTo(ObservationGuardObserver.NAME)
			.that()
			.hasLowCardinalityKeyValue("outcome", "FAILURE")
			.hasError(failure)
			.hasBeenStopped();
	}

	@Test
	void queueingAdmissionBreakerRefusalAndTheFallbackStepAreObserved() {
		List<String> seen = new CopyOnWriteArrayList<>();
		GuardObserver observer = (policy, priority, context) -> new RequestObserver() {
			@Override
			public void admissionQueued() {
				seen.add("queued");
			}

			@Override
			public void admitted() {
				seen.add("admitted");
			}

			@Override
			public void breakerDecided(boolean permitted) {
				seen.add(permitted ? "permitted" : "refused");
			}

			@Override
			public void attemptStarted(int number) {
				seen.add("attempt " + number);
			}

			@Override
			public void sourceChosen(Source source) {
				seen.add("source " + source);
			}

			@Override
			public void ended(Outcome outcome, Source source, @Nullable Throwable error) {
				seen.add("ended " + outcome + " " + source);
			}
		};
		StepVerifier.withVirtualTime(() -> {
			VirtualTimeScheduler vts = VirtualTimeScheduler.get();
			PriorityLanes lanes = PriorityLanes.builder().name("observed").timer(vts)
				.lane(Priority.P0, LaneSpec.of(1)).lane(Priority.P1, LaneSpec.of(1).borrowFromLower(false))
				.lane(Priority.P2, LaneSpec.of(0)).build();
			GuardPolicy policy = GuardPolicy.builder("observed").timer(vts).lanes(lanes)
				.breaker(BreakerConfig.custom().build())
				.fallback(FallbackChain.<ChatChunk>builder().step(Fallback.staticText("busy")).build())
				.observer(observer)
				.build();
			policy.breaker().transitionToForcedOpen();
			// holds the only P1 permit for one second
			Flux.just(ChatChunk.token("held"), ChatChunk.done()).delayElements(Duration.ofMillis(500), vts)
				.transform(AiGuard.of(GuardPolicy.builder("holder").timer(vts).lanes(lanes).build())).subscribe();
			return Flux.just(ChatChunk.token("never sent")).transform(AiGuard.of(policy));
		})
			.expectSubscription()
			.thenAwait(Duration.ofSeconds(1))
			.assertNext(chunk -> assertThat(chunk.text()).isEqualTo("busy"))
			.thenConsumeWhile(c -> true)
			.verifyComplete();

		assertThat(seen).containsExactly("queued", "admitted", "refused", "source STATIC", "ended SUCCESS STATIC");
	}

	@Test
	void aThrowingObserverIsIsolated() {
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		try {
			GuardObserver throwsEverywhere = (policy, priority, context) -> new RequestObserver() {
				@Override
				public void attemptStarted(int number) {
					throw new IllegalStateException("attempt observer");
				}

				@Override
				public void ended(Outcome outcome, Source source, @Nullable Throwable error) {
					throw new IllegalStateException("end observer");
				}
			};
			GuardPolicy policy = GuardPolicy.builder("chat").observer(throwsEverywhere).build();
			StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.finish("stop")).transform(AiGuard.of(policy)))
				.expectNextCount(2)
				.verifyComplete();
			GuardObserver throwsAtStart = (policy2, priority, context) -> {
				throw new IllegalStateException("start observer");
			};
			StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.finish("stop"))
					.transform(AiGuard.of(GuardPolicy.builder("chat").observer(throwsAtStart).build())))
				.expectNextCount(2)
				.verifyComplete();
		}
		finally {
			Hooks.resetOnErrorDropped();
		}
		assertThat(dropped).extracting(Throwable::getMessage)
			.containsExactly("attempt observer", "end observer", "start observer");
	}
}
