package dev.aiguard.stall;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.testing.TrackingScheduler;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Scheduler;
import reactor.test.StepVerifier;
import reactor.test.publisher.TestPublisher;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import dev.aiguard.core.StallPhase;

class StallTest {

	static final ChunkInspector<ChatChunk> CHAT = ChatChunk.inspector();

	static StallSpec spec() {
		return StallSpec.defaults();
	}

	static Flux<ChatChunk> tokens(int n, Duration every) {
		return Flux.range(0, n).delayElements(every).map(i -> ChatChunk.token("t" + i));
	}

	@Test
	void firstTokenDeadlineFailsSilentStream() {
		StepVerifier.withVirtualTime(() -> Flux.<ChatChunk>never()
						.transform(Stall.detect(spec().firstTokenTimeout(Duration.ofSeconds(10)), CHAT)))
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(9_999))
				// decided at 10 s, confirmed one millisecond later
				.thenAwait(Duration.ofMillis(2))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(StreamStalledException.class);
					StreamStalledException s = (StreamStalledException) e;
					assertThat(s.phase()).isEqualTo(StallPhase.FIRST_TOKEN);
					assertThat(s.tokensReceived()).isZero();
					assertThat(s.elapsed()).isEqualTo(Duration.ofSeconds(10));
				})
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void heartbeatsAreNotTokens() {
		StepVerifier.withVirtualTime(() -> Flux.interval(Duration.ofSeconds(1)).map(i -> ChatChunk.keepAlive())
						.transform(Stall.detect(spec().firstTokenTimeout(Duration.ofSeconds(5)), CHAT)))
				.expectSubscription()
				.thenAwait(Duration.ofMillis(5_001))
				.thenConsumeWhile(ChatChunk::heartbeat)
				.expectErrorSatisfies(e -> assertThat(((StreamStalledException) e).phase())
						.isEqualTo(StallPhase.FIRST_TOKEN))
				.verify(Duration.ofSeconds(5));
	}

	/** A timer whose every delayed task runs {@code lag} late, as on a loaded machine. */
	static final class LateTimer implements Scheduler {

		final Scheduler timer;
		final long lagNanos;

		LateTimer(Scheduler timer, Duration lag) {
			this.timer = timer;
			this.lagNanos = lag.toNanos();
		}

		@Override
		public Disposable schedule(Runnable task) {
			return timer.schedule(task);
		}

		@Override
		public Disposable schedule(Runnable task, long delay, TimeUnit unit) {
			return timer.schedule(task, unit.toNanos(delay) + lagNanos, TimeUnit.NANOSECONDS);
		}

		@Override
		public long now(TimeUnit unit) {
			return timer.now(unit);
		}

		@Override
		public Worker createWorker() {
			return timer.createWorker();
		}
	}

	@Test
	void lateTimerWakeUpsDoNotAddUpOverTheIdleChecks() {
		VirtualTimeScheduler clock = VirtualTimeScheduler.create();
		Duration lag = Duration.ofMillis(30);
		TestPublisher<ChatChunk> upstream = TestPublisher.create();
		AtomicReference<Throwable> stall = new AtomicReference<>();
		upstream.flux()
			.transform(Stall.detect(spec().idleTimeout(Duration.ofMillis(400)).idleChecks(10)
				.scheduler(new LateTimer(clock, lag)), CHAT))
			.subscribe(chunk -> { }, stall::set);
		upstream.next(ChatChunk.token("only"));
		clock.advanceTimeBy(Duration.ofMillis(399));
		assertThat(stall.get()).as("never before the idle timeout").isNull();
		long waited = 399;
		while (stall.get() == null && waited < 2_000) {
			clock.advanceTimeBy(Duration.ofMillis(1));
			waited++;
		}
		// ten checks 30 ms late each would add 300 ms; measured from the last activity, the lateness
		// counts at most for the check that saw the token, the one on the deadline and the confirmation
		assertThat(stall.get()).isInstanceOf(StreamStalledException.class);
		assertThat(waited).as("stall signalled after (ms)").isLessThanOrEqualTo(400 + 40 + 3 * 30 + 1);
	}

	@Test
	void idleDeadlineFailsStreamThatStopsPartway() {
		StepVerifier.withVirtualTime(() -> tokens(3, Duration.ofSeconds(1)).concatWith(Flux.never())
						.transform(Stall.detect(spec().firstTokenTimeout(Duration.ofSeconds(5))
								.idleTimeout(Duration.ofSeconds(4)), CHAT)))
				.expectSubscription()
				.thenAwait(Duration.ofSeconds(3))
				.expectNextCount(3)
				// last token at t=3s: never before 7s, at the latest 4s + 1s (one check period) later
				.expectNoEvent(Duration.ofSeconds(4).minusMillis(1))
				.thenAwait(Duration.ofSeconds(1).plusMillis(2))
				.expectErrorSatisfies(e -> {
					StreamStalledException s = (StreamStalledException) e;
					assertThat(s.phase()).isEqualTo(StallPhase.IDLE);
					assertThat(s.tokensReceived()).isEqualTo(3);
					assertThat(s.elapsed()).isBetween(Duration.ofSeconds(7), Duration.ofSeconds(8));
				})
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void steadyTokensNeverTripTheIdleDeadline() {
		StepVerifier.withVirtualTime(() -> tokens(100, Duration.ofSeconds(3)).concatWith(Flux.just(ChatChunk.done()))
						.transform(Stall.detect(spec().idleTimeout(Duration.ofSeconds(4)), CHAT)))
				.expectSubscription()
				.thenAwait(Duration.ofSeconds(300))
				.expectNextCount(101)
				.verifyComplete();
	}

	@Test
	void idleAppliesFromSubscriptionWhenNoFirstTokenDeadline() {
		StepVerifier.withVirtualTime(() -> Flux.<ChatChunk>never()
						.transform(Stall.detect(spec().idleTimeout(Duration.ofSeconds(4)), CHAT)))
				.expectSubscription()
				.expectNoEvent(Duration.ofSeconds(4).minusMillis(1))
				.thenAwait(Duration.ofSeconds(1).plusMillis(2))
				.expectErrorSatisfies(e -> assertThat(((StreamStalledException) e).phase()).isEqualTo(StallPhase.IDLE))
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void heartbeatsDoNotExtendIdleByDefault() {
		StepVerifier.withVirtualTime(() -> Flux.just(ChatChunk.token("a"))
						.concatWith(Flux.interval(Duration.ofSeconds(1)).map(i -> ChatChunk.keepAlive()))
						.transform(Stall.detect(spec().idleTimeout(Duration.ofSeconds(4)), CHAT)))
				.expectSubscription()
				.expectNext(ChatChunk.token("a"))
				.thenAwait(Duration.ofSeconds(6))
				.thenConsumeWhile(ChatChunk::heartbeat)
				.expectError(StreamStalledException.class)
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void heartbeatsExtendIdleWhenSwitchedOn() {
		StepVerifier.withVirtualTime(() -> Flux.just(ChatChunk.token("a"))
						.concatWith(Flux.interval(Duration.ofSeconds(1)).map(i -> ChatChunk.keepAlive()).take(60))
						.concatWith(Flux.just(ChatChunk.token("b"), ChatChunk.done()))
						.transform(Stall.detect(spec().idleTimeout(Duration.ofSeconds(4)).heartbeatsExtendIdle(true),
								CHAT)))
				.expectSubscription()
				.thenAwait(Duration.ofSeconds(61))
				.expectNextCount(63)
				.verifyComplete();
	}

	@Test
	void noDemandIsNotAStall() {
		StepVerifier.withVirtualTime(() -> Flux.range(0, 5).map(i -> ChatChunk.token("t" + i))
						.concatWith(Flux.just(ChatChunk.done()))
						.transform(Stall.detect(spec().firstTokenTimeout(Duration.ofSeconds(2))
								.idleTimeout(Duration.ofSeconds(2)), CHAT)), 0)
				.expectSubscription()
				.expectNoEvent(Duration.ofMinutes(10))
				.thenRequest(1)
				.expectNext(ChatChunk.token("t0"))
				.expectNoEvent(Duration.ofMinutes(10))
				.thenRequest(5)
				.expectNextCount(5)
				.verifyComplete();
	}

	@Test
	void maxDurationBoundsAStreamThatKeepsTalking() {
		StepVerifier.withVirtualTime(() -> Flux.interval(Duration.ofSeconds(1)).map(i -> ChatChunk.token("t"))
						.transform(Stall.detect(spec().idleTimeout(Duration.ofSeconds(4))
								.maxDuration(Duration.ofSeconds(30)), CHAT)))
				.expectSubscription()
				.thenAwait(Duration.ofSeconds(30).plusMillis(1))
				// the thirtieth token arrives while the stall is being confirmed; max duration stands
				.expectNextCount(30)
				.expectErrorSatisfies(e -> {
					StreamStalledException s = (StreamStalledException) e;
					assertThat(s.phase()).isEqualTo(StallPhase.MAX_DURATION);
					assertThat(s.elapsed()).isEqualTo(Duration.ofSeconds(30));
				})
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void stallCancelsUpstreamAndDisposesTheTimer() {
		TrackingScheduler timer = new TrackingScheduler();
		TestPublisher<ChatChunk> upstream = TestPublisher.create();
		StepVerifier.create(upstream.flux().transform(Stall.detect(spec().scheduler(timer).cancelOn(timer)
						.firstTokenTimeout(Duration.ofSeconds(1)).idleTimeout(Duration.ofSeconds(1))
						.maxDuration(Duration.ofSeconds(10)), CHAT)))
				.expectSubscription()
				.then(() -> upstream.next(ChatChunk.token("x")))
				.expectNextCount(1)
				.then(() -> timer.advance(Duration.ofSeconds(3)))
				.expectError(StreamStalledException.class)
				.verify(Duration.ofSeconds(5));
		upstream.assertWasCancelled();
		assertThat(timer.pending()).isZero();
	}

	@Test
	void timerIsDisposedOnCompleteErrorAndCancel() {
		StallSpec base = spec().firstTokenTimeout(Duration.ofSeconds(1)).idleTimeout(Duration.ofSeconds(1))
				.maxDuration(Duration.ofSeconds(10));

		TrackingScheduler t1 = new TrackingScheduler();
		StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.done())
						.transform(Stall.detect(base.scheduler(t1), CHAT)))
				.expectNextCount(2)
				.verifyComplete();
		assertThat(t1.pending()).isZero();

		TrackingScheduler t2 = new TrackingScheduler();
		StepVerifier.create(Flux.<ChatChunk>error(new IllegalStateException("boom"))
						.transform(Stall.detect(base.scheduler(t2), CHAT)))
				.verifyErrorMessage("boom");
		assertThat(t2.pending()).isZero();

		TrackingScheduler t3 = new TrackingScheduler();
		TestPublisher<ChatChunk> upstream = TestPublisher.create();
		StepVerifier.create(upstream.flux().transform(Stall.detect(base.scheduler(t3), CHAT)))
				.expectSubscription()
				.thenCancel()
				.verify(Duration.ofSeconds(5));
		upstream.assertWasCancelled();
		assertThat(t3.pending()).isZero();
	}

	@Test
	void timerWakesAFewTimesPerIdleTimeoutNotPerToken() {
		TrackingScheduler timer = new TrackingScheduler();
		StepVerifier.create(Flux.interval(Duration.ofMillis(10), timer.virtualTime()).take(1000)
						.map(i -> ChatChunk.token("t"))
						.concatWith(Flux.just(ChatChunk.done()))
						.transform(Stall.detect(spec().scheduler(timer).idleTimeout(Duration.ofSeconds(4)), CHAT)))
				.expectSubscription()
				.then(() -> timer.advance(Duration.ofSeconds(11)))
				.expectNextCount(1001)
				.verifyComplete();
		// 10 s of streaming with a check every second: about ten wake-ups, not a thousand
		assertThat(timer.scheduled()).isBetween(10, 13);
		assertThat(timer.pending()).isZero();
	}

	@Test
	void completionWithoutTerminalMarkerIsIncomplete() {
		StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.token("b"))
						.transform(Stall.detect(spec(), CHAT)))
				.expectNextCount(2)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(IncompleteStreamException.class);
					assertThat(((IncompleteStreamException) e).tokensReceived()).isEqualTo(2);
				})
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void finishReasonCountsAsComplete() {
		StepVerifier.create(Flux.just(ChatChunk.token("a"), ChatChunk.finish("stop"))
						.transform(Stall.detect(spec(), CHAT)))
				.expectNextCount(2)
				.verifyComplete();
	}

	@Test
	void terminalCheckCanBeSwitchedOff() {
		StepVerifier.create(Flux.just(ChatChunk.token("a")).transform(Stall.detect(spec().requireTerminal(false), CHAT)))
				.expectNextCount(1)
				.verifyComplete();
	}

	@Test
	void honoursZeroDemandAndPartialRequests() {
		StepVerifier.create(Flux.range(0, 10).map(i -> ChatChunk.token("t" + i)).concatWith(Flux.just(ChatChunk.done()))
						.transform(Stall.detect(spec().idleTimeout(Duration.ofSeconds(30)), CHAT)), 0)
				.expectSubscription()
				.expectNoEvent(Duration.ofMillis(10))
				.thenRequest(3)
				.expectNextCount(3)
				.thenRequest(Long.MAX_VALUE)
				.expectNextCount(8)
				.verifyComplete();
	}

	@Test
	void upstreamErrorsPassThroughUntouched() {
		IllegalStateException boom = new IllegalStateException("boom");
		StepVerifier.create(Flux.just(ChatChunk.token("a")).concatWith(Flux.error(boom))
						.transform(Stall.detect(spec().idleTimeout(Duration.ofSeconds(1)), CHAT)))
				.expectNextCount(1)
				.expectErrorSatisfies(e -> assertThat(e).isSameAs(boom))
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void oneOperatorInstanceServesManySubscriptions() {
		AtomicBoolean first = new AtomicBoolean(true);
		Flux<ChatChunk> guarded = Flux.defer(() -> first.getAndSet(false)
						? Flux.just(ChatChunk.token("a"))
						: Flux.just(ChatChunk.token("b"), ChatChunk.done()))
				.transform(Stall.detect(spec(), CHAT));
		StepVerifier.create(guarded).expectNextCount(1).expectError(IncompleteStreamException.class).verify();
		StepVerifier.create(guarded).expectNextCount(2).verifyComplete();
	}

	@Test
	void specRejectsNonPositiveDurations() {
		assertThatThrownBy(() -> spec().firstTokenTimeout(Duration.ZERO))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("firstTokenTimeout")
				.hasMessageContaining("PT0S");
		assertThatThrownBy(() -> spec().idleTimeout(Duration.ofSeconds(-1)))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("idleTimeout");
		assertThatThrownBy(() -> spec().maxDuration(Duration.ofMillis(-5)))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("maxDuration");
		assertThatThrownBy(() -> spec().idleChecks(0))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("idleChecks")
				.hasMessageContaining("0");
	}

	@Test
	void specIsCopyOnWrite() {
		StallSpec template = spec().idleTimeout(Duration.ofSeconds(4));
		StallSpec derived = template.maxDuration(Duration.ofMinutes(1));
		assertThat(template.maxDuration()).isNull();
		assertThat(derived.idleTimeout()).isEqualTo(Duration.ofSeconds(4));
		assertThat(derived.maxDuration()).isEqualTo(Duration.ofMinutes(1));
	}
}
