package dev.aiguard.admission;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.core.Priority;
import dev.aiguard.admission.AdmissionRejectedException.Reason;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.CoreSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.FluxSink;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;
import reactor.util.context.Context;

import static dev.aiguard.core.Priority.P0;
import static dev.aiguard.core.Priority.P1;
import static dev.aiguard.core.Priority.P2;
import static org.assertj.core.api.Assertions.assertThat;

class FluxAdmitTest {

	final List<PriorityLanes> built = new ArrayList<>();
	final VirtualTimeScheduler clock = VirtualTimeScheduler.create();

	@AfterEach
	void disposeLanes() {
		built.forEach(PriorityLanes::dispose);
		clock.dispose();
	}

	PriorityLanes lanes(LaneSpec p0, LaneSpec p1, LaneSpec p2) {
		PriorityLanes lanes = PriorityLanes.builder()
				.lane(P0, p0)
				.lane(P1, p1)
				.lane(P2, p2)
				.timer(clock)
				.build();
		built.add(lanes);
		return lanes;
	}

	PriorityLanes oneEach() {
		return lanes(LaneSpec.of(1), LaneSpec.of(1), LaneSpec.of(1));
	}

	static int inUse(PriorityLanes lanes) {
		int sum = 0;
		for (Priority p : Priority.values()) {
			sum += lanes.inFlight(p) + lanes.borrowedInFlight(p);
		}
		return sum;
	}

	@Test
	void readsThePriorityFromTheContext() {
		PriorityLanes lanes = oneEach();

		TestSubscriber<Integer> ts = TestSubscriber.builder().contextPut(Priority.CONTEXT_KEY, P2).build();
		Flux.<Integer>never().transform(lanes.admit()).subscribe(ts);

		assertThat(lanes.inFlight(P2)).isEqualTo(1);
		ts.cancel();
		assertThat(lanes.inFlight(P2)).isZero();
	}

	@Test
	void contextWrittenBelowReachesEveryAdmittedCall() {
		PriorityLanes lanes = oneEach();
		List<Priority> seen = new ArrayList<>();

		Flux<Integer> call = Flux.defer(() -> {
			for (Priority p : Priority.values()) {
				if (lanes.inFlight(p) == 1) {
					seen.add(p);
				}
			}
			return Flux.just(1);
		}).transform(lanes.admit());

		StepVerifier.create(call.concatWith(call).contextWrite(P0.asContext()))
				.expectNext(1, 1)
				.verifyComplete();
		assertThat(seen).containsExactly(P0, P0);
	}

	@Test
	void usesTheGivenPriorityWhenTheContextHasNone() {
		PriorityLanes lanes = oneEach();

		Flux.<Integer>never().transform(lanes.admit(P0)).subscribe();
		Flux.<Integer>never().transform(lanes.admit()).subscribe();

		assertThat(lanes.inFlight(P0)).isEqualTo(1);
		assertThat(lanes.inFlight(P1)).as("admit() defaults to P1").isEqualTo(1);
	}

