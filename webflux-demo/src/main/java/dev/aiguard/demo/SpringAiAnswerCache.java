package dev.aiguard.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.Usage;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.fallback.ResponseCache;
import dev.aiguard.springai.SpringAiChunks;
import org.jspecify.annotations.Nullable;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.metadata.ChatGenerationMetadata;
import org.springframework.ai.chat.metadata.ChatResponseMetadata;
import org.springframework.ai.chat.metadata.DefaultUsage;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;
import reactor.core.publisher.Mono;

/**
 * The demo's one response cache as the Spring AI client's guard sees it. The advisor stores the
 * chain's {@link ChatClientResponse}s, the library client's guard stores {@link ChatChunk}s, and
 * the fallback ladder replays {@code ChatChunk}s to either: so the answers of both clients are kept
 * as {@code ChatChunk}s, in the same cache under the same keys, and a question answered through
 * one client is found in the cache when the other asks it.
 *
 * <pre>{@code
 * ResponseCache<ChatChunk> cache = ResponseCache.caffeine(spec);
 * GuardPolicy forSpringAi = policy.toBuilder().responseCache(new SpringAiAnswerCache(cache)).build();
 * }</pre>
 *
 * A stored answer is converted once, when it is stored: per response its text, its finish reason
 * in lower case (as OpenAI writes it, and as the library client stores it) and its usage; then the
 * terminal marker, which a stored answer always had.
 */
final class SpringAiAnswerCache implements ResponseCache<ChatClientResponse> {

	private static final ChunkInspector<ChatClientResponse> RESPONSES = SpringAiChunks.chatClientResponses();

	private final ResponseCache<ChatChunk> chunks;

	/** @param chunks where the answers are kept, shared with the library client's guard */
	SpringAiAnswerCache(ResponseCache<ChatChunk> chunks) {
		this.chunks = Objects.requireNonNull(chunks, "chunks");
	}

	@Override
	public Mono<List<ChatClientResponse>> lookup(Object key) {
		return chunks.lookup(key).map(SpringAiAnswerCache::toResponses);
	}

	@Override
	public void store(Object key, List<ChatClientResponse> responses) {
		chunks.store(key, toChunks(responses));
	}

	@Override
	public int maxChunksPerEntry() {
		// one chunk per response, and the terminal marker
		int max = chunks.maxChunksPerEntry();
		return max == Integer.MAX_VALUE ? max : max - 1;
	}

	@Override
	public Class<?> chunkType() {
		return ChatClientResponse.class;
	}

	@Override
	public boolean mayBlock() {
		return chunks.mayBlock();
	}

	/** @return the answer as the library's chunks: one per response that carries something, then the terminal marker */
	static List<ChatChunk> toChunks(List<ChatClientResponse> responses) {
		List<ChatChunk> answer = new ArrayList<>(responses.size() + 1);
		for (ChatClientResponse r : responses) {
			ChatResponse response = r.chatResponse();
			if (response == null) {
				continue;
			}
			String text = text(response);
			String finish = RESPONSES.finishReason(r);
			Usage usage = usage(response);
			if (!text.isEmpty() || finish != null || usage != null) {
				answer.add(new ChatChunk(text, null, finish == null ? null : finish.toLowerCase(Locale.ROOT), usage,
						List.of(), false, false));
			}
		}
		answer.add(ChatChunk.done());
		return answer;
	}

	/** @return the chunks as Spring AI streams them: text and finish reason in one generation, usage alone */
	static List<ChatClientResponse> toResponses(List<ChatChunk> answer) {
		List<ChatClientResponse> responses = new ArrayList<>(answer.size());
		for (ChatChunk c : answer) {
			ChatResponseMetadata metadata = c.usage() == null ? new ChatResponseMetadata()
					: ChatResponseMetadata.builder()
						.usage(new DefaultUsage(c.usage().promptTokens(), c.usage().completionTokens()))
						.build();
			if (!c.text().isEmpty() || c.finishReason() != null) {
				ChatGenerationMetadata finish = c.finishReason() == null ? ChatGenerationMetadata.NULL
						: ChatGenerationMetadata.builder().finishReason(c.finishReason().toUpperCase(Locale.ROOT)).build();
				responses.add(new ChatClientResponse(
						new ChatResponse(List.of(new Generation(new AssistantMessage(c.text()), finish)), metadata), Map.of()));
			}
			else if (c.usage() != null) {
				responses.add(new ChatClientResponse(new ChatResponse(List.of(), metadata), Map.of()));
			}
		}
		return responses;
	}

	/** @return the text of a response's generation, {@code ""} when it has none (the usage-only response) */
	static String text(ChatResponse response) {
		Generation g = response.getResult();
		if (g == null || g.getOutput() == null) {
			return "";
		}
		String text = g.getOutput().getText();
		return text == null ? "" : text;
	}

	@Nullable
	private static Usage usage(ChatResponse response) {
		ChatResponseMetadata metadata = response.getMetadata();
		if (metadata == null || metadata.getUsage() == null) {
			return null;
		}
		org.springframework.ai.chat.metadata.Usage u = metadata.getUsage();
		Integer prompt = u.getPromptTokens();
		Integer completion = u.getCompletionTokens();
		if ((prompt == null || prompt == 0) && (completion == null || completion == 0)) {
			return null;
		}
		return new Usage(prompt == null ? 0 : prompt, completion == null ? 0 : completion);
	}
}
