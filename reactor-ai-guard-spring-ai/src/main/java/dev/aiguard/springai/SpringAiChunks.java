package dev.aiguard.springai;

import java.util.List;

import dev.aiguard.core.ChunkInspector;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.metadata.ChatGenerationMetadata;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;

/**
 * Chunk inspectors for Spring AI's streaming types, so {@code AiGuard} can watch a
 * {@code Flux<ChatResponse>} from a {@code ChatModel} or a {@code Flux<ChatClientResponse>} from an
 * advisor chain directly.
 *
 * <pre>{@code
 * Flux<ChatResponse> answer = chatModel.stream(prompt)
 *     .onErrorMap(SpringAiErrors::map)
 *     .transform(AiGuard.of(policy, SpringAiChunks.chatResponses()));
 * }</pre>
 *
 * What a Spring AI 2.0 stream from {@code OpenAiChatModel} looks like, and how each response is read:
 * <table>
 * <caption>Responses of one streamed answer</caption>
 * <tr><th>response</th><th>content</th><th>terminal</th></tr>
 * <tr><td>first: empty text, no finish reason (the role announcement)</td><td>no</td><td>no</td></tr>
 * <tr><td>a text delta, or an assistant message carrying tool calls</td><td>yes</td><td>no</td></tr>
 * <tr><td>second to last: empty text, finish reason {@code STOP} ({@code LENGTH}, {@code TOOL_CALLS}...)</td><td>no</td><td>yes</td></tr>
 * <tr><td>last: no generation at all, only the usage in the metadata</td><td>no</td><td>no</td></tr>
 * </table>
 *
 * A response is content when one of its generations has non-empty text or a tool call, and
 * terminal when one of them has a finish reason that is not blank; the finish reason reported is the
 * first such one, as Spring AI spells it ({@code STOP}, {@code LENGTH}): the guard compares it in
 * any letter case ({@code GuardReport.outputTruncated()} is true for {@code LENGTH}). A usage-only
 * response is neither, so it neither delays nor breaks the terminal check. A model that reports an
 * unknown finish reason as {@code null} (Spring AI's OpenAI model does so for values the OpenAI SDK
 * does not know) ends its stream without a terminal as far as the guard can tell.
 */
public final class SpringAiChunks {

	private static final ChunkInspector<ChatResponse> CHAT_RESPONSES = new ChatResponseInspector();

	private static final ChunkInspector<ChatClientResponse> CHAT_CLIENT_RESPONSES = new ChatClientResponseInspector(
			CHAT_RESPONSES);

	private SpringAiChunks() {
	}

	/** @return the inspector for the {@link ChatResponse}s a {@code ChatModel} streams */
	public static ChunkInspector<ChatResponse> chatResponses() {
		return CHAT_RESPONSES;
	}

	/** @return the inspector for the {@link ChatClientResponse}s an advisor chain streams */
	public static ChunkInspector<ChatClientResponse> chatClientResponses() {
		return CHAT_CLIENT_RESPONSES;
	}

	/**
	 * @param responses reads the {@link ChatResponse} a {@link ChatClientResponse} carries
	 * @return an inspector for {@link ChatClientResponse}s that delegates to {@code responses}; a
	 *         response without a {@link ChatResponse} is neither content nor terminal
	 */
	public static ChunkInspector<ChatClientResponse> chatClientResponses(ChunkInspector<ChatResponse> responses) {
		java.util.Objects.requireNonNull(responses, "responses");
		return responses == CHAT_RESPONSES ? CHAT_CLIENT_RESPONSES : new ChatClientResponseInspector(responses);
	}

	/** @return whether the finish reason says anything: not {@code null}, not blank */
	static boolean isFinish(String finishReason) {
		return finishReason != null && !finishReason.isBlank();
	}

	static int flags(ChatResponse response) {
		if (response == null) {
			return 0;
		}
		List<Generation> generations = response.getResults();
		int f = 0;
		for (int i = 0, n = generations.size(); i < n; i++) {
			Generation generation = generations.get(i);
			if (generation == null) {
				continue;
			}
			AssistantMessage message = generation.getOutput();
			if (message != null && (hasText(message.getText()) || message.hasToolCalls())) {
				f |= ChunkInspector.CONTENT;
			}
			ChatGenerationMetadata metadata = generation.getMetadata();
			if (metadata != null && isFinish(metadata.getFinishReason())) {
				f |= ChunkInspector.TERMINAL | ChunkInspector.FINISH;
			}
		}
		return f;
	}

	static String finishReason(ChatResponse response) {
		if (response == null) {
			return null;
		}
		List<Generation> generations = response.getResults();
		for (int i = 0, n = generations.size(); i < n; i++) {
			Generation generation = generations.get(i);
			ChatGenerationMetadata metadata = generation == null ? null : generation.getMetadata();
			if (metadata != null && isFinish(metadata.getFinishReason())) {
				return metadata.getFinishReason();
			}
		}
		return null;
	}

	private static boolean hasText(String text) {
		return text != null && !text.isEmpty();
	}

	/** Reads {@link ChatResponse}s; all four answers come from one pass over the generations. */
	private static final class ChatResponseInspector implements ChunkInspector<ChatResponse> {

		@Override
		public Class<?> chunkType() {
			return ChatResponse.class;
		}

		@Override
		public boolean isContent(ChatResponse chunk) {
			return (flags(chunk) & CONTENT) != 0;
		}

		@Override
		public boolean isHeartbeat(ChatResponse chunk) {
			return false;
		}

		@Override
		public boolean isTerminal(ChatResponse chunk) {
			return (flags(chunk) & TERMINAL) != 0;
		}

		@Override
		public String finishReason(ChatResponse chunk) {
			return SpringAiChunks.finishReason(chunk);
		}

		@Override
		public int flags(ChatResponse chunk) {
			return SpringAiChunks.flags(chunk);
		}

		@Override
		public String toString() {
			return "SpringAiChunks.chatResponses()";
		}
	}

	/** Reads the {@link ChatResponse} of a {@link ChatClientResponse} with another inspector. */
	private static final class ChatClientResponseInspector implements ChunkInspector<ChatClientResponse> {

		private final ChunkInspector<ChatResponse> responses;

		ChatClientResponseInspector(ChunkInspector<ChatResponse> responses) {
			this.responses = responses;
		}

		@Override
		public Class<?> chunkType() {
			return ChatClientResponse.class;
		}

		@Override
		public boolean isContent(ChatClientResponse chunk) {
			return chunk.chatResponse() != null && responses.isContent(chunk.chatResponse());
		}

		@Override
		public boolean isHeartbeat(ChatClientResponse chunk) {
			return chunk.chatResponse() != null && responses.isHeartbeat(chunk.chatResponse());
		}

		@Override
		public boolean isTerminal(ChatClientResponse chunk) {
			return chunk.chatResponse() != null && responses.isTerminal(chunk.chatResponse());
		}

		@Override
		public String finishReason(ChatClientResponse chunk) {
			return chunk.chatResponse() == null ? null : responses.finishReason(chunk.chatResponse());
		}

		@Override
		public int flags(ChatClientResponse chunk) {
			return chunk.chatResponse() == null ? 0 : responses.flags(chunk.chatResponse());
		}

		@Override
		public String toString() {
			return "SpringAiChunks.chatClientResponses(" + responses + ")";
		}
	}
}