	@Test
	void unknownPriorityInTheContextFailsWithoutTakingAPermit() {
		PriorityLanes lanes = oneEach();

		StepVerifier.create(Flux.just(1).transform(lanes.admit()).contextWrite(Context.of(Priority.CONTEXT_KEY, "P9")))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalArgumentException.class)
						.hasMessageContaining("P9"))
				.verify(Duration.ofSeconds(5));
		assertThat(inUse(lanes)).isZero();
	}

	@Test
	void holdsThePermitWhileStreamingAndReleasesItOnComplete() {
		PriorityLanes lanes = oneEach();
		TestPublisher<Integer> upstream = TestPublisher.create();

		StepVerifier.create(upstream.flux().transform(lanes.admit(P0)))
				.then(() -> upstream.next(1, 2))
				.expectNext(1, 2)
				.then(() -> assertThat(lanes.inFlight(P0)).isEqualTo(1))
				.then(upstream::complete)
				.verifyComplete();
		assertThat(inUse(lanes)).isZero();
	}

	@Test
	void releasesThePermitOnError() {
		PriorityLanes lanes = oneEach();

		StepVerifier.create(Flux.<Integer>error(new IllegalStateException("boom")).transform(lanes.admit(P0)))
				.verifyErrorMessage("boom");
		assertThat(inUse(lanes)).isZero();
	}

	@Test
	void releasesThePermitAndCancelsUpstreamOnCancel() {
		PriorityLanes lanes = oneEach();
		TestPublisher<Integer> upstream = TestPublisher.create();

		StepVerifier.create(upstream.flux().transform(lanes.admit(P0)))
				.then(() -> upstream.next(1))
				.expectNext(1)
				.thenCancel()
				.verify(Duration.ofSeconds(5));
		upstream.assertCancelled();
		assertThat(inUse(lanes)).isZero();
	}

	@Test
	void demandRequestedBeforeAdmissionReachesTheUpstreamOnceAdmitted() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0));
		LanePermit held = lanes.acquire(P0).block(Duration.ofSeconds(5));
		AtomicReference<Long> requested = new AtomicReference<>(0L);
		Flux<Integer> source = Flux.range(1, 5).doOnRequest(n -> requested.set(n));

		StepVerifier.create(source.transform(lanes.admit(P0)), 0)
				.expectSubscription()
				.thenRequest(3)
				.expectNoEvent(Duration.ofMillis(10))
				.then(() -> {
					assertThat(lanes.queued(P0)).isEqualTo(1);
					held.release();
				})
				.expectNext(1, 2, 3)
				.then(() -> assertThat(requested.get()).isEqualTo(3L))
				.thenRequest(10)
				.expectNext(4, 5)
				.verifyComplete();
		assertThat(inUse(lanes)).isZero();
	}

	@Test
	void refusalReachesTheSubscriberAsAdmissionRejected() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueSize(0), LaneSpec.of(0), LaneSpec.of(0));
		Flux.never().transform(lanes.admit(P0)).subscribe();
		AtomicBoolean subscribed = new AtomicBoolean();

		StepVerifier.create(Flux.just(1).doOnSubscribe(s -> subscribed.set(true)).transform(lanes.admit(P0)))
				.expectErrorSatisfies(e -> assertThat(((AdmissionRejectedException) e).reason())
						.isEqualTo(Reason.QUEUE_FULL))
				.verify(Duration.ofSeconds(5));
		assertThat(subscribed).as("upstream never subscribed").isFalse();
	}

	@Test
	void cancelWhileWaitingLeavesTheQueueAndNeverSubscribesUpstream() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0));
		LanePermit held = lanes.acquire(P0).block(Duration.ofSeconds(5));
		AtomicBoolean subscribed = new AtomicBoolean();

		Flux.just(1).doOnSubscribe(s -> subscribed.set(true)).transform(lanes.admit(P0)).subscribe().dispose();

		assertThat(lanes.queued(P0)).isZero();
		held.release();
		assertThat(subscribed).isFalse();
		assertThat(inUse(lanes)).isZero();
	}

	@Test
	void preemptedStreamHasItsUpstreamCancelledAndFailsRetryably() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(0),
				LaneSpec.of(0));
		TestPublisher<Integer> batchUpstream = TestPublisher.create();

		StepVerifier.create(batchUpstream.flux().transform(lanes.admit(P2)))
				.then(() -> batchUpstream.next(1))
				.expectNext(1)
				.then(() -> Flux.never().transform(lanes.admit(P0)).subscribe())
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PreemptedException.class);
					assertThat(((PreemptedException) e).priority()).isEqualTo(P2);
					assertThat(((PreemptedException) e).lane()).isEqualTo(P0);
				})
				.verify(Duration.ofSeconds(5));
		batchUpstream.assertCancelled();
		assertThat(lanes.inFlight(P0)).isEqualTo(1);
		assertThat(lanes.borrowedInFlight(P2)).isZero();
	}

	@Test
	void admitOnLaneSubscribesABlockingUpstreamOnTheLaneScheduler() {
		PriorityLanes lanes = oneEach();
		Flux<String> blocking = Flux.defer(() -> Flux.just(Thread.currentThread().getName()));

		StepVerifier.create(blocking.transform(lanes.admitOnLane(P2)))
				.assertNext(thread -> assertThat(thread).startsWith("aiguard-p2"))
				.verifyComplete();
		assertThat(inUse(lanes)).isZero();
	}

	@Test
	void waitTimeoutInVirtualTimeFailsTheStream() {
		StepVerifier.withVirtualTime(() -> {
					PriorityLanes lanes = PriorityLanes.builder()
							.lane(P0, LaneSpec.of(1).maxQueueWait(Duration.ofMillis(500)))
							.lane(P1, LaneSpec.of(0))
							.lane(P2, LaneSpec.of(0))
							.build();
					built.add(lanes);
					Flux.never().transform(lanes.admit(P0)).subscribe();
					return Flux.just(1).transform(lanes.admit(P0));
				})
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(499))
				.thenAwait(Duration.ofMillis(1))
				.expectErrorSatisfies(e -> assertThat(((AdmissionRejectedException) e).reason())
						.isEqualTo(Reason.WAIT_TIMEOUT))
				.verify(Duration.ofSeconds(5));
	}

	// ---------------------------------------------------------------- races

	@Test
	void completeRacingCancelReleasesThePermitOnce() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).maxQueueSize(0), LaneSpec.of(0), LaneSpec.of(0));
		for (int i = 0; i < 2_000; i++) {
			Sinks.Empty<Integer> upstream = Sinks.empty();
			TestSubscriber<Integer> ts = TestSubscriber.create();
			upstream.asMono().flux().transform(lanes.admit(P0)).subscribe(ts);
			assertThat(lanes.inFlight(P0)).isEqualTo(1);

			RaceTestUtils.race(upstream::tryEmitEmpty, ts::cancel);

			assertThat(ts.getProtocolErrors()).isEmpty();
			assertThat(inUse(lanes)).isZero();
		}
		TestSubscriber<Integer> last = TestSubscriber.create();
		Flux.<Integer>never().transform(lanes.admit(P0)).subscribe(last);
		assertThat(lanes.inFlight(P0)).as("still exactly one permit").isEqualTo(1);
		StepVerifier.create(Flux.just(1).transform(lanes.admit(P0))).expectError(AdmissionRejectedException.class)
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void grantRacingCancelNeverLeaksThePermit() {
		PriorityLanes lanes = lanes(LaneSpec.of(1), LaneSpec.of(0), LaneSpec.of(0));
		for (int i = 0; i < 2_000; i++) {
			LanePermit held = lanes.acquire(P0).block(Duration.ofSeconds(5));
			TestSubscriber<Integer> ts = TestSubscriber.create();
			Flux.<Integer>never().transform(lanes.admit(P0)).subscribe(ts);

			RaceTestUtils.race(held::release, ts::cancel);

			assertThat(inUse(lanes)).isZero();
			assertThat(lanes.queued(P0)).isZero();
		}
	}

	@Test
	void preemptionRacingTokensEndsOnceAndNeverOverlapsOnNext() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(0),
				LaneSpec.of(0));
		for (int i = 0; i < 1_000; i++) {
			AtomicReference<FluxSink<Integer>> sink = new AtomicReference<>();
			AtomicBoolean upstreamCancelled = new AtomicBoolean();
			Flux<Integer> batch = Flux.<Integer>create(sink::set).doOnCancel(() -> upstreamCancelled.set(true));
			SerialCheck<Integer> downstream = new SerialCheck<>();
			batch.transform(lanes.admit(P2)).subscribe(downstream);
			TestSubscriber<Object> chat = TestSubscriber.create();

			RaceTestUtils.race(() -> {
				for (int n = 0; n < 50; n++) {
					sink.get().next(n);
				}
			}, () -> Flux.never().transform(lanes.admit(P0)).subscribe(chat));

			assertThat(downstream.overlaps.get()).as("signals never overlap").isZero();
			assertThat(downstream.terminals.get()).isEqualTo(1);
			assertThat(downstream.error.get()).isInstanceOf(PreemptedException.class);
			assertThat(upstreamCancelled).isTrue();
			assertThat(lanes.inFlight(P0)).isEqualTo(1);
			chat.cancel();
			assertThat(inUse(lanes)).isZero();
		}
	}

	@Test
	void completionOrErrorRacingPreemptionEndsTheStreamOnceAndFreesThePermitOnce() {
		PriorityLanes lanes = lanes(LaneSpec.of(1).lendToLower(1.0).preemptBorrowers(true), LaneSpec.of(0),
				LaneSpec.of(0));
		for (int i = 0; i < 2_000; i++) {
			Sinks.Empty<Integer> upstream = Sinks.empty();
			SerialCheck<Integer> downstream = new SerialCheck<>();
			upstream.asMono().flux().transform(lanes.admit(P2)).subscribe(downstream);
			TestSubscriber<Object> chat = TestSubscriber.create();
			boolean fail = (i & 1) == 0;

			RaceTestUtils.race(() -> {
				if (fail) {
					upstream.tryEmitError(new IllegalStateException("upstream"));
				}
				else {
					upstream.tryEmitEmpty();
				}
			}, () -> Flux.never().transform(lanes.admit(P0)).subscribe(chat));

			assertThat(downstream.terminals.get()).isEqualTo(1);
			assertThat(downstream.overlaps.get()).isZero();
			assertThat(lanes.inFlight(P0)).as("the P0 arrival runs either way").isEqualTo(1);
			assertThat(lanes.borrowedInFlight(P2)).isZero();
			chat.cancel();
			assertThat(inUse(lanes)).isZero();
		}
	}

	/** Counts terminal signals and catches any two signals delivered at the same time. */
	static final class SerialCheck<T> implements CoreSubscriber<T> {

		final AtomicInteger inside = new AtomicInteger();
		final AtomicInteger overlaps = new AtomicInteger();
		final AtomicInteger terminals = new AtomicInteger();
		final AtomicReference<Throwable> error = new AtomicReference<>();

		@Override
		public void onSubscribe(Subscription s) {
			s.request(Long.MAX_VALUE);
		}

		@Override
		public void onNext(T t) {
			enter();
			Thread.onSpinWait();
			exit();
		}

		@Override
		public void onError(Throwable t) {
			enter();
			terminals.incrementAndGet();
			error.set(t);
			exit();
		}

		@Override
		public void onComplete() {
			enter();
			terminals.incrementAndGet();
			exit();
		}

		private void enter() {
			if (inside.incrementAndGet() != 1) {
				overlaps.incrementAndGet();
			}
		}

		private void exit() {
			inside.decrementAndGet();
		}
	}

	@Test
	void admittedCallsCanBeComposedWithMonoToo() {
		PriorityLanes lanes = oneEach();

		StepVerifier.create(Mono.just("x").flux().transform(lanes.admit(P1)).single())
				.expectNext("x")
				.verifyComplete();
		assertThat(inUse(lanes)).isZero();
	}
}
