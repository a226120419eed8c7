package dev.aiguard.openai;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import com.openai.core.RequestOptions;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.core.Outcome;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import reactor.core.publisher.Flux;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

/** {@link OpenAiStreams} over the real SDK client and the mock model, on loopback. */
class OpenAiStreamsTest {

	@RegisterExtension
	static final SdkMock sdk = SdkMock.shared();

	private static String text(List<ChatCompletionChunk> chunks) {
		StringBuilder sb = new StringBuilder();
		for (ChatCompletionChunk c : chunks) {
			c.choices().forEach(choice -> choice.delta().content().ifPresent(sb::append));
		}
		return sb.toString();
	}

	@Test
	void theSdksOwnChunksAreGuardedWithTheInspector() {
		String question = "Raw chunks, please";
		List<GuardReport> reports = new CopyOnWriteArrayList<>();
		AiGuard<ChatCompletionChunk> guard = AiGuard.of(GuardPolicy.builder("sdk-raw")
			.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(2)).idleTimeout(Duration.ofSeconds(2)))
			.onReport(reports::add)
			.build(), OpenAiChunks.INSPECTOR);

		StepVerifier.create(OpenAiStreams.create(sdk.client).rawStream(SdkMock.params(question)).transform(guard)
				.collectList())
			.assertNext(chunks -> assertThat(text(chunks)).isEqualTo(MockAnswers.text(question)))
			.verifyComplete();

		SdkMock.await(() -> reports.size(), 1);
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(reports.get(0).finishReason()).isEqualTo("stop");
		assertThat(reports.get(0).tokens()).isEqualTo(MockAnswers.tokens(question).size());
	}

	@Test
	void aSlowSubscriberGetsEveryChunkThroughASmallBuffer() {
		String question = "#seq n 40";
		OpenAiStreams streams = OpenAiStreams.create(sdk.client).bufferSize(2);

		StepVerifier.create(streams.stream(SdkMock.params(question)).filter(ChatChunk::hasContent), 0)
			.thenRequest(1)
			.expectNextCount(1)
			.expectNoEvent(Duration.ofMillis(100))
			.thenRequest(Long.MAX_VALUE)
			.expectNextCount(39)
			.expectComplete()
			.verify(SdkMock.WAIT);
	}

	@Test
	void aSlowSubscriberReadsTheExactAnswer() {
		String question = "#seq slow 30";

		StepVerifier.create(OpenAiStreams.create(sdk.client).bufferSize(1).stream(SdkMock.params(question))
				.filter(ChatChunk::hasContent)
				.map(ChatChunk::text)
				.limitRate(1)
				.reduce(String::concat))
			.expectNext(MockAnswers.text(question))
			.expectComplete()
			.verify(SdkMock.WAIT);
	}

	@Test
	void cancellingFromAnEventLoopThreadClosesTheSdkStreamElsewhere() {
		sdk.mock.faults(SdkMock.FAST.withPace(20, 50));
		long cancelledBefore = sdk.mock.stats().cancelled();

		StepVerifier.create(OpenAiStreams.create(sdk.client).stream(SdkMock.params("#seq c 200"))
				.filter(ChatChunk::hasContent)
				.publishOn(Schedulers.parallel())
				// take cancels upstream from the parallel thread: BlockHound fails the test if that blocks
				.take(3))
			.expectNextCount(3)
			.expectComplete()
			.verify(SdkMock.WAIT);

		SdkMock.await(() -> sdk.mock.stats().cancelled(), cancelledBefore + 1);
		SdkMock.await(() -> sdk.mock.stats().inProgress(), 0);
	}

	@Test
	void aDroppedConnectionIsAConnectionError() {
		sdk.mock.faults(SdkMock.FAST.withDropAfter(3));

		StepVerifier.create(OpenAiStreams.create(sdk.client).stream(SdkMock.params("drop me")).filter(ChatChunk::hasContent))
			.expectNextCount(3)
			.expectError(ProviderConnectionException.class)
			.verify(SdkMock.WAIT);
	}

	@Test
	void aStreamCanBeStartedWithRequestOptions() {
		String question = "with options";
		ChatCompletionCreateParams params = SdkMock.params(question);
		RequestOptions options = RequestOptions.builder().timeout(Duration.ofSeconds(30)).build();

		StepVerifier.create(OpenAiStreams.create(sdk.client)
				.stream(() -> sdk.client.chat().completions().createStreaming(params, options))
				.filter(ChatChunk::hasContent)
				.map(ChatChunk::text)
				.reduce(String::concat))
			.expectNext(MockAnswers.text(question))
			.expectComplete()
			.verify(SdkMock.WAIT);
	}

	@Test
	void eachSubscriptionSendsItsOwnRequest() {
		long before = sdk.mock.stats().requests();
		Flux<ChatChunk> answer = OpenAiStreams.create(sdk.client).stream(SdkMock.params("twice"));

		assertThat(sdk.mock.stats().requests()).as("nothing is sent before a subscription").isEqualTo(before);
		StepVerifier.create(answer.then().repeat(1)).expectComplete().verify(SdkMock.WAIT);
		assertThat(sdk.mock.stats().requests()).isEqualTo(before + 2);
	}

	@Test
	void badSettingsAreRefusedByName() {
		OpenAiStreams streams = OpenAiStreams.create(sdk.client);

		assertThatIllegalArgumentException().isThrownBy(() -> streams.bufferSize(0))
			.withMessage("bufferSize must be at least 1, was 0");
		assertThatNullPointerException().isThrownBy(() -> streams.closeOn(null)).withMessage("closeOn");
		assertThatNullPointerException().isThrownBy(() -> OpenAiStreams.create(null)).withMessage("client");
		assertThatNullPointerException().isThrownBy(() -> streams.calls(null)).withMessage("template");
		assertThat(streams.bufferSize(3).bufferSize()).isEqualTo(3);
		assertThat(streams.bufferSize()).isEqualTo(OpenAiStreams.DEFAULT_BUFFER_SIZE);
	}
}
