package dev.aiguard.openai;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import com.openai.core.JsonValue;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.completions.CompletionUsage;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.chat.Usage;
import dev.aiguard.core.ChunkInspector;
import org.jspecify.annotations.Nullable;

/**
 * What the SDK's {@link ChatCompletionChunk}s mean to the guard: {@link #toChatChunk} turns one
 * into the library's {@link ChatChunk}, {@link #INSPECTOR} reads the SDK chunks directly for a
 * guard over the SDK's own type.
 *
 * <pre>{@code
 * AiGuard<ChatCompletionChunk> guard = AiGuard.of(policy, OpenAiChunks.INSPECTOR);
 * Flux<ChatCompletionChunk> answer = OpenAiStreams.create(client).rawStream(params).transform(guard);
 * }</pre>
 *
 * <p>Both read the choice with index 0 and ignore the others, like the library's
 * {@code OpenAiChunkCodec}:
 * <ul>
 * <li>content: a non-empty {@code delta.content} or {@code delta.refusal}, or a tool-call delta;</li>
 * <li>heartbeat: a reasoning delta ({@code reasoning_content}, {@code reasoning}) without content,
 * a sign of life that is not the answer;</li>
 * <li>finish reason: {@code finish_reason} in lower case, whatever case the server wrote it in
 * ({@code STOP} is {@code stop}), as the library's chunks carry it;</li>
 * <li>terminal: never. The SDK consumes {@code [DONE]} itself and only ends the stream, so a
 * stream counts as complete when it carried a finish reason.</li>
 * </ul>
 * A usage-only chunk (empty {@code choices}, {@code usage} set) is neither content nor heartbeat.
 */
public final class OpenAiChunks {

	/**
	 * The inspector for the SDK's chunks. The guard calls only {@code flags}, which reads the chunk
	 * once; the SDK's accessors return {@code Optional}s, so it allocates a little.
	 */
	public static final ChunkInspector<ChatCompletionChunk> INSPECTOR = new ChunkInspector<>() {

		@Override
		public Class<?> chunkType() {
			return ChatCompletionChunk.class;
		}

		@Override
		public boolean isContent(ChatCompletionChunk chunk) {
			ChatCompletionChunk.Choice choice = firstChoice(chunk);
			return choice != null && hasContent(choice.delta());
		}

		@Override
		public boolean isHeartbeat(ChatCompletionChunk chunk) {
			ChatCompletionChunk.Choice choice = firstChoice(chunk);
			return choice != null && !hasContent(choice.delta()) && isReasoning(choice.delta());
		}

		@Override
		public boolean isTerminal(ChatCompletionChunk chunk) {
			return false;
		}

		@Override
		@Nullable
		public String finishReason(ChatCompletionChunk chunk) {
			ChatCompletionChunk.Choice choice = firstChoice(chunk);
			return choice == null ? null : finishReasonOf(choice);
		}

		@Override
		public int flags(ChatCompletionChunk chunk) {
			ChatCompletionChunk.Choice choice = firstChoice(chunk);
			if (choice == null) {
				return 0;
			}
			ChatCompletionChunk.Choice.Delta delta = choice.delta();
			int f = 0;
			if (hasContent(delta)) {
				f |= CONTENT;
			}
			else if (isReasoning(delta)) {
				f |= HEARTBEAT;
			}
			if (choice.finishReason().isPresent()) {
				f |= FINISH;
			}
			return f;
		}
	};

	private OpenAiChunks() {
	}

	/** @return {@link #INSPECTOR} */
	public static ChunkInspector<ChatCompletionChunk> inspector() {
		return INSPECTOR;
	}

