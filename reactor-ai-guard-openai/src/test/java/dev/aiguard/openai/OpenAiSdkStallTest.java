package dev.aiguard.openai;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Outcome;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Stalls of the real SDK client against the mock model over loopback, seen through the guard:
 * detected within the deadline, the SDK stream closed afterwards, one stalled stream not delaying
 * another's detection.
 */
class OpenAiSdkStallTest {

	private static final Duration FIRST_TOKEN = Duration.ofMillis(500);
	private static final Duration IDLE = Duration.ofMillis(400);
	private static final Duration SLACK = Duration.ofMillis(100);

	@RegisterExtension
	static final SdkMock sdk = SdkMock.shared();

	private final List<GuardReport> reports = new CopyOnWriteArrayList<>();

	private AiGuard<ChatChunk> guard() {
		return AiGuard.of(GuardPolicy.builder("sdk-stall")
			// forty idle checks: an idle stall is seen at most 10 ms after the idle deadline
			.stall(StallSpec.defaults().firstTokenTimeout(FIRST_TOKEN).idleTimeout(IDLE).idleChecks(40))
			.onReport(reports::add)
			.build());
	}

	@Test
	void aCompleteAnswerPassesThroughTheGuard() {
		String question = "What does the guard watch?";

		StepVerifier.create(guard().call(SdkMock.request(question), OpenAiStreams.of(sdk.client, SdkMock.params(question)))
			.filter(ChatChunk::hasContent)
			.map(ChatChunk::text)
			.reduce(String::concat))
			.expectNext(MockAnswers.text(question))
			.expectComplete()
			.verify(SdkMock.WAIT);

		SdkMock.await(() -> reports.size(), 1);
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(reports.get(0).finishReason()).isEqualTo("stop");
		SdkMock.await(() -> sdk.mock.stats().inProgress(), 0);
	}

	@Test
	void aStallMidStreamIsStalledWithinTheIdleDeadline() {
		sdk.mock.faults(SdkMock.FAST.withStallAfter(3));
		String question = "stall after three";
		AtomicLong lastContent = new AtomicLong();
		AtomicLong failedAt = new AtomicLong();

		Flux<ChatChunk> answer = guard().call(SdkMock.request(question), OpenAiStreams.of(sdk.client, SdkMock.params(question)))
			.doOnNext(c -> {
				if (c.hasContent()) {
					lastContent.set(System.nanoTime());
				}
			})
			.doOnError(e -> failedAt.set(System.nanoTime()));

		StepVerifier.create(answer.filter(ChatChunk::hasContent))
			.expectNextCount(3)
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.hasCauseInstanceOf(StreamStalledException.class))
			.verify(SdkMock.WAIT);

		assertThat(Duration.ofNanos(failedAt.get() - lastContent.get())).isLessThanOrEqualTo(IDLE.plus(SLACK));
		SdkMock.await(() -> reports.size(), 1);
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.STALLED);
		assertThat(reports.get(0).tokens()).isEqualTo(3);
		SdkMock.await(() -> sdk.mock.stats().inProgress(), 0);
	}

	@Test
	void aFirstTokenStallIsStalledWithinTheFirstTokenDeadline() {
		sdk.mock.faults(SdkMock.FAST.withStallAfter(0));
		String question = "never starts";
		AtomicLong subscribedAt = new AtomicLong();
		AtomicLong failedAt = new AtomicLong();

		Flux<ChatChunk> answer = guard().call(SdkMock.request(question), OpenAiStreams.of(sdk.client, SdkMock.params(question)))
			.doOnSubscribe(s -> subscribedAt.set(System.nanoTime()))
			.doOnError(e -> failedAt.set(System.nanoTime()));

		StepVerifier.create(answer.filter(ChatChunk::hasContent))
			.expectError(StreamStalledException.class)
			.verify(SdkMock.WAIT);

		assertThat(Duration.ofNanos(failedAt.get() - subscribedAt.get())).isLessThanOrEqualTo(FIRST_TOKEN.plus(SLACK));
		SdkMock.await(() -> reports.size(), 1);
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.STALLED);
		assertThat(reports.get(0).tokens()).isZero();
		SdkMock.await(() -> sdk.mock.stats().inProgress(), 0);
	}

	@Test
	void aStallOnOneStreamDoesNotDelayAnotherStreamsDetection() {
		AtomicLong firstSubscribedAt = new AtomicLong();
		AtomicLong firstFailedAt = new AtomicLong();
		AtomicLong secondLastContent = new AtomicLong();
		AtomicLong secondFailedAt = new AtomicLong();
		AiGuard<ChatChunk> guard = guard();
		long requestsBefore = sdk.mock.stats().requests();

		sdk.mock.faults(SdkMock.FAST.withStallAfter(0));
		StepVerifier first = StepVerifier.create(guard.call(SdkMock.request("first"), OpenAiStreams.of(sdk.client,
					SdkMock.params("first")))
				.doOnSubscribe(s -> firstSubscribedAt.set(System.nanoTime()))
				.doOnError(e -> firstFailedAt.set(System.nanoTime()))
				.filter(ChatChunk::hasContent))
			.expectError(StreamStalledException.class)
			.verifyLater();
		SdkMock.await(() -> sdk.mock.stats().requests(), requestsBefore + 1);
		sdk.mock.faults(SdkMock.FAST.withStallAfter(3));
		StepVerifier second = StepVerifier.create(guard.call(SdkMock.request("second"), OpenAiStreams.of(sdk.client,
					SdkMock.params("second")))
				.doOnNext(c -> {
					if (c.hasContent()) {
						secondLastContent.set(System.nanoTime());
					}
				})
				.doOnError(e -> secondFailedAt.set(System.nanoTime()))
				.filter(ChatChunk::hasContent))
			.expectNextCount(3)
			.expectError(PartialStreamException.class)
			.verifyLater();

		first.verify(SdkMock.WAIT);
		second.verify(SdkMock.WAIT);

		assertThat(Duration.ofNanos(firstFailedAt.get() - firstSubscribedAt.get()))
			.isLessThanOrEqualTo(FIRST_TOKEN.plus(SLACK));
		assertThat(Duration.ofNanos(secondFailedAt.get() - secondLastContent.get())).isLessThanOrEqualTo(IDLE.plus(SLACK));
		SdkMock.await(() -> reports.size(), 2);
		assertThat(reports).extracting(GuardReport::outcome).containsOnly(Outcome.STALLED);
		SdkMock.await(() -> sdk.mock.stats().inProgress(), 0);
	}
}
