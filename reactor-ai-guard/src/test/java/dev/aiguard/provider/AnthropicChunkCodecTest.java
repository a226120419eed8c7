package dev.aiguard.provider;

import java.time.Duration;
import java.util.List;

import dev.aiguard.ErrorClassifier;
import dev.aiguard.core.ChunkInspector;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.chat.Usage;
import dev.aiguard.sse.SseEvent;
import dev.aiguard.stall.Stall;
import dev.aiguard.stall.StallSpec;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

class AnthropicChunkCodecTest {

	static Flux<ChatChunk> decode(SseEvent... events) {
		return Flux.just(events).transform(AnthropicChunkCodec::decode);
	}

	@Test
	void fixtureDecodesToRoleTokenPingStopReasonUsageAndDone() {
		assertThat(Fixtures.anthropic(Fixtures.ANTHROPIC_STREAM).collectList().block()).containsExactly(
				new ChatChunk("", "assistant", null, null, List.of(), false, false),
				ChatChunk.keepAlive(),
				ChatChunk.token("Hello"),
				new ChatChunk("", null, "end_turn", new Usage(25, 15), List.of(), false, false),
				ChatChunk.done());
	}

	@Test
	void overloadedErrorEventFailsWithARetryableOverload() {
		StepVerifier.create(Fixtures.anthropic(Fixtures.firstEvents(Fixtures.ANTHROPIC_STREAM, 2) + Fixtures.ANTHROPIC_OVERLOADED))
				.expectNext(new ChatChunk("", "assistant", null, null, List.of(), false, false))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderOverloadedException.class);
					ProviderException p = (ProviderException) e;
					assertThat(p.retryable()).isTrue();
					assertThat(p.inBand()).isTrue();
					assertThat(p.errorType()).isEqualTo("overloaded_error");
					assertThat(p.provider()).isEqualTo("anthropic");
					assertThat(ErrorClassifier.outcomeOf(p)).isEqualTo(dev.aiguard.core.Outcome.FAILURE);
				})
				.verify();
	}

	@Test
	void otherErrorTypesAreTypedByKind() {
		StepVerifier.create(decode(SseEvent.of("error",
				"{\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}")))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderStreamException.class);
					assertThat(((ProviderException) e).retryable()).isTrue();
				})
				.verify();
		StepVerifier.create(decode(SseEvent.of("error",
				"{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}")))
				.expectErrorSatisfies(e -> assertThat(((ProviderException) e).retryable()).isFalse())
				.verify();
	}

	@Test
	void toolUseBlocksBecomeToolCallDeltas() {
		List<ChatChunk> chunks = decode(
				SseEvent.of("content_block_start", "{\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\","
						+ "\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}"),
				SseEvent.of("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\","
						+ "\"partial_json\":\"{\\\"city\\\": \\\"Par\"}}"),
				SseEvent.of("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":1}"),
				SseEvent.of("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":40}}"))
			.collectList().block();
		assertThat(chunks).extracting(ChatChunk::toolCalls).containsExactly(
				List.of(new ToolCallDelta(1, "toolu_1", "get_weather", "")),
				List.of(new ToolCallDelta(1, null, null, "{\"city\": \"Par")),
				List.of());
		assertThat(chunks.get(2).finishReason()).isEqualTo("tool_use");
		assertThat(chunks.get(2).usage()).isEqualTo(new Usage(-1, 40));
	}

	@Test
	void thinkingIsAKeepAliveNotContent() {
		List<ChatChunk> chunks = decode(
				SseEvent.of("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}"),
				SseEvent.of("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me\"}}"),
				SseEvent.of("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"x\"}}"))
			.collectList().block();
		assertThat(chunks).containsExactly(ChatChunk.keepAlive(), ChatChunk.keepAlive(), ChatChunk.keepAlive());
		assertThat(chunks).noneMatch(AnthropicChunkCodec.inspector()::isContent);
	}

	@Test
	void unknownEventsAndDeltaTypesAreSkipped() {
		assertThat(decode(
				SseEvent.of("brand_new_event", "{\"type\":\"brand_new_event\",\"x\":1}"),
				SseEvent.of("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{}}}"),
				SseEvent.of("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\",\"extra\":true}}"))
			.collectList().block()).containsExactly(ChatChunk.token("ok"));
	}

	@Test
	void payloadTypeIsUsedWhenTheEventLineIsMissing() {
		assertThat(decode(SseEvent.message("{\"type\":\"message_stop\"}")).collectList().block())
				.containsExactly(ChatChunk.done());
	}

	@Test
	void malformedJsonNamesTheEvent() {
		StepVerifier.create(decode(SseEvent.comment("hi"), SseEvent.of("content_block_delta", "{\"type\":")))
				.expectNext(ChatChunk.keepAlive())
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProviderFormatException.class)
						.hasMessageContaining("anthropic event #2 (event: content_block_delta)"))
				.verify();
	}

	@Test
	void inputTokensAreRememberedPerSubscription() {
		Flux<ChatChunk> decoded = decode(
				SseEvent.of("message_start", "{\"type\":\"message_start\",\"message\":{\"role\":\"assistant\",\"usage\":{\"input_tokens\":7}}}"),
				SseEvent.of("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}"));
		assertThat(decoded.collectList().block().get(1).usage()).isEqualTo(new Usage(7, 3));
		assertThat(decoded.collectList().block().get(1).usage()).isEqualTo(new Usage(7, 3));
		assertThat(decode(SseEvent.of("message_delta", "{\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},"
				+ "\"usage\":{\"input_tokens\":9,\"output_tokens\":3}}")).blockLast().usage()).isEqualTo(new Usage(9, 3));
	}

	@Test
	void inspectorIsTheChatChunkInspector() {
		assertThat(AnthropicChunkCodec.inspector()).isSameAs(ChatChunk.inspector());
	}

	@Test
	void stallWatchSeesTheFixtureAsComplete() {
		StepVerifier.withVirtualTime(() -> Fixtures.anthropic(Fixtures.ANTHROPIC_STREAM)
						.transform(Stall.detect(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1)),
								AnthropicChunkCodec.inspector())))
				.expectNextCount(5)
				.verifyComplete();
	}

	@Test
	void fieldsMayComeInAnyOrderAndNestedUnknownValuesAreSkipped() {
		List<ChatChunk> chunks = decode(
				SseEvent.message("{\"delta\":{\"citations\":[{\"a\":{\"b\":[]}}],\"text\":\"Hi\",\"type\":\"text_delta\"},"
						+ "\"index\":0,\"type\":\"content_block_delta\"}"),
				SseEvent.message("{\"content_block\":{\"name\":\"t\",\"input\":{\"deep\":[{}]},\"id\":\"toolu_9\",\"type\":\"tool_use\"},"
						+ "\"index\":\"2\",\"type\":\"content_block_start\"}"),
				SseEvent.message("{\"usage\":{\"output_tokens\":4,\"cache\":{\"x\":1}},\"delta\":{\"stop_reason\":\"end_turn\"},"
						+ "\"type\":\"message_delta\"}"))
			.collectList().block();
		assertThat(chunks).containsExactly(ChatChunk.token("Hi"),
				new ChatChunk("", null, null, null, List.of(new ToolCallDelta(2, "toolu_9", "t", "")), false, false),
				new ChatChunk("", null, "end_turn", new Usage(-1, 4), List.of(), false, false));
	}

	@Test
	void anErrorEventWithoutAnErrorObjectIsReadFromTheEventItself() {
		StepVerifier.create(decode(SseEvent.of("error", "{\"message\":\"slow down\",\"type\":\"overloaded_error\"}")))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderOverloadedException.class).hasMessageContaining("slow down");
					assertThat(((ProviderException) e).errorType()).isEqualTo("overloaded_error");
				})
				.verify();
		StepVerifier.create(decode(SseEvent.of("error", "{\"type\":\"error\",\"request_id\":\"r\",\"error\":{\"details\":[1,{}],"
				+ "\"type\":\"api_error\",\"message\":\"late\"}}")))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProviderStreamException.class).hasMessageContaining("late"))
				.verify();
	}

	@Test
	void emptyOrNonObjectDataNamesTheEvent() {
		StepVerifier.create(decode(SseEvent.of("content_block_delta", "")))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProviderFormatException.class)
						.hasMessageContaining("anthropic event #1").hasMessageContaining("not a JSON object"))
				.verify();
		StepVerifier.create(decode(SseEvent.of("content_block_delta", "[{\"type\":\"text_delta\"}]")))
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("not a JSON object"))
				.verify();
	}
}
