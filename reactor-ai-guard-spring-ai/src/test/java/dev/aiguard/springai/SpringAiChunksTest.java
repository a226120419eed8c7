package dev.aiguard.springai;

import java.util.List;
import java.util.Map;

import dev.aiguard.core.ChunkInspector;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.metadata.ChatGenerationMetadata;
import org.springframework.ai.chat.metadata.ChatResponseMetadata;
import org.springframework.ai.chat.metadata.DefaultUsage;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;

import static org.assertj.core.api.Assertions.assertThat;

class SpringAiChunksTest {

	private static final ChunkInspector<ChatResponse> INSPECTOR = SpringAiChunks.chatResponses();
	private static final int TERMINAL = ChunkInspector.TERMINAL | ChunkInspector.FINISH;

	private static ChatResponse response(String text, String finishReason) {
		ChatGenerationMetadata metadata = finishReason == null ? ChatGenerationMetadata.NULL
				: ChatGenerationMetadata.builder().finishReason(finishReason).build();
		return new ChatResponse(List.of(new Generation(new AssistantMessage(text), metadata)));
	}

	@Test
	void textIsContentAndAnEmptyTextIsNot() {
		assertThat(INSPECTOR.flags(response("Hello", null))).isEqualTo(ChunkInspector.CONTENT);
		assertThat(INSPECTOR.flags(response(" ", null))).isEqualTo(ChunkInspector.CONTENT);
		assertThat(INSPECTOR.flags(response("", null))).isZero();
		assertThat(INSPECTOR.isContent(response("Hello", null))).isTrue();
		assertThat(INSPECTOR.isHeartbeat(response("Hello", null))).isFalse();
	}

	@Test
	void aToolCallIsContent() {
		AssistantMessage call = AssistantMessage.builder()
			.content("")
			.toolCalls(List.of(new AssistantMessage.ToolCall("call-1", "function", "weather", "{\"city\":\"Oslo\"}")))
			.build();

		ChatResponse response = new ChatResponse(List.of(new Generation(call,
				ChatGenerationMetadata.builder().finishReason("TOOL_CALLS").build())));

		assertThat(INSPECTOR.flags(response)).isEqualTo(ChunkInspector.CONTENT | TERMINAL);
		assertThat(INSPECTOR.finishReason(response)).isEqualTo("TOOL_CALLS");
	}

	@Test
	void aFinishReasonIsTerminalInAnyLetterCaseAndABlankOneIsNone() {
		ChatResponse stop = response("", "STOP");
		assertThat(INSPECTOR.flags(stop)).isEqualTo(TERMINAL);
		assertThat(INSPECTOR.isTerminal(stop)).isTrue();
		assertThat(INSPECTOR.finishReason(stop)).isEqualTo("STOP");
		assertThat(INSPECTOR.flags(response("", "length"))).isEqualTo(TERMINAL);
		assertThat(INSPECTOR.finishReason(response("", "length"))).isEqualTo("length");
		// Spring AI 1.x wrote "" on every content chunk
		assertThat(INSPECTOR.flags(response("Hi", ""))).isEqualTo(ChunkInspector.CONTENT);
		assertThat(INSPECTOR.finishReason(response("Hi", " "))).isNull();
	}

	@Test
	void theUsageOnlyResponseIsNeitherContentNorTerminal() {
		ChatResponse usage = new ChatResponse(List.of(),
				ChatResponseMetadata.builder().usage(new DefaultUsage(10, 32, 42)).build());

		assertThat(INSPECTOR.flags(usage)).isZero();
		assertThat(INSPECTOR.finishReason(usage)).isNull();
	}

	@Test
	void aChatClientResponseIsReadThroughItsChatResponse() {
		ChunkInspector<ChatClientResponse> inspector = SpringAiChunks.chatClientResponses();

		assertThat(inspector.chunkType()).isEqualTo(ChatClientResponse.class);
		assertThat(inspector.flags(new ChatClientResponse(response("Hi", "STOP"), Map.of())))
			.isEqualTo(ChunkInspector.CONTENT | TERMINAL);
		assertThat(inspector.finishReason(new ChatClientResponse(response("", "LENGTH"), Map.of()))).isEqualTo("LENGTH");
		ChatClientResponse empty = new ChatClientResponse(null, Map.of());
		assertThat(inspector.flags(empty)).isZero();
		assertThat(inspector.isContent(empty) || inspector.isTerminal(empty) || inspector.isHeartbeat(empty)).isFalse();
		assertThat(inspector.finishReason(empty)).isNull();
	}

	@Test
	void aChatClientResponseInspectorCanReadWithAnotherResponseInspector() {
		ChunkInspector<ChatResponse> everythingIsAHeartbeat = ChunkInspector.of(ChatResponse.class, r -> false,
				r -> true, r -> false, r -> null);

		ChunkInspector<ChatClientResponse> inspector = SpringAiChunks.chatClientResponses(everythingIsAHeartbeat);

		assertThat(inspector.isHeartbeat(new ChatClientResponse(response("Hi", null), Map.of()))).isTrue();
		assertThat(SpringAiChunks.chatClientResponses(SpringAiChunks.chatResponses()))
			.isSameAs(SpringAiChunks.chatClientResponses());
	}
}
