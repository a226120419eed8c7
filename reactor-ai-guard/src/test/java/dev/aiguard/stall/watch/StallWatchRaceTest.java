package dev.aiguard.stall.watch;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.testing.ManualClock;
import dev.aiguard.testing.TrackingScheduler;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.publisher.Hooks;
import reactor.core.scheduler.Schedulers;
import reactor.test.subscriber.TestSubscriber;
import reactor.test.util.RaceTestUtils;

import static org.assertj.core.api.Assertions.assertThat;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.Stall;
import dev.aiguard.stall.StreamStalledException;

/**
 * The confirmation of a decided stall races every other signal: exactly one terminal signal must
 * reach the subscriber, the end is reported once, no chunk is delivered after a stall, and no
 * stall is signalled after content that arrived during the confirmation.
 *
 * <p>Each race repeats about as often as it takes, on a loaded 2-core machine, for the
 * interleaving under test to come up a few times per run (rates measured by timing both sides
 * over thousands of rounds); where that interleaving is rare, the count keeps its earlier value.
 */
class StallWatchRaceTest {

	static final class CountingTerminal implements StallWatch.Terminal<ChatChunk> {

		final AtomicInteger ends = new AtomicInteger();
		volatile StallWatch.End end;

		@Override
		public void onEnd(StallWatch<ChatChunk> watch, StallWatch.End e, Throwable error) {
			ends.incrementAndGet();
			end = e;
			StallWatch.<ChatChunk>toSubscriber().onEnd(watch, e, error);
		}
	}

	static final class CountingSubscription implements Subscription {

		final AtomicInteger cancels = new AtomicInteger();

		@Override
		public void request(long n) {
		}

		@Override
		public void cancel() {
			cancels.incrementAndGet();
		}
	}

