package dev.aiguard.springai;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import dev.aiguard.chat.ChatChunk;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.messages.AssistantMessage;
import org.springframework.ai.chat.metadata.ChatGenerationMetadata;
import org.springframework.ai.chat.metadata.ChatResponseMetadata;
import org.springframework.ai.chat.metadata.DefaultUsage;
import org.springframework.ai.chat.metadata.Usage;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.chat.model.Generation;

/**
 * What the advisor's guard emits, as Spring AI responses. The guard's chunks are the advisor
 * chain's {@link ChatClientResponse}s, and whatever the policy's fallback steps and notices
 * produce: {@link ChatChunk}s (a static text, a notice, another model through the library's
 * client), {@link ChatResponse}s or {@link ChatClientResponse}s.
 */
final class ChunkConversion {

	private ChunkConversion() {
	}

	/** @return whether the advisor can turn chunks of {@code type} into responses */
	static boolean isSupported(Class<?> type) {
		return type == Object.class || type == ChatChunk.class || ChatResponse.class.isAssignableFrom(type)
				|| type == ChatClientResponse.class;
	}

	/**
	 * @return the chunk as a response to {@code request}, or {@code null} for a chunk that has nothing
	 *         a Spring AI response carries (a terminal marker, a keep-alive)
	 * @throws IllegalStateException for a chunk of a type no fallback of a supported type emits
	 */
	static ChatClientResponse toResponse(Object chunk, ChatClientRequest request) {
		if (chunk instanceof ChatClientResponse) {
			return (ChatClientResponse) chunk;
		}
		if (chunk instanceof ChatResponse) {
			return new ChatClientResponse((ChatResponse) chunk, request.context());
		}
		if (chunk instanceof ChatChunk) {
			ChatResponse response = toChatResponse((ChatChunk) chunk);
			return response == null ? null : new ChatClientResponse(response, request.context());
		}
		throw new IllegalStateException("the guard emitted a " + chunk.getClass().getName()
				+ "; the advisor answers with ChatClientResponse, ChatResponse or ChatChunk chunks only");
	}

	/**
	 * A {@link ChatChunk} the way Spring AI streams: the text (or an empty one with the finish
	 * reason) in one generation, usage alone in a response without generations. Finish reasons are
	 * written in upper case, as Spring AI's OpenAI model writes them. Tool-call deltas are not
	 * carried: they are fragments, and Spring AI's responses hold whole tool calls.
	 */
	static ChatResponse toChatResponse(ChatChunk chunk) {
		boolean text = !chunk.text().isEmpty();
		String finish = chunk.finishReason();
		if (!text && finish == null) {
			return chunk.usage() == null ? null
					: new ChatResponse(List.of(), ChatResponseMetadata.builder().usage(usage(chunk.usage())).build());
		}
		ChatGenerationMetadata metadata = finish == null ? ChatGenerationMetadata.NULL
				: ChatGenerationMetadata.builder().finishReason(finish.toUpperCase(Locale.ROOT)).build();
		Generation generation = new Generation(new AssistantMessage(chunk.text()), metadata);
		return chunk.usage() == null ? new ChatResponse(List.of(generation))
				: new ChatResponse(List.of(generation), ChatResponseMetadata.builder().usage(usage(chunk.usage())).build());
	}

	private static Usage usage(dev.aiguard.chat.Usage usage) {
		return new DefaultUsage(usage.promptTokens(), usage.completionTokens(), usage.totalTokens());
	}

	/**
	 * The answer of a call: the one response when there is one (the chain's, as it came), else the
	 * responses of a streamed fallback put together: their texts and tool calls in order, the last
	 * finish reason and the last usage.
	 */
	static ChatClientResponse aggregate(List<?> chunks, ChatClientRequest request) {
		List<ChatClientResponse> responses = new ArrayList<>(chunks.size());
		for (Object chunk : chunks) {
			ChatClientResponse r = toResponse(chunk, request);
			if (r != null) {
				responses.add(r);
			}
		}
		if (responses.size() == 1) {
			return responses.get(0);
		}
		StringBuilder text = new StringBuilder();
		List<AssistantMessage.ToolCall> calls = new ArrayList<>();
		String finish = null;
		Usage usage = null;
		for (ChatClientResponse r : responses) {
			ChatResponse response = r.chatResponse();
			if (response == null) {
				continue;
			}
			Generation g = response.getResult();
			if (g != null && g.getOutput() != null) {
				String t = g.getOutput().getText();
				text.append(t == null ? "" : t);
				calls.addAll(g.getOutput().getToolCalls());
			}
			String f = SpringAiChunks.finishReason(response);
			if (f != null) {
				finish = f;
			}
			if (response.getMetadata() != null && response.getMetadata().getUsage() != null
					&& response.getMetadata().getUsage().getTotalTokens() != null
					&& response.getMetadata().getUsage().getTotalTokens() > 0) {
				usage = response.getMetadata().getUsage();
			}
		}
		AssistantMessage message = AssistantMessage.builder().content(text.toString()).toolCalls(calls).build();
		ChatGenerationMetadata metadata = finish == null ? ChatGenerationMetadata.NULL
				: ChatGenerationMetadata.builder().finishReason(finish).build();
		ChatResponseMetadata responseMetadata = usage == null ? new ChatResponseMetadata()
				: ChatResponseMetadata.builder().usage(usage).build();
		ChatResponse response = new ChatResponse(List.of(new Generation(message, metadata)), responseMetadata);
		return new ChatClientResponse(response, request.context());
	}
}
