package dev.aiguard.stall.watch;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.stall.StallSpec;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.scheduler.VirtualTimeScheduler;
import reactor.test.subscriber.TestSubscriber;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The watch's content check: it sees each content chunk right after the subscriber did, inside the
 * chunk's delivery, and what it throws ends the attempt like a subscriber's throw.
 */
class StallWatchContentCheckTest {

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final StallSpec spec = StallSpec.defaults().idleTimeout(Duration.ofSeconds(5)).scheduler(vts);

	/** Records the end the watch reports. */
	static final class RecordingTerminal implements StallWatch.Terminal<ChatChunk> {

		volatile StallWatch.End end;
		volatile Throwable error;
		volatile long tokensAtEnd = -1L;
		volatile long emittedAtEnd = -1L;

		@Override
		public void onEnd(StallWatch<ChatChunk> watch, StallWatch.End e, Throwable failure) {
			end = e;
			error = failure;
			tokensAtEnd = watch.tokens();
			emittedAtEnd = watch.emitted();
		}
	}

	@Test
	void theCheckSeesOnlyContentChunksEachAfterTheSubscriber() {
		List<String> seen = new CopyOnWriteArrayList<>();
		TestSubscriber<ChatChunk> user = TestSubscriber.builder().build();
		RecordingTerminal terminal = new RecordingTerminal();
		// the check reads how many chunks the subscriber already has: each content chunk must be among them
		StallWatch<ChatChunk> watch = StallWatch.forAttempt(user, spec, vts, ChatChunk.INSPECTOR, terminal,
				chunk -> seen.add(chunk.text() + "@" + user.getReceivedOnNext().size()));
		watch.request(Long.MAX_VALUE);
		Flux.just(ChatChunk.token("Hel"), ChatChunk.keepAlive(), ChatChunk.token("lo"), ChatChunk.finish("stop"),
				ChatChunk.done()).subscribe(watch);

		assertThat(seen).containsExactly("Hel@1", "lo@3");
		assertThat(user.getReceivedOnNext()).hasSize(5);
		assertThat(terminal.end).isEqualTo(StallWatch.End.COMPLETED);
	}

	@Test
	void whatTheCheckThrowsEndsTheAttemptWithTheChunkDeliveredAndCancelsTheUpstream() {
		AtomicBoolean cancelled = new AtomicBoolean();
		IllegalStateException cut = new IllegalStateException("loop");
		TestSubscriber<ChatChunk> user = TestSubscriber.builder().build();
		RecordingTerminal terminal = new RecordingTerminal();
		StallWatch<ChatChunk> watch = StallWatch.forAttempt(user, spec, vts, ChatChunk.INSPECTOR, terminal, chunk -> {
			if (chunk.text().equals("b")) {
				throw cut;
			}
		});
		watch.request(Long.MAX_VALUE);
		Flux.just("a", "b", "c", "d").map(ChatChunk::token).doOnCancel(() -> cancelled.set(true)).subscribe(watch);

		assertThat(user.getReceivedOnNext()).extracting(ChatChunk::text).containsExactly("a", "b");
		assertThat(terminal.end).isEqualTo(StallWatch.End.ERROR);
		assertThat(terminal.error).isSameAs(cut);
		assertThat(terminal.tokensAtEnd).as("the cut chunk counts as content").isEqualTo(2L);
		assertThat(terminal.emittedAtEnd).as("and as delivered").isEqualTo(2L);
		assertThat(cancelled).isTrue();
	}
}
