package dev.aiguard.provider;

import java.time.Duration;
import java.util.List;

import dev.aiguard.core.ChunkInspector;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.chat.Usage;
import dev.aiguard.sse.SseEvent;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.Stall;
import dev.aiguard.core.StallPhase;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

class OpenAiChunkCodecTest {

	static Flux<ChatChunk> decode(SseEvent... events) {
		return Flux.just(events).transform(OpenAiChunkCodec::decode);
	}

	@Test
	void fixtureDecodesToRoleTokensFinishUsageAndDone() {
		assertThat(Fixtures.openAi(Fixtures.OPENAI_STREAM).collectList().block()).isEqualTo(Fixtures.OPENAI_CHUNKS);
	}

	@Test
	void toolCallDeltasArePreserved() {
		String first = "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,"
				+ "\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}";
		String next = "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\"}}]},"
				+ "\"finish_reason\":null}]}";
		String second = "{\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"call_2\",\"function\":{\"name\":\"t\","
				+ "\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}";
		List<ChatChunk> chunks = decode(SseEvent.message(first), SseEvent.message(next), SseEvent.message(second))
			.collectList().block();
		assertThat(chunks).extracting(ChatChunk::toolCalls).containsExactly(
				List.of(new ToolCallDelta(0, "call_1", "get_weather", "")),
				List.of(new ToolCallDelta(0, null, null, "{\"city\":")),
				List.of(new ToolCallDelta(1, "call_2", "t", "{}")));
		assertThat(chunks.get(0).role()).isEqualTo("assistant");
		assertThat(chunks.get(2).finishReason()).isEqualTo("tool_calls");
		assertThat(chunks).allMatch(c -> OpenAiChunkCodec.inspector().isContent(c));
	}

