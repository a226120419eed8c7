package dev.aiguard.springai;

import java.util.List;
import java.util.Map;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.Usage;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.metadata.ChatGenerationMetadata;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import org.springframework.ai.chat.prompt.Prompt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ChunkConversionTest {

	private final ChatClientRequest request = new ChatClientRequest(new Prompt("Hi"), Map.of("conversation", "c-1"));

	@Test
	void theChainsResponsesPassAsTheyAre() {
		ChatClientResponse response = new ChatClientResponse(new ChatResponse(List.of()), Map.of());

		assertThat(ChunkConversion.toResponse(response, request)).isSameAs(response);
	}

	@Test
	void aChatResponseGetsTheRequestsContext() {
		ChatResponse chat = new ChatResponse(List.of(new Generation(new AssistantMessage("Hi"))));

		ChatClientResponse response = ChunkConversion.toResponse(chat, request);

		assertThat(response.chatResponse()).isSameAs(chat);
		assertThat(response.context()).containsEntry("conversation", "c-1");
	}

	@Test
	void chatChunksBecomeResponsesShapedLikeSpringAisOwn() {
		ChatClientResponse token = ChunkConversion.toResponse(ChatChunk.token("Hello "), request);
		assertThat(token.chatResponse().getResult().getOutput().getText()).isEqualTo("Hello ");
		assertThat(token.chatResponse().getResult().getMetadata().getFinishReason()).isNull();
		assertThat(token.context()).containsEntry("conversation", "c-1");

		ChatClientResponse finish = ChunkConversion.toResponse(ChatChunk.finish("stop"), request);
		assertThat(finish.chatResponse().getResult().getOutput().getText()).isEmpty();
		assertThat(finish.chatResponse().getResult().getMetadata().getFinishReason()).isEqualTo("STOP");

		ChatClientResponse usage = ChunkConversion.toResponse(ChatChunk.usage(new Usage(10, 5)), request);
		assertThat(usage.chatResponse().getResults()).isEmpty();
		assertThat(usage.chatResponse().getMetadata().getUsage().getTotalTokens()).isEqualTo(15);

		assertThat(ChunkConversion.toResponse(ChatChunk.done(), request)).isNull();
		assertThat(ChunkConversion.toResponse(ChatChunk.keepAlive(), request)).isNull();
	}

	@Test
	void anUnknownChunkIsAnErrorNamingItsType() {
		assertThatThrownBy(() -> ChunkConversion.toResponse("text", request))
			.isInstanceOf(IllegalStateException.class).hasMessageContaining("java.lang.String");
		assertThat(ChunkConversion.isSupported(String.class)).isFalse();
		assertThat(ChunkConversion.isSupported(Object.class)).isTrue();
		assertThat(ChunkConversion.isSupported(ChatChunk.class)).isTrue();
		assertThat(ChunkConversion.isSupported(ChatResponse.class)).isTrue();
		assertThat(ChunkConversion.isSupported(ChatClientResponse.class)).isTrue();
	}

	@Test
	void theAnswerOfACallIsItsOneResponseOrTheStreamedOnesPutTogether() {
		ChatClientResponse one = new ChatClientResponse(new ChatResponse(List.of(new Generation(new AssistantMessage("Hi"),
				ChatGenerationMetadata.builder().finishReason("STOP").build()))), Map.of());
		assertThat(ChunkConversion.aggregate(List.of(one), request)).isSameAs(one);

		ChatClientResponse whole = ChunkConversion.aggregate(List.of(ChatChunk.token("The "), ChatChunk.token("end."),
				ChatChunk.finish("length"), ChatChunk.usage(new Usage(3, 2)), ChatChunk.done()), request);
		assertThat(whole.chatResponse().getResult().getOutput().getText()).isEqualTo("The end.");
		assertThat(whole.chatResponse().getResult().getMetadata().getFinishReason()).isEqualTo("LENGTH");
		assertThat(whole.chatResponse().getMetadata().getUsage().getTotalTokens()).isEqualTo(5);
		assertThat(whole.context()).containsEntry("conversation", "c-1");

		assertThat(ChunkConversion.aggregate(List.of(), request).chatResponse().getResult().getOutput().getText())
			.isEmpty();
	}
}
