package dev.aiguard.stall.watch;

import java.time.Duration;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.stall.watch.StallWatchContentCheckTest.RecordingTerminal;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.Scannable;
import reactor.test.publisher.TestPublisher;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A watch whose upstream is called later than the watch is subscribed (a blocking client, after a
 * hop onto a lane thread): its deadlines start when the upstream is called, the wait before that
 * has its own bound, and a wait that runs out ends the attempt with the upstream never called.
 * Virtual time; the "hop" is the test calling {@link StallWatch#startUpstream()}.
 */
class StallWatchAwaitUpstreamTest {

	static final Duration FIRST_TOKEN = Duration.ofSeconds(2);
	static final Duration WAIT = Duration.ofSeconds(10);
	static final Duration CONFIRM = Duration.ofNanos(StallWatch.CONFIRM_DELAY_NANOS);

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final TestSubscriber<ChatChunk> user = TestSubscriber.create();
	final RecordingTerminal terminal = new RecordingTerminal();
	final TestPublisher<ChatChunk> upstream = TestPublisher.create();

	@AfterEach
	void dispose() {
		vts.dispose();
	}

	/** A watch waiting for its upstream's call; deadlines and the upstream's cancel on the virtual clock. */
	StallWatch<ChatChunk> awaiting(StallSpec spec) {
		StallWatch<ChatChunk> watch = StallWatch.forAttempt(user, spec.scheduler(vts).cancelOn(vts), vts, ChatChunk.INSPECTOR,
				terminal).awaitUpstream(WAIT.toNanos());
		watch.request(Long.MAX_VALUE);
		upstream.flux().subscribe(watch);
		return watch;
	}

	@Test
	void theFirstTokenDeadlineCountsFromTheUpstreamsCall() {
		StallWatch<ChatChunk> watch = awaiting(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN));

		vts.advanceTimeBy(FIRST_TOKEN.multipliedBy(3));
		assertThat(terminal.end).as("waiting for the call is not a stall").isNull();
		assertThat(watch.startUpstream()).isTrue();
		vts.advanceTimeBy(FIRST_TOKEN.minus(CONFIRM));
		assertThat(terminal.end).isNull();
		vts.advanceTimeBy(CONFIRM.multipliedBy(2));

		assertThat(terminal.end).isEqualTo(StallWatch.End.STALLED);
		assertThat(terminal.error).isInstanceOfSatisfying(StreamStalledException.class, e -> {
			assertThat(e.phase()).isEqualTo(StallPhase.FIRST_TOKEN);
			assertThat(e.elapsed()).isEqualTo(FIRST_TOKEN);
		});
		assertThat(watch.upstreamStarted()).isTrue();
	}

	@Test
	void timeToFirstTokenAndDurationCountFromTheCall() {
		StallWatch<ChatChunk> watch = awaiting(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN));
		vts.advanceTimeBy(Duration.ofSeconds(5));
		assertThat(watch.startUpstream()).isTrue();
		vts.advanceTimeBy(Duration.ofMillis(300));
		upstream.next(ChatChunk.token("a"));
		vts.advanceTimeBy(Duration.ofMillis(200));
		upstream.next(ChatChunk.done()).complete();

		assertThat(terminal.end).isEqualTo(StallWatch.End.COMPLETED);
		assertThat(watch.timeToFirstTokenNanos()).isEqualTo(Duration.ofMillis(300).toNanos());
		assertThat(watch.durationNanos()).isEqualTo(Duration.ofMillis(500).toNanos());
		assertThat(watch.startNanos()).isEqualTo(Duration.ofSeconds(5).toNanos());
	}

	@Test
	void theMaxDurationCountsFromTheCall() {
		Duration max = Duration.ofSeconds(3);
		StallWatch<ChatChunk> watch = awaiting(StallSpec.defaults().maxDuration(max));
		vts.advanceTimeBy(Duration.ofSeconds(7));
		assertThat(terminal.end).isNull();
		assertThat(watch.startUpstream()).isTrue();
		upstream.next(ChatChunk.token("a"));
		vts.advanceTimeBy(max.minus(CONFIRM));
		assertThat(terminal.end).isNull();
		vts.advanceTimeBy(CONFIRM.multipliedBy(2));

		assertThat(terminal.end).isEqualTo(StallWatch.End.STALLED);
		assertThat(((StreamStalledException) terminal.error).phase()).isEqualTo(StallPhase.MAX_DURATION);
	}

	@Test
	void aWaitThatRunsOutEndsTheAttemptAndTheUpstreamIsNeverCalled() {
		StallWatch<ChatChunk> watch = awaiting(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN));

		vts.advanceTimeBy(WAIT.minus(CONFIRM));
		assertThat(terminal.end).isNull();
		vts.advanceTimeBy(CONFIRM.multipliedBy(2));

		assertThat(terminal.end).isEqualTo(StallWatch.End.STALLED);
		assertThat(watch.upstreamStarted()).as("the upstream never saw the attempt").isFalse();
		assertThat(watch.startUpstream()).as("a late hop").isFalse();
		upstream.assertWasCancelled();
	}

	@Test
	void aWaitWithoutDeadlinesStillEndsAtItsBound() {
		StallWatch<ChatChunk> watch = awaiting(StallSpec.defaults());
		vts.advanceTimeBy(WAIT.plus(CONFIRM));

		assertThat(terminal.end).isEqualTo(StallWatch.End.STALLED);
		assertThat(watch.upstreamStarted()).isFalse();
	}

	@Test
	void anAbortedOrCancelledWatchRefusesTheCallAndScansCancelledAtOnce() {
		StallWatch<ChatChunk> aborted = awaiting(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN));
		aborted.abort(new IllegalStateException("preempted"));
		assertThat(Scannable.from(aborted).scan(Scannable.Attr.CANCELLED)).as("before the abort is confirmed").isTrue();
		assertThat(aborted.startUpstream()).isFalse();
		vts.advanceTimeBy(CONFIRM);
		assertThat(terminal.end).isEqualTo(StallWatch.End.ERROR);

		StallWatch<ChatChunk> cancelled = StallWatch.forAttempt(TestSubscriber.create(),
				StallSpec.defaults().scheduler(vts), vts, ChatChunk.INSPECTOR, new RecordingTerminal())
				.awaitUpstream(WAIT.toNanos());
		TestPublisher.<ChatChunk>create().flux().subscribe(cancelled);
		cancelled.cancel();
		assertThat(cancelled.startUpstream()).isFalse();
	}

	@Test
	void aWatchCalledAtSubscriptionTimesFromItsSubscription() {
		StallWatch<ChatChunk> watch = StallWatch.forAttempt(user, StallSpec.defaults().scheduler(vts), vts,
				ChatChunk.INSPECTOR, terminal);
		vts.advanceTimeBy(Duration.ofSeconds(4));
		upstream.flux().subscribe(watch);

		assertThat(watch.upstreamStarted()).isTrue();
		assertThat(watch.startNanos()).isEqualTo(Duration.ofSeconds(4).toNanos());
	}

	@Test
	void theWaitsBoundMustBePositive() {
		StallWatch<ChatChunk> watch = StallWatch.forAttempt(user, StallSpec.defaults(), vts, ChatChunk.INSPECTOR,
				terminal);
		assertThatThrownBy(() -> watch.awaitUpstream(0L)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("maxWaitNanos");
	}
}