	@Test
	void inBandErrorFailsWithARetryableStreamException() {
		StepVerifier.create(Fixtures.openAi(Fixtures.firstEvents(Fixtures.OPENAI_STREAM, 2) + Fixtures.OPENAI_IN_BAND_ERROR))
				.expectNextCount(2)
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderStreamException.class);
					ProviderException p = (ProviderException) e;
					assertThat(p.errorType()).isEqualTo("server_error");
					assertThat(p.retryable()).isTrue();
					assertThat(p.provider()).isEqualTo("openai");
					assertThat(p.getMessage()).contains("The server had an error");
				})
				.verify();
	}

	@Test
	void malformedJsonNamesTheEventAndFails() {
		StepVerifier.create(decode(SseEvent.message("{\"choices\":[]}"),
				new SseEvent("message", "{\"choices\":[{\"delta\":{\"content\":\"x\"", "evt-7", null, null)))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProviderFormatException.class)
						.hasMessageContaining("openai event #2")
						.hasMessageContaining("id: evt-7")
						.hasMessageContaining("malformed JSON")
						.hasMessageContaining("{\"choices\":[{\"delta\""))
				.verify();
		StepVerifier.create(decode(SseEvent.message("[1,2]")))
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("not a JSON object"))
				.verify();
	}

	@Test
	void unknownFieldsAreIgnoredAndEmptyChunksSkipped() {
		String future = "{\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\",\"audio\":{\"id\":\"a\"}},\"logprobs\":{\"content\":[]},"
				+ "\"finish_reason\":null,\"new_field\":42}],\"system_fingerprint\":\"fp\",\"service_tier\":\"default\"}";
		String azureFilter = "{\"choices\":[],\"prompt_filter_results\":[{\"prompt_index\":0}]}";
		String emptyDelta = "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":null}]}";
		assertThat(decode(SseEvent.message(azureFilter), SseEvent.message(future), SseEvent.message(emptyDelta))
			.collectList().block()).containsExactly(ChatChunk.token("hi"));
	}

	@Test
	void commentsAndReasoningDeltasAreKeepAlivesNotContent() {
		String reasoning = "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"thinking...\"},\"finish_reason\":null}]}";
		List<ChatChunk> chunks = decode(SseEvent.comment("keep-alive"), SseEvent.message(reasoning)).collectList().block();
		assertThat(chunks).containsExactly(ChatChunk.keepAlive(), ChatChunk.keepAlive());
		ChunkInspector<ChatChunk> inspector = OpenAiChunkCodec.inspector();
		assertThat(inspector.isHeartbeat(chunks.get(0))).isTrue();
		assertThat(inspector.isContent(chunks.get(0))).isFalse();
	}

	@Test
	void onlyTheFirstChoiceCounts() {
		String twoChoices = "{\"choices\":[{\"index\":1,\"delta\":{\"content\":\"B\"}},{\"index\":0,\"delta\":{\"content\":\"A\"}}]}";
		assertThat(decode(SseEvent.message(twoChoices)).collectList().block()).containsExactly(ChatChunk.token("A"));
	}

	@Test
	void usageOnTheLastContentChunkIsKept() {
		String combined = "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}";
		assertThat(decode(SseEvent.message(combined)).collectList().block())
				.containsExactly(new ChatChunk("", null, "length", new Usage(5, 7), List.of(), false, false));
	}

	@Test
	void inspectorIsTheChatChunkInspector() {
		assertThat(OpenAiChunkCodec.inspector()).isSameAs(ChatChunk.inspector());
		assertThat(OpenAiChunkCodec.inspector().isTerminal(ChatChunk.done())).isTrue();
	}

	@Test
	void stallWatchSeesTheFixtureAsComplete() {
		StepVerifier.withVirtualTime(() -> Fixtures.openAi(Fixtures.OPENAI_STREAM)
						.transform(Stall.detect(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(1)),
								OpenAiChunkCodec.inspector())))
				.expectNextSequence(Fixtures.OPENAI_CHUNKS)
				.verifyComplete();
	}

	@Test
	void stallWatchFailsAStreamCutBeforeFinishAndDone() {
		String cut = Fixtures.firstEvents(Fixtures.OPENAI_STREAM, 3);
		StepVerifier.withVirtualTime(() -> Fixtures.openAi(cut)
						.transform(Stall.detect(StallSpec.defaults(), OpenAiChunkCodec.inspector())))
				.expectNext(Fixtures.OPENAI_CHUNKS.get(0), Fixtures.OPENAI_CHUNKS.get(1), Fixtures.OPENAI_CHUNKS.get(2))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IncompleteStreamException.class))
				.verify();
	}

	@Test
	void keepAlivesDoNotHoldOffTheFirstTokenDeadline() {
		StepVerifier.withVirtualTime(() -> Flux.interval(Duration.ofSeconds(1)).map(i -> SseEvent.comment("keep-alive"))
						.transform(OpenAiChunkCodec::decode)
						.transform(Stall.detect(StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5)),
								OpenAiChunkCodec.inspector())))
				.expectSubscription()
				.thenAwait(Duration.ofMillis(5_001))
				.thenConsumeWhile(OpenAiChunkCodec.inspector()::isHeartbeat)
				.expectErrorSatisfies(e -> assertThat(((StreamStalledException) e).phase()).isEqualTo(StallPhase.FIRST_TOKEN))
				.verify(Duration.ofSeconds(5));
	}

	@Test
	void nestedUnknownValuesAreSkippedAndFieldsMayComeInAnyOrder() {
		String nested = "{\"x\":{\"a\":[1,{\"b\":[[],{}]},\"s\"],\"n\":null},\"choices\":[{\"delta\":{\"extra\":[{\"deep\":{\"k\":[1.5]}}],"
				+ "\"content\":\"B\"},\"index\":1},{\"finish_reason\":null,\"delta\":{\"content\":\"A\",\"audio\":{\"a\":[]}},\"index\":0},"
				+ "{\"index\":0,\"delta\":{\"content\":\"C\"}}],\"tail\":[[[]]]}";
		assertThat(decode(SseEvent.message(nested)).collectList().block()).containsExactly(ChatChunk.token("A"));
	}

	@Test
	void anErrorObjectAfterOtherFieldsStillFailsTheStreamAndNothingIsEmitted() {
		String late = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}],\"usage\":{\"prompt_tokens\":1},"
				+ "\"error\":{\"extra\":{\"a\":[1]},\"message\":\"boom\",\"type\":\"server_error\",\"code\":null}}";
		StepVerifier.create(decode(SseEvent.message(late)))
				.expectErrorSatisfies(e -> {
					assertThat(e).isInstanceOf(ProviderStreamException.class).hasMessageContaining("boom");
					assertThat(((ProviderException) e).errorType()).isEqualTo("server_error");
					assertThat(((ProviderException) e).errorCode()).isNull();
				})
				.verify();
	}

	@Test
	void anErrorWithoutAMessageIsDescribedByItsJsonAndANullErrorIsNoError() {
		StepVerifier.create(decode(SseEvent.message("{\"error\":{\"type\":\"server_error\",\"code\":503}}")))
				.expectErrorSatisfies(e -> {
					assertThat(e).hasMessageContaining("{\"type\":\"server_error\",\"code\":503}");
					assertThat(((ProviderException) e).errorCode()).isEqualTo("503");
				})
				.verify();
		StepVerifier.create(decode(SseEvent.message("{\"error\":\"plain text\"}")))
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("plain text"))
				.verify();
		assertThat(decode(SseEvent.message("{\"error\":null,\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}")).collectList().block())
				.containsExactly(ChatChunk.token("ok"));
	}

	@Test
	void dataThatBreaksAfterAnErrorObjectIsMalformedNotAnError() {
		StepVerifier.create(decode(SseEvent.message("{\"error\":{\"message\":\"boom\"},\"choices\":[")))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProviderFormatException.class)
						.hasMessageContaining("openai event #1").hasMessageContaining("malformed JSON"))
				.verify();
		StepVerifier.create(decode(SseEvent.message("{\"skipped\":\"bad \\q escape\",\"choices\":[]}")))
				.expectError(ProviderFormatException.class)
				.verify();
		StepVerifier.create(decode(SseEvent.message("\"just a string\"")))
				.expectErrorSatisfies(e -> assertThat(e).hasMessageContaining("not a JSON object"))
				.verify();
	}

	@Test
	void numbersAsStringsAreReadAsTheTreeReadThem() {
		String strings = "{\"choices\":[{\"index\":\"0\",\"delta\":{\"content\":7,\"tool_calls\":[{\"index\":\"3\",\"id\":\"c\","
				+ "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},\"not an object\"]},\"finish_reason\":\"stop\"}],"
				+ "\"usage\":{\"prompt_tokens\":\"5\",\"completion_tokens\":2.0}}";
		assertThat(decode(SseEvent.message(strings)).collectList().block()).containsExactly(new ChatChunk("7", null, "stop",
				new Usage(-1, 2), List.of(new ToolCallDelta(0, "c", "f", "{}"), new ToolCallDelta(1, null, null, "")), false, false));
	}

	@Test
	void refusalIsTheTextWhenThereIsNoContentAndAnEmptyToolCallListIsNone() {
		String refusal = "{\"choices\":[{\"index\":0,\"delta\":{\"content\":null,\"refusal\":\"no\",\"tool_calls\":[]}}]}";
		String reasoningOnly = "{\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\"hm\",\"reasoning_content\":null}}]}";
		assertThat(decode(SseEvent.message(refusal), SseEvent.message(reasoningOnly)).collectList().block())
				.containsExactly(ChatChunk.token("no"), ChatChunk.keepAlive());
	}

	@Test
	void whatFollowsAnEventsObjectIsIgnoredAndNeverReachesTheNextEvent() {
		String a = "{\"choices\":[{\"delta\":{\"content\":\"a\"}}]}";
		String b = "{\"choices\":[{\"delta\":{\"content\":\"b\"}}]}";
		assertThat(decode(SseEvent.message(a + " \n"), SseEvent.message(a + " x"), SseEvent.message(b + "{\"choices\":["),
				SseEvent.message(a + b), SseEvent.message(b)).collectList().block())
			.containsExactly(ChatChunk.token("a"), ChatChunk.token("a"), ChatChunk.token("b"), ChatChunk.token("a"),
					ChatChunk.token("b"));
	}

	@Test
	void aStreamThatFailedMidEventLeavesNothingBehindForTheNextStreamOnTheThread() {
		String good = "{\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}";
		for (String broken : List.of("{\"choices\":[{\"delta\":{\"content\":\"x", "{\"error\":{\"message\":\"m\"}}", "7", "")) {
			StepVerifier.create(decode(SseEvent.message(good), SseEvent.message(broken.isEmpty() ? "{" : broken)))
					.expectNext(ChatChunk.token("ok"))
					.expectError()
					.verify();
			assertThat(decode(SseEvent.message(good), SseEvent.message(good)).collectList().block())
					.containsExactly(ChatChunk.token("ok"), ChatChunk.token("ok"));
		}
	}

	@Test
	void eventsLongerThanTheParsersBufferDecodeWhole() {
		String text = "x".repeat(20_000);
		String big = "{\"pad\":\"" + "p".repeat(9_000) + "\",\"choices\":[{\"delta\":{\"content\":\"" + text + "\"}}]}";
		assertThat(decode(SseEvent.message(big), SseEvent.message(big + "   ")).collectList().block())
				.containsExactly(ChatChunk.token(text), ChatChunk.token(text));
	}
}
