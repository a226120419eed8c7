package dev.aiguard;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.core.Outcome;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import dev.aiguard.validation.DegenerateOutputException;
import dev.aiguard.validation.InvalidOutputException;
import dev.aiguard.validation.RepetitionDetector;
import dev.aiguard.validation.StreamingValidator;
import dev.aiguard.validation.Validators;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How chunks reach the validation: fed by the watch when nothing else sits between it and the
 * subscriber, by the tap when an answer is recorded or transcribed; either way the validators see
 * the same chunks and cut at the same one. All time is virtual.
 */
class GuardValidationPathTest {

	static final Duration BACKOFF = Duration.ofMillis(100);
	static final ChatRequest ASK = ChatRequest.of("m", List.of(ChatMessage.user("tell me")));

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	final RecordingMetrics metrics = new RecordingMetrics();

	GuardPolicy.Builder policy() {
		return Policies.onVirtualTime("it-validation-path", vts, reports, metrics);
	}

	static Flux<ChatChunk> answer(String... tokens) {
		return Flux.fromArray(tokens).map(ChatChunk::token)
				.concatWith(Flux.just(ChatChunk.finish("stop"), ChatChunk.done()));
	}

	/** Keeps what its watch was given, and cuts at {@code cutAt} (when not null). */
	static final class Recorder implements StreamingValidator {

		final List<String> texts = new CopyOnWriteArrayList<>();
		final AtomicInteger resets = new AtomicInteger();
		@Nullable
		final String cutAt;

		Recorder(@Nullable String cutAt) {
			this.cutAt = cutAt;
		}

		@Override
		public String name() {
			return "recorder";
		}

		@Override
		public Watch newWatch() {
			return new Watch() {
				@Override
				public void reset() {
					resets.incrementAndGet();
				}

				@Override
				@Nullable
				public InvalidOutputException onText(String text) {
					texts.add(text);
					return text.equals(cutAt) ? new InvalidOutputException("recorder", "saw " + text, false) : null;
				}
			};
		}
	}

	@Test
	void anAnswerThatStartsBlankAndThenSaysSomethingPasses() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).build());
		StepVerifier.withVirtualTime(() -> answer(" ", "\n", "Hi", " ").transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(6)
				.verifyComplete();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.SUCCESS);
	}

	@Test
	void anAnswerOfWhitespaceChunksIsRejectedWithNothingOfItDelivered() {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).build());
		StepVerifier.withVirtualTime(() -> answer(" ", "\n", "\t").transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(2) // its finish and terminal chunks; the whitespace is held, then dropped
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(InvalidOutputException.class)
						.hasMessageContaining("no content"))
				.verify();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.INVALID);
	}

	@Test
	void aStreamingWatchSeesEveryNonEmptyTextAndNoToolCallOnlyChunk() {
		Recorder recorder = new Recorder(null);
		ChatChunk call = new ChatChunk("", null, null, null, List.of(new ToolCallDelta(0, "c1", "lookup", "{}")), false,
				false);
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).validateStreaming(recorder)
				.build());
		StepVerifier.withVirtualTime(() -> Flux.just(ChatChunk.token("Let me"), call, ChatChunk.token(" look"),
						ChatChunk.keepAlive(), ChatChunk.finish("tool_calls"), ChatChunk.done()).transform(guard), () -> vts,
						Long.MAX_VALUE)
				.expectNextCount(6)
				.verifyComplete();
		assertThat(recorder.texts).containsExactly("Let me", " look");
	}

	@Test
	void severalStreamingValidatorsEachSeeTheChunksAndTheFirstToCutWins() {
		Recorder first = new Recorder("stop");
		Recorder second = new Recorder("stop");
		Recorder third = new Recorder("more");
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validateStreaming(first, second, third).build());
		StepVerifier.withVirtualTime(() -> answer("go", "on", "stop", "more").transform(guard), () -> vts,
						Long.MAX_VALUE)
				.expectNextCount(3)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(PartialStreamException.class);
					assertThat(e.getCause()).hasMessageContaining("saw stop");
				})
				.verify();
		assertThat(first.texts).containsExactly("go", "on", "stop");
		assertThat(second.texts).as("after the first cut, the others are not asked").containsExactly("go", "on");
		assertThat(third.texts).containsExactly("go", "on");
	}

	@Test
	void eachRetriedAttemptStartsTheStreamingWatchesAfresh() {
		Recorder recorder = new Recorder(null);
		AtomicInteger calls = new AtomicInteger();
		AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.emptyAnswer()).validateStreaming(recorder)
				.retry(RetryRules.backoff(3, BACKOFF).jitter(0.0)).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> calls.getAndIncrement() == 0 ? answer() : answer("ok")),
						() -> vts, Long.MAX_VALUE)
				.expectNextCount(2) // the empty attempt's finish and terminal chunks carry no content
				.expectNoEvent(BACKOFF)
				.expectNextCount(3)
				.verifyComplete();
		assertThat(calls).hasValue(2);
		assertThat(recorder.resets).as("once per attempt").hasValue(2);
		assertThat(recorder.texts).containsExactly("ok");
	}

	@Test
	void aLoopIsCutAtTheSameChunkWhetherTheWatchOrTheTapFeedsTheDetector() {
		// a response cache puts the tap between the watch and the subscriber (it records the answer)
		ResponseCache<ChatChunk> cache = ResponseCache.caffeine();
		AiGuard<ChatChunk> direct = AiGuard.of(policy().validateStreaming(RepetitionDetector.defaults()).build());
		AiGuard<ChatChunk> tapped = AiGuard.of(policy().validateStreaming(RepetitionDetector.defaults())
				.responseCache(cache).build());
		String[] loop = new String[120];
		for (int i = 0; i < loop.length; i++) {
			loop[i] = i < 7 ? "w" + i : "la";
		}
		for (AiGuard<ChatChunk> guard : List.of(direct, tapped)) {
			StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> answer(loop)), () -> vts, Long.MAX_VALUE)
					.expectNextCount(7 + 64)
					.expectErrorSatisfies(e -> assertThat(e.getCause()).isInstanceOf(DegenerateOutputException.class))
					.verify();
			assertThat(reports.last().outcome()).isEqualTo(Outcome.INVALID);
		}
	}
}