	/** A watch whose first-token deadline has already passed, so {@code run()} wants to stall it. */
	static StallWatch<ChatChunk> overdue(TestSubscriber<ChatChunk> ts, CountingTerminal terminal,
			Subscription upstream) {
		ManualClock clock = new ManualClock();
		StallWatch<ChatChunk> w = new StallWatch<>(ts,
				StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1)).requireTerminal(false)
						.cancelOn(Schedulers.immediate()), clock,
				ChatChunk.inspector(), terminal, true);
		w.onSubscribe(upstream);
		clock.set(TimeUnit.SECONDS.toNanos(2));
		// decide: the gate closes and a confirmation is due (the manual clock never runs it itself)
		w.run();
		assertThat(w.gate).isNotZero();
		return w;
	}

	// the stall confirmation (run) races a chunk on another thread; the two overlap in ~6 % of rounds
	@RepeatedTest(50)
	void confirmationVersusNext() {
		TestSubscriber<ChatChunk> ts = TestSubscriber.create();
		CountingTerminal terminal = new CountingTerminal();
		CountingSubscription up = new CountingSubscription();
		StallWatch<ChatChunk> w = overdue(ts, terminal, up);

		RaceTestUtils.race(Schedulers.boundedElastic(), w::run, () -> w.onNext(ChatChunk.token("a")));
		w.onComplete();

		assertThat(terminal.ends).hasValue(1);
		assertThat(ts.getProtocolErrors()).isEmpty();
		if (terminal.end == StallWatch.End.STALLED) {
			assertThat(ts.getReceivedOnNext()).isEmpty();
			assertThat(up.cancels).hasValue(1);
			assertThat(ts.expectTerminalError()).isInstanceOf(StreamStalledException.class);
		}
		else {
			assertThat(ts.getReceivedOnNext()).hasSize(1);
			assertThat(ts.isTerminatedComplete()).isTrue();
		}
	}

	// the stall confirmation races the upstream's onComplete; the two overlap in ~10 % of rounds
	@RepeatedTest(50)
	void confirmationVersusComplete() {
		TestSubscriber<ChatChunk> ts = TestSubscriber.create();
		CountingTerminal terminal = new CountingTerminal();
		StallWatch<ChatChunk> w = overdue(ts, terminal, new CountingSubscription());

		RaceTestUtils.race(Schedulers.boundedElastic(), w::run, w::onComplete);

		assertThat(terminal.ends).hasValue(1);
		assertThat(ts.getProtocolErrors()).isEmpty();
		assertThat(ts.isTerminated()).isTrue();
	}

	// the stall confirmation, an upstream error and a cancel race on three threads; the error wins ~10 % of rounds
	@RepeatedTest(50)
	void confirmationVersusErrorVersusCancel() {
		AtomicInteger dropped = new AtomicInteger();
		Hooks.onErrorDropped(e -> {
			if ("x".equals(e.getMessage())) {
				dropped.incrementAndGet();
			}
		});
		TestSubscriber<ChatChunk> ts = TestSubscriber.create();
		CountingTerminal terminal = new CountingTerminal();
		StallWatch<ChatChunk> w = overdue(ts, terminal, new CountingSubscription());

		RaceTestUtils.race(Schedulers.boundedElastic(), w::run, () -> w.onError(new IllegalStateException("x")),
				w::cancel);
		Hooks.resetOnErrorDropped();

		assertThat(terminal.ends).hasValue(1);
		assertThat(ts.getProtocolErrors()).isEmpty();
		// the upstream error is either delivered or dropped, never lost silently and never both
		boolean delivered = ts.isTerminatedError() && "x".equals(ts.expectTerminalError().getMessage());
		assertThat(delivered ? 1 : 0).isEqualTo(1 - dropped.get());
	}

	// the abort's confirmation races a chunk; the chunk landing mid-confirmation is rare (under 1 % of rounds)
	@RepeatedTest(100)
	void abortVersusNextDeliversOneErrorAndNoChunkAfterIt() {
		TestSubscriber<ChatChunk> ts = TestSubscriber.create();
		CountingTerminal terminal = new CountingTerminal();
		CountingSubscription up = new CountingSubscription();
		ManualClock clock = new ManualClock();
		StallWatch<ChatChunk> w = new StallWatch<>(ts, StallSpec.defaults().cancelOn(Schedulers.immediate()), clock,
				ChatChunk.inspector(), terminal, true);
		w.onSubscribe(up);
		IllegalStateException preempted = new IllegalStateException("preempted");
		w.abort(preempted);
		RaceTestUtils.race(Schedulers.boundedElastic(), w::confirmAbort, () -> w.onNext(ChatChunk.token("a")));
		// the manual clock does not run rescheduled confirmations: confirm again until it wins
		while (terminal.ends.get() == 0) {
			w.confirmAbort();
		}
		w.onNext(ChatChunk.token("late"));

		assertThat(terminal.ends).hasValue(1);
		assertThat(ts.getProtocolErrors()).isEmpty();
		assertThat(ts.expectTerminalError()).isSameAs(preempted);
		assertThat(ts.getReceivedOnNext()).extracting(ChatChunk::text).doesNotContain("late");
		assertThat(up.cancels).hasValue(1);
	}

	// onSubscribe arming the deadline races cancel; both sides cancelling upstream shows up in ~1 % of rounds
	@RepeatedTest(500)
	void cancelVersusArmingLeavesNoTimerBehind() {
		TrackingScheduler timer = new TrackingScheduler();
		TestSubscriber<ChatChunk> ts = TestSubscriber.create();
		CountingTerminal terminal = new CountingTerminal();
		CountingSubscription up = new CountingSubscription();
		StallWatch<ChatChunk> w = new StallWatch<>(ts, StallSpec.defaults().idleTimeout(Duration.ofSeconds(5))
				.maxDuration(Duration.ofMinutes(1)), timer, ChatChunk.inspector(), terminal, true);

		// onSubscribe arms the deadline task while cancel ends the watch: end() skips the swap when it
		// sees no task, so schedule() must notice the end and dispose what it installed
		RaceTestUtils.race(Schedulers.boundedElastic(), () -> w.onSubscribe(up), w::cancel);

		assertThat(terminal.ends).hasValue(1);
		assertThat(timer.pending()).isZero();
		// both sides may cancel the upstream (cancel is idempotent); what matters is that one always does
		assertThat(up.cancels.get()).isBetween(1, 2);
	}

	// abort (which schedules a confirmation) races cancel; truly overlapping rounds are rare (~0.2 %)
	@RepeatedTest(300)
	void abortVersusCancelLeavesNoConfirmationBehind() {
		TrackingScheduler timer = new TrackingScheduler();
		TestSubscriber<ChatChunk> ts = TestSubscriber.create();
		CountingTerminal terminal = new CountingTerminal();
		StallWatch<ChatChunk> w = new StallWatch<>(ts, StallSpec.defaults(), timer, ChatChunk.inspector(),
				terminal, true);
		w.onSubscribe(new CountingSubscription());

		RaceTestUtils.race(Schedulers.boundedElastic(), () -> w.abort(new IllegalStateException("preempted")),
				w::cancel);

		assertThat(terminal.ends).hasValue(1);
		assertThat(terminal.end).isEqualTo(StallWatch.End.CANCELLED);
		assertThat(timer.pending()).isZero();
	}

	@Test
	void aChunkAfterTheUpstreamCompletedIsDropped() {
		AtomicInteger dropped = new AtomicInteger();
		Hooks.onNextDropped(c -> dropped.incrementAndGet());
		try {
			TestSubscriber<ChatChunk> ts = TestSubscriber.create();
			CountingTerminal terminal = new CountingTerminal();
			StallWatch<ChatChunk> w = new StallWatch<>(ts, StallSpec.defaults(), new ManualClock(),
					ChatChunk.inspector(), terminal, true);
			w.onSubscribe(new CountingSubscription());
			w.onNext(ChatChunk.token("a"));
			w.onNext(ChatChunk.done());
			w.onComplete();
			// a misbehaving upstream: the chunk must not reach a subscriber that saw onComplete
			w.onNext(ChatChunk.token("late"));

			assertThat(ts.getReceivedOnNext()).extracting(ChatChunk::text).containsExactly("a", "");
			assertThat(ts.isTerminatedComplete()).isTrue();
			assertThat(dropped).hasValue(1);
			assertThat(terminal.ends).hasValue(1);
		}
		finally {
			Hooks.resetOnNextDropped();
		}
	}
}