	/**
	 * @return the library's chunk for an SDK chunk: text (content, else refusal), role, tool-call
	 *         deltas, finish reason, usage; a keep-alive for a reasoning-only delta; {@code null}
	 *         when the chunk carries none of these (a chunk for another choice, an empty delta)
	 * @throws com.openai.errors.OpenAIInvalidDataException when a field the SDK requires is missing
	 *         ({@link OpenAiSdkErrors#map} makes it a {@code ProviderFormatException})
	 */
	@Nullable
	public static ChatChunk toChatChunk(ChatCompletionChunk chunk) {
		ChatCompletionChunk.Choice choice = firstChoice(chunk);
		String text = "";
		String role = null;
		String finishReason = null;
		List<ToolCallDelta> toolCalls = List.of();
		boolean reasoning = false;
		if (choice != null) {
			ChatCompletionChunk.Choice.Delta delta = choice.delta();
			text = delta.content().filter(c -> !c.isEmpty()).or(delta::refusal).orElse("");
			role = delta.role().map(r -> r.asString()).orElse(null);
			toolCalls = toolCalls(delta);
			finishReason = finishReasonOf(choice);
			reasoning = isReasoning(delta);
		}
		Usage usage = chunk.usage().map(OpenAiChunks::usage).orElse(null);
		if (text.isEmpty() && role == null && finishReason == null && toolCalls.isEmpty() && usage == null) {
			return reasoning ? ChatChunk.keepAlive() : null;
		}
		return new ChatChunk(text, role, finishReason, usage, toolCalls, false, false);
	}

	private static ChatCompletionChunk.@Nullable Choice firstChoice(ChatCompletionChunk chunk) {
		List<ChatCompletionChunk.Choice> choices = chunk.choices();
		for (int i = 0; i < choices.size(); i++) {
			ChatCompletionChunk.Choice c = choices.get(i);
			if (c.index() == 0) {
				return c;
			}
		}
		return null;
	}

	private static boolean hasContent(ChatCompletionChunk.Choice.Delta delta) {
		Optional<String> content = delta.content();
		if (content.isPresent() && !content.get().isEmpty()) {
			return true;
		}
		Optional<String> refusal = delta.refusal();
		if (refusal.isPresent() && !refusal.get().isEmpty()) {
			return true;
		}
		Optional<List<ChatCompletionChunk.Choice.Delta.ToolCall>> calls = delta.toolCalls();
		return calls.isPresent() && !calls.get().isEmpty();
	}

	private static boolean isReasoning(ChatCompletionChunk.Choice.Delta delta) {
		Map<String, JsonValue> extra = delta._additionalProperties();
		return isText(extra.get("reasoning_content")) || isText(extra.get("reasoning"));
	}

	private static boolean isText(@Nullable JsonValue value) {
		return value != null && value.asString().isPresent();
	}

	/** @return the finish reason in lower case; a reason already in lower case is returned as it is, not copied */
	@Nullable
	private static String finishReasonOf(ChatCompletionChunk.Choice choice) {
		Optional<ChatCompletionChunk.Choice.FinishReason> reason = choice.finishReason();
		return reason.isPresent() ? reason.get().asString().toLowerCase(Locale.ROOT) : null;
	}

	private static List<ToolCallDelta> toolCalls(ChatCompletionChunk.Choice.Delta delta) {
		Optional<List<ChatCompletionChunk.Choice.Delta.ToolCall>> calls = delta.toolCalls();
		if (calls.isEmpty() || calls.get().isEmpty()) {
			return List.of();
		}
		List<ToolCallDelta> out = new ArrayList<>(calls.get().size());
		for (ChatCompletionChunk.Choice.Delta.ToolCall call : calls.get()) {
			Optional<ChatCompletionChunk.Choice.Delta.ToolCall.Function> function = call.function();
			out.add(new ToolCallDelta((int) call.index(), call.id().orElse(null),
					function.flatMap(ChatCompletionChunk.Choice.Delta.ToolCall.Function::name).orElse(null),
					function.flatMap(ChatCompletionChunk.Choice.Delta.ToolCall.Function::arguments).orElse("")));
		}
		return out;
	}

	private static Usage usage(CompletionUsage usage) {
		return new Usage(saturate(usage.promptTokens()), saturate(usage.completionTokens()));
	}

	private static int saturate(long n) {
		return (int) Math.max(0, Math.min(Integer.MAX_VALUE, n));
	}
}
