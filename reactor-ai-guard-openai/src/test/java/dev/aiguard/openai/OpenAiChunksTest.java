package dev.aiguard.openai;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.openai.core.ObjectMappers;
import com.openai.models.chat.completions.ChatCompletionChunk;
import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.chat.Usage;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.core.Outcome;
import dev.aiguard.provider.ProviderFormatException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/** The SDK's chunks as the library's, and the inspector over the SDK's own chunks. */
class OpenAiChunksTest {

	private static final ChunkInspector<ChatCompletionChunk> INSPECTOR = OpenAiChunks.INSPECTOR;

	/** A chunk as the SDK reads it off the wire. */
	static ChatCompletionChunk chunk(String choices, String extra) {
		String json = "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
				+ "\"choices\":" + choices + extra + "}";
		try {
			return ObjectMappers.jsonMapper().readValue(json, ChatCompletionChunk.class);
		}
		catch (JsonProcessingException e) {
			throw new IllegalArgumentException(json, e);
		}
	}

	static ChatCompletionChunk delta(String delta, String finishReason) {
		return chunk("[{\"index\":0,\"delta\":" + delta + ",\"finish_reason\":"
				+ (finishReason == null ? "null" : "\"" + finishReason + "\"") + "}]", "");
	}

	@Test
	void aContentDeltaIsContent() {
		ChatCompletionChunk c = delta("{\"content\":\"Hel\"}", null);

		assertThat(OpenAiChunks.toChatChunk(c)).isEqualTo(ChatChunk.token("Hel"));
		assertThat(INSPECTOR.isContent(c)).isTrue();
		assertThat(INSPECTOR.flags(c)).isEqualTo(ChunkInspector.CONTENT);
	}

	@Test
	void theRoleChunkCarriesTheRoleAndIsNotContent() {
		ChatCompletionChunk c = delta("{\"role\":\"assistant\",\"content\":\"\"}", null);

		ChatChunk mapped = OpenAiChunks.toChatChunk(c);
		assertThat(mapped.role()).isEqualTo("assistant");
		assertThat(mapped.hasContent()).isFalse();
		assertThat(INSPECTOR.isContent(c)).isFalse();
		assertThat(INSPECTOR.flags(c)).isZero();
	}

	@Test
	void aRefusalIsContent() {
		ChatCompletionChunk c = delta("{\"refusal\":\"I can't help with that.\"}", null);

		assertThat(OpenAiChunks.toChatChunk(c).text()).isEqualTo("I can't help with that.");
		assertThat(INSPECTOR.isContent(c)).isTrue();
	}

	@Test
	void toolCallDeltasAreContent() {
		ChatCompletionChunk first = delta("{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
				+ "\"function\":{\"name\":\"weather\",\"arguments\":\"\"}}]}", null);
		ChatCompletionChunk next = delta("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]}",
				null);

		assertThat(OpenAiChunks.toChatChunk(first).toolCalls()).containsExactly(new ToolCallDelta(0, "call_1", "weather", ""));
		assertThat(OpenAiChunks.toChatChunk(next).toolCalls()).containsExactly(new ToolCallDelta(0, null, null, "{\"city\":"));
		assertThat(INSPECTOR.isContent(first)).isTrue();
		assertThat(INSPECTOR.isContent(next)).isTrue();
		assertThat(OpenAiChunks.toChatChunk(next).hasContent()).isTrue();
	}

	@ParameterizedTest
	@CsvSource({ "stop, stop", "STOP, stop", "Stop, stop", "LENGTH, length", "Content_Filter, content_filter",
			"TOOL_CALLS, tool_calls" })
	void theFinishReasonIsReadInAnyCaseAndCarriedInLowerCase(String sent, String carried) {
		assertThat(OpenAiChunks.toChatChunk(delta("{}", sent))).isEqualTo(ChatChunk.finish(carried));
		assertThat(INSPECTOR.finishReason(delta("{}", sent))).isEqualTo(carried);
	}

	@Test
	void aFinishChunkIsNeitherContentNorHeartbeat() {
		ChatCompletionChunk upper = delta("{}", "LENGTH");

		assertThat(INSPECTOR.flags(upper)).isEqualTo(ChunkInspector.FINISH);
		assertThat(INSPECTOR.isContent(upper)).isFalse();
	}

	@Test
	void aUsageOnlyChunkIsNeitherContentNorHeartbeat() {
		ChatCompletionChunk c = chunk("[]", ",\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":43,\"total_tokens\":52}");

		assertThat(OpenAiChunks.toChatChunk(c)).isEqualTo(ChatChunk.usage(new Usage(9, 43)));
		assertThat(INSPECTOR.isContent(c)).isFalse();
		assertThat(INSPECTOR.isHeartbeat(c)).isFalse();
		assertThat(INSPECTOR.finishReason(c)).isNull();
		assertThat(INSPECTOR.flags(c)).isZero();
	}

