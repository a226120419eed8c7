package dev.aiguard.benchmarks;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

import com.fasterxml.jackson.databind.json.JsonMapper;
import com.openai.core.ObjectMappers;
import com.openai.models.ChatModel;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.openai.OpenAiChatModel;
import org.springframework.ai.openai.OpenAiChatOptions;

/**
 * What Spring AI 2.0.1's {@code OpenAiChatModel.stream} does with one streamed event, step by step
 * as its stream pipeline does it: the OpenAI SDK reads the event's data into a
 * {@link ChatCompletionChunk} with its own mapper, Spring AI merges the (single-chunk) buffer,
 * turns the chunk into a {@link ChatCompletion} and that into a {@link ChatResponse}. The last
 * three steps are Spring AI's own code, called through method handles because it keeps them
 * package-private or in a lambda (names as compiled in 2.0.1).
 */
final class SpringAiChunkMapping {

	private static final JsonMapper SDK_MAPPER = ObjectMappers.jsonMapper();

	private final MethodHandle merge;
	private final MethodHandle toCompletion;
	private final MethodHandle toResponse;

	SpringAiChunkMapping() {
		try {
			Class<?> merger = Class.forName("org.springframework.ai.openai.OpenAiChatModel$ChunkMerger");
			MethodHandles.Lookup mergerLookup = MethodHandles.privateLookupIn(merger, MethodHandles.lookup());
			merge = mergerLookup.findStatic(merger, "mergeChunks",
					MethodType.methodType(ChatCompletionChunk.class, List.class));
			toCompletion = mergerLookup.findStatic(merger, "chunkToChatCompletion",
					MethodType.methodType(ChatCompletion.class, ChatCompletionChunk.class));
			OpenAiChatModel model = OpenAiChatModel.builder()
				.options(OpenAiChatOptions.builder().apiKey("sk-benchmark").model("gpt-4o-mini").build())
				.build();
			ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
				.model(ChatModel.GPT_4O_MINI)
				.addUserMessage("Tell me a story.")
				.build();
			MethodHandle lambda = MethodHandles.privateLookupIn(OpenAiChatModel.class, MethodHandles.lookup())
				.findVirtual(OpenAiChatModel.class, "lambda$internalStream$9", MethodType.methodType(ChatResponse.class,
						ConcurrentHashMap.class, ConcurrentHashMap.class, ChatCompletionCreateParams.class,
						ChatCompletion.class));
			toResponse = MethodHandles.insertArguments(lambda, 0, model, new ConcurrentHashMap<String, String>(),
					new ConcurrentHashMap<String, String>(), params);
		}
		catch (ReflectiveOperationException e) {
			throw new IllegalStateException("Spring AI 2.0.1's streaming steps were not found", e);
		}
	}

	/** @return the SDK's chunk of an event's data, as the SDK's stream handler reads it */
	static ChatCompletionChunk sdkChunk(String data) {
		try {
			return SDK_MAPPER.readValue(data, ChatCompletionChunk.class);
		}
		catch (com.fasterxml.jackson.core.JacksonException e) {
			throw new IllegalArgumentException(e);
		}
	}

	/** @return Spring AI's response for an event's data */
	ChatResponse response(String data) {
		try {
			ChatCompletionChunk merged = (ChatCompletionChunk) merge.invoke(List.of(sdkChunk(data)));
			ChatCompletion completion = (ChatCompletion) toCompletion.invoke(merged);
			return (ChatResponse) toResponse.invoke(completion);
		}
		catch (RuntimeException | Error e) {
			throw e;
		}
		catch (Throwable e) {
			throw new IllegalStateException(e);
		}
	}
}
