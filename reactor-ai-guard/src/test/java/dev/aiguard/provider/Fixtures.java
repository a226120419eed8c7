package dev.aiguard.provider;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.sse.SseDecoder;
import reactor.core.publisher.Flux;

/** The streams of {@code shared/wire-formats/README.md}, verbatim, and helpers to decode them. */
final class Fixtures {

	static final String OPENAI_STREAM = """
			data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}

			data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}

			data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}

			data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}

			data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}

			data: [DONE]

			""";

	static final String OPENAI_IN_BAND_ERROR =
			"data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"code\":null}}\n\n";

	static final String ANTHROPIC_STREAM = """
			event: message_start
			data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"m","stop_reason":null,"usage":{"input_tokens":25,"output_tokens":1}}}

			event: content_block_start
			data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

			event: ping
			data: {"type":"ping"}

			event: content_block_delta
			data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}

			event: content_block_stop
			data: {"type":"content_block_stop","index":0}

			event: message_delta
			data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}

			event: message_stop
			data: {"type":"message_stop"}

			""";

	static final String ANTHROPIC_OVERLOADED = """
			event: error
			data: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}

			""";

	/** The OpenAI fixture's expected chunks. */
	static final List<ChatChunk> OPENAI_CHUNKS = List.of(
			new ChatChunk("", "assistant", null, null, List.of(), false, false),
			ChatChunk.token("Hel"),
			ChatChunk.token("lo"),
			ChatChunk.finish("stop"),
			ChatChunk.usage(new dev.aiguard.chat.Usage(9, 2)),
			ChatChunk.done());

	private Fixtures() {
	}

	/** @return the first {@code n} events (blank-line separated blocks) of a stream, each still terminated */
	static String firstEvents(String stream, int n) {
		StringBuilder out = new StringBuilder();
		String[] blocks = stream.split("\n\n");
		for (int i = 0; i < n; i++) {
			out.append(blocks[i]).append("\n\n");
		}
		return out.toString();
	}

	static Flux<ByteBuffer> bytes(String text) {
		return Flux.just(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
	}

	static Flux<ChatChunk> openAi(String text) {
		return SseDecoder.defaults().decode(bytes(text)).transform(OpenAiChunkCodec::decode);
	}

	static Flux<ChatChunk> anthropic(String text) {
		return SseDecoder.defaults().decode(bytes(text)).transform(AnthropicChunkCodec::decode);
	}
}