	@Test
	void aReasoningDeltaIsAHeartbeat() {
		ChatCompletionChunk c = delta("{\"reasoning_content\":\"Let me think\"}", null);

		assertThat(OpenAiChunks.toChatChunk(c)).isEqualTo(ChatChunk.keepAlive());
		assertThat(INSPECTOR.isHeartbeat(c)).isTrue();
		assertThat(INSPECTOR.isContent(c)).isFalse();
		assertThat(INSPECTOR.flags(c)).isEqualTo(ChunkInspector.HEARTBEAT);
	}

	@Test
	void otherChoicesAndEmptyDeltasCarryNothing() {
		ChatCompletionChunk second = chunk("[{\"index\":1,\"delta\":{\"content\":\"other\"},\"finish_reason\":null}]", "");
		ChatCompletionChunk empty = delta("{}", null);

		assertThat(OpenAiChunks.toChatChunk(second)).isNull();
		assertThat(OpenAiChunks.toChatChunk(empty)).isNull();
		assertThat(INSPECTOR.isContent(second)).isFalse();
		assertThat(INSPECTOR.flags(second)).isZero();
	}

	@Test
	void theInspectorNeverSeesATerminalMarker() {
		assertThat(INSPECTOR.isTerminal(delta("{}", "stop"))).isFalse();
		assertThat(INSPECTOR.chunkType()).isEqualTo(ChatCompletionChunk.class);
	}

	@Test
	void aStreamWithAFinishReasonEndsWithTheTerminalMarker() {
		Flux<ChatCompletionChunk> sdk = Flux.just(delta("{\"role\":\"assistant\",\"content\":\"\"}", null),
				delta("{\"content\":\"Hi\"}", null), delta("{}", "stop"), delta("{}", null));

		StepVerifier.create(OpenAiStreams.toChatChunks(sdk))
			.assertNext(c -> assertThat(c.role()).isEqualTo("assistant"))
			.expectNext(ChatChunk.token("Hi"), ChatChunk.finish("stop"), ChatChunk.done())
			.verifyComplete();
	}

	@Test
	void aStreamCutBeforeItsFinishReasonHasNoTerminalMarker() {
		Flux<ChatCompletionChunk> sdk = Flux.just(delta("{\"content\":\"Hi\"}", null));

		StepVerifier.create(OpenAiStreams.toChatChunks(sdk).repeat(1))
			.expectNext(ChatChunk.token("Hi"), ChatChunk.token("Hi"))
			.verifyComplete();
	}

	@Test
	void aChunkTheSdkCannotReadIsAFormatError() {
		ChatCompletionChunk noDelta = chunk("[{\"index\":0,\"finish_reason\":null}]", "");

		StepVerifier.create(OpenAiStreams.toChatChunks(Flux.just(noDelta)))
			.expectError(ProviderFormatException.class)
			.verify(Duration.ofSeconds(5));
	}

	/** The guard over the SDK's own chunks: an upper-case {@code LENGTH} still counts as cut by the limit. */
	@Test
	void theGuardReadsTheSdksChunksThroughTheInspector() {
		List<GuardReport> reports = new CopyOnWriteArrayList<>();
		AiGuard<ChatCompletionChunk> guard = AiGuard.of(GuardPolicy.builder("sdk-raw").onReport(reports::add).build(),
				OpenAiChunks.INSPECTOR);
		Flux<ChatCompletionChunk> sdk = Flux.just(delta("{\"role\":\"assistant\",\"content\":\"\"}", null),
				delta("{\"content\":\"Hi\"}", null), delta("{\"content\":\" there\"}", null), delta("{}", "LENGTH"),
				chunk("[]", ",\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}"));

		StepVerifier.create(sdk.transform(guard)).expectNextCount(5).verifyComplete();

		SdkMock.await(() -> reports.size(), 1);
		GuardReport report = reports.get(0);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.tokens()).as("two content chunks; role, finish and usage chunks are not content").isEqualTo(2);
		assertThat(report.finishReason()).isEqualTo("length");
		assertThat(report.outputTruncated()).isTrue();
	}

	@Test
	void withoutAFinishReasonTheGuardSeesTheSdksChunksIncomplete() {
		List<GuardReport> reports = new CopyOnWriteArrayList<>();
		AiGuard<ChatCompletionChunk> guard = AiGuard.of(GuardPolicy.builder("sdk-raw").onReport(reports::add).build(),
				OpenAiChunks.INSPECTOR);

		StepVerifier.create(Flux.just(delta("{\"content\":\"Hi\"}", null)).transform(guard))
			.expectNextCount(1)
			.expectError()
			.verify(Duration.ofSeconds(5));

		SdkMock.await(() -> reports.size(), 1);
		assertThat(reports.get(0).outcome()).isEqualTo(Outcome.INCOMPLETE);
	}
}
