package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.Usage;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.fallback.ResponseCacheSpec;
import org.junit.jupiter.api.Test;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.metadata.ChatGenerationMetadata;
import org.springframework.ai.chat.metadata.ChatResponseMetadata;
import org.springframework.ai.chat.metadata.DefaultUsage;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link SpringAiAnswerCache}: a streamed Spring AI answer is kept as the library's chunks, which
 * the library client's ladder replays, and read back as Spring AI responses.
 */
class SpringAiAnswerCacheTest {

	private final ResponseCache<ChatChunk> chunks = ResponseCache.caffeine(ResponseCacheSpec.defaults()
		.maximumEntries(10)
		.maxChunksPerEntry(100));
	private final SpringAiAnswerCache cache = new SpringAiAnswerCache(chunks);

	/** What {@code OpenAiChatModel.stream()} emits for one answer: role, two deltas, finish reason, usage. */
	private static List<ChatClientResponse> streamedAnswer() {
		return List.of(response(""), response("Hello "), response("world."),
				new ChatClientResponse(new ChatResponse(List.of(new Generation(new AssistantMessage(""),
						ChatGenerationMetadata.builder().finishReason("STOP").build()))), Map.of()),
				new ChatClientResponse(new ChatResponse(List.of(),
						ChatResponseMetadata.builder().usage(new DefaultUsage(9, 2)).build()), Map.of()));
	}

	private static ChatClientResponse response(String text) {
		return new ChatClientResponse(new ChatResponse(List.of(new Generation(new AssistantMessage(text)))), Map.of());
	}

	@Test
	void anAnswerIsStoredAsTheLibrarysChunksWithTheFinishReasonInLowerCase() {
		cache.store("key", streamedAnswer());

		StepVerifier.create(chunks.lookup("key"))
			.assertNext(stored -> assertThat(stored).containsExactly(ChatChunk.token("Hello "), ChatChunk.token("world."),
					ChatChunk.finish("stop"), ChatChunk.usage(new Usage(9, 2)), ChatChunk.done()))
			.expectComplete()
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void aStoredAnswerReadsBackAsSpringAiResponses() {
		cache.store("key", streamedAnswer());

		StepVerifier.create(cache.lookup("key"))
			.assertNext(responses -> {
				assertThat(responses).hasSize(4);
				assertThat(responses).extracting(r -> SpringAiAnswerCache.text(r.chatResponse()))
					.containsExactly("Hello ", "world.", "", "");
				assertThat(responses.get(2).chatResponse().getResult().getMetadata().getFinishReason()).isEqualTo("STOP");
				assertThat(responses.get(3).chatResponse().getResults()).isEmpty();
				assertThat(responses.get(3).chatResponse().getMetadata().getUsage().getTotalTokens()).isEqualTo(11);
			})
			.expectComplete()
			.verify(Duration.ofSeconds(5));
		StepVerifier.create(cache.lookup("absent")).expectComplete().verify(Duration.ofSeconds(5));
	}

	@Test
	void itDeclaresSpringAiResponsesAndLeavesRoomForTheTerminalMarker() {
		assertThat(cache.chunkType()).isEqualTo(ChatClientResponse.class);
		assertThat(cache.maxChunksPerEntry()).isEqualTo(99);
		assertThat(cache.mayBlock()).isFalse();
	}
}
