package dev.aiguard.langchain4j;

import java.io.IOException;
import java.net.http.HttpTimeoutException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.chat.Usage;
import dev.aiguard.core.Secrets;
import dev.aiguard.provider.ProviderClientException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderOverloadedException;
import dev.aiguard.provider.ProviderStreamException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitedException;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.HttpException;
import dev.langchain4j.exception.InternalServerException;
import dev.langchain4j.exception.RateLimitException;
import dev.langchain4j.exception.TimeoutException;
import dev.langchain4j.exception.UnresolvedModelServerException;
import dev.langchain4j.exception.UnsupportedFeatureException;
import dev.langchain4j.http.client.sse.ServerSentEvent;
import dev.langchain4j.model.ModelProvider;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.PartialThinking;
import dev.langchain4j.model.chat.response.PartialToolCall;
import dev.langchain4j.model.chat.response.StreamingHandle;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

import static dev.aiguard.langchain4j.MockModels.WAIT;
import static dev.aiguard.langchain4j.MockModels.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What each LangChain4j callback becomes, with scripted models (no HTTP). */
class StreamBridgeTest {

	private static final ChatRequest REQUEST = ChatRequest.builder().messages(UserMessage.from("Hi")).build();

	private static ChatResponse response(FinishReason reason, TokenUsage usage) {
		return ChatResponse.builder().aiMessage(AiMessage.from("done")).finishReason(reason).tokenUsage(usage).build();
	}

	private static PartialToolCall partial(int index, String id, String name, String arguments) {
		return PartialToolCall.builder().index(index).id(id).name(name).partialArguments(arguments).build();
	}

	private static ChatChunk delta(int index, String id, String name, String arguments) {
		return new ChatChunk("", null, null, null, List.of(new ToolCallDelta(index, id, name, arguments)), false, false);
	}

	@Test
	void toolCallDeltasNameTheCallOnItsFirstDeltaOnly() {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onPartialToolCall(partial(0, "call_1", "weather", "{\"ci"));
			h.onPartialToolCall(partial(0, "call_1", "weather", "ty\":\"Paris\"}"));
			h.onPartialToolCall(partial(1, "call_2", "time", "{}"));
			h.onCompleteToolCall(new CompleteToolCall(0,
					ToolExecutionRequest.builder().id("call_1").name("weather").arguments("{\"city\":\"Paris\"}").build()));
			h.onCompleteToolCall(new CompleteToolCall(1,
					ToolExecutionRequest.builder().id("call_2").name("time").arguments("{}").build()));
			h.onCompleteResponse(response(FinishReason.TOOL_EXECUTION, new TokenUsage(12, 7)));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(delta(0, "call_1", "weather", "{\"ci"))
			.expectNext(delta(0, null, null, "ty\":\"Paris\"}"))
			.expectNext(delta(1, "call_2", "time", "{}"))
			.expectNext(new ChatChunk("", null, "tool_calls", new Usage(12, 7), List.of(), false, false))
			.expectNext(ChatChunk.done())
			.verifyComplete();
	}

	@Test
	void aToolCallThatNeverStreamedIsOneDeltaWithAllItsArguments() {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onCompleteToolCall(new CompleteToolCall(0,
					ToolExecutionRequest.builder().id("call_9").name("search").arguments("{\"q\":\"x\"}").build()));
			h.onCompleteResponse(response(FinishReason.TOOL_EXECUTION, null));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(delta(0, "call_9", "search", "{\"q\":\"x\"}"))
			.expectNextMatches(c -> "tool_calls".equals(c.finishReason()) && c.usage() == null)
			.expectNext(ChatChunk.done())
			.verifyComplete();
	}

	@Test
	void thinkingIsASignOfLifeNotContentAndEmptyTextIsSkipped() {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onPartialThinking(new PartialThinking("hmm"));
			h.onPartialResponse("");
			h.onPartialResponse("Hi");
			h.onCompleteResponse(response(FinishReason.STOP, null));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(ChatChunk.keepAlive())
			.expectNext(ChatChunk.token("Hi"))
			.expectNext(ChatChunk.finish("stop"))
			.expectNext(ChatChunk.done())
			.verifyComplete();
	}

	@ParameterizedTest
	@CsvSource({ "STOP, stop", "LENGTH, length", "TOOL_EXECUTION, tool_calls", "CONTENT_FILTER, content_filter",
			"OTHER, other" })
	void finishReasonsBecomeTheLowerCaseWireNames(FinishReason reason, String wireName) {
		ScriptedModel model = new ScriptedModel(h -> h.onCompleteResponse(response(reason, null)));

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNextMatches(c -> wireName.equals(c.finishReason()) && !c.hasContent())
			.expectNext(ChatChunk.done())
			.verifyComplete();
	}

	@Test
	void aCompletionWithoutFinishReasonPassesTheUsageOnAndEndsWithoutTerminal() {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onPartialResponse("Hel");
			h.onCompleteResponse(response(null, new TokenUsage(5, null)));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(ChatChunk.token("Hel"))
			.expectNext(ChatChunk.usage(new Usage(5, -1)))
			.verifyComplete();
	}

	@Test
	void aCompletionAfterAnErrorIsIgnored() {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onPartialResponse("a");
			h.onError(new IOException("closed"));
			h.onCompleteResponse(response(null, null));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(ChatChunk.token("a"))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(ProviderConnectionException.class)
				.hasCauseInstanceOf(IOException.class))
			.verifyThenAssertThat()
			.hasNotDroppedElements()
			.hasNotDroppedErrors();
	}

	@Test
	void anErrorAfterTheCompletionIsDropped() {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onCompleteResponse(response(FinishReason.STOP, null));
			h.onError(new IllegalStateException("late"));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNextCount(2)
			.verifyComplete();
		// the model is called on the subscribing thread: its late error is dropped before the verification
		// ends (on boundedElastic it could come after, when the verifier no longer collects drops)
		StepVerifier.create(onTheSubscribingThread(model).stream(REQUEST))
			.expectNextCount(2)
			.expectComplete()
			.verifyThenAssertThat()
			.hasDroppedErrorsSatisfying(errors -> assertThat(errors).singleElement()
				.satisfies(e -> assertThat(e).hasMessage("late")));
	}

	@Test
	void anErrorAfterTheCompletionIsDroppedTypedAndScrubbed() {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onCompleteResponse(response(FinishReason.STOP, null));
			h.onError(new HttpException(401, "{\"error\":{\"message\":\"Incorrect API key provided: sk-live-abcdef123456.\"}}"));
		});

		// the model is called on the subscribing thread: its late error is dropped before the verification
		// ends (on boundedElastic it could come after, when the verifier no longer collects drops)
		StepVerifier.create(onTheSubscribingThread(model).stream(REQUEST))
			.expectNextCount(2)
			.expectComplete()
			.verifyThenAssertThat()
			.hasDroppedErrorsSatisfying(errors -> assertThat(errors).singleElement()
				.satisfies(e -> assertThat(e).isInstanceOf(ProviderClientException.class)
					.hasMessageContaining(Secrets.REDACTED)
					.hasMessageNotContaining("sk-live")));
	}

	@Test
	void aModelThatThrowsEndsTheStreamWithItsError() {
		ScriptedModel model = new ScriptedModel(h -> {
			throw new IllegalArgumentException("bad parameter");
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectErrorMessage("bad parameter")
			.verify(WAIT);
	}

	@Test
	void langChain4jErrorsBecomeTypedProviderErrors() {
		assertError(new RateLimitException(new HttpException(429, "{\"error\":{\"message\":\"slow down\",\"type\":\"requests\"}}")),
				e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class, r -> {
					assertThat(r.status()).isEqualTo(429);
					assertThat(r.getMessage()).contains("slow down");
					assertThat(r.retryAfter()).as("no exchange saw the headers").isEmpty();
				}));
		assertError(new InternalServerException(new HttpException(503, "unavailable")),
				e -> assertThat(e).isInstanceOfSatisfying(ProviderServerException.class,
						s -> assertThat(s.status()).isEqualTo(503)));
		assertError(new TimeoutException(new HttpTimeoutException("request timed out")),
				e -> assertThat(e).isInstanceOf(ProviderConnectionException.class).hasMessageContaining("no response in time"));
		assertError(new UnresolvedModelServerException("nowhere"),
				e -> assertThat(e).isInstanceOf(ProviderConnectionException.class));
		IllegalStateException other = new IllegalStateException("a bug");
		assertError(other, e -> assertThat(e).isSameAs(other));
	}

	@Test
	void anErrorEventLangChain4jReportsWithItsDataAsMessageIsTyped() {
		assertError(new RuntimeException("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"),
				e -> assertThat(e).isInstanceOfSatisfying(ProviderOverloadedException.class, o -> {
					assertThat(o.inBand()).isTrue();
					assertThat(o.getMessage()).contains("Overloaded");
				}));
		RuntimeException notAnEvent = new RuntimeException("{\"note\":\"no error here\"}");
		assertError(notAnEvent, e -> assertThat(e).isSameAs(notAnEvent));
	}

	@Test
	void anUnmappedErrorEventEndsTheStreamAndTheCompletionAfterItIsIgnored() {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onPartialResponse("Hi");
			h.onUnmappedRawEvent(new ServerSentEvent(null,
					"{\"error\":{\"message\":\"Incorrect API key provided: sk-live-abcdef123456.\",\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}"));
			h.onCompleteResponse(response(null, null));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(ChatChunk.token("Hi"))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderStreamException.class, s -> {
				assertThat(s.errorType()).isEqualTo("invalid_request_error");
				assertThat(s.errorCode()).isEqualTo("invalid_api_key");
				assertThat(s.retryable()).isFalse();
				assertThat(s.getMessage()).doesNotContain("sk-live").contains(Secrets.REDACTED);
			}))
			.verifyThenAssertThat()
			.hasNotDroppedErrors();
	}

	@ParameterizedTest
	@CsvSource({ "STOP, stop", "Length, length", "CONTENT_FILTER, content_filter", "TOOL_CALLS, tool_calls",
			"end_turn, end_turn" })
	void aFinishReasonLangChain4jCouldNotReadIsTakenFromItsUnmappedEvent(String sent, String wireName) {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onPartialResponse("Hi");
			h.onUnmappedRawEvent(new ServerSentEvent(null,
					"{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"" + sent + "\"}]}"));
			h.onUnmappedRawEvent(new ServerSentEvent(null, "{\"choices\":[],\"usage\":{\"prompt_tokens\":3}}"));
			h.onCompleteResponse(response(null, null));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(ChatChunk.token("Hi"))
			.expectNext(ChatChunk.finish(wireName))
			.expectNext(ChatChunk.done())
			.verifyComplete();
	}

	@Test
	void langChain4jsOwnFinishReasonWinsOverTheRawEvent() {
		ScriptedModel model = new ScriptedModel(h -> {
			h.onUnmappedRawEvent(new ServerSentEvent(null, "{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\"}]}"));
			h.onCompleteResponse(response(FinishReason.LENGTH, null));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(ChatChunk.finish("length"))
			.expectNext(ChatChunk.done())
			.verifyComplete();
	}

	private static void assertError(Throwable langChain4jError, java.util.function.Consumer<Throwable> check) {
		ScriptedModel model = new ScriptedModel(h -> h.onError(langChain4jError));
		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST)).expectErrorSatisfies(check).verify(WAIT);
	}

	@Test
	void chunksFromAForeignThreadWaitForDemand() {
		int tokens = 500;
		ScriptedModel model = new ScriptedModel(h -> CompletableFuture.runAsync(() -> {
			for (int i = 0; i < tokens; i++) {
				h.onPartialResponse("t" + i + " ");
			}
			h.onCompleteResponse(response(FinishReason.STOP, null));
		}));

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST), 0)
			.thenRequest(1)
			.expectNext(ChatChunk.token("t0 "))
			.thenRequest(Long.MAX_VALUE)
			.expectNextCount(tokens - 1)
			.expectNext(ChatChunk.finish("stop"), ChatChunk.done())
			.verifyComplete();
	}

	@Test
	void theModelIsCalledOnBoundedElasticUnlessAnotherSchedulerIsSet() {
		ScriptedModel model = new ScriptedModel(h -> h.onCompleteResponse(response(FinishReason.STOP, null)));

		LangChain4jStreams.of(model).stream(REQUEST).blockLast(WAIT);
		LangChain4jStreams.builder(model).scheduler(Schedulers.immediate()).build().stream(REQUEST).blockLast(WAIT);

		assertThat(model.threads.get(0)).startsWith("boundedElastic");
		assertThat(model.threads.get(1)).isEqualTo(Thread.currentThread().getName());
	}

	@Test
	void aSchedulerThatRefusesTheCallEndsTheStreamWithTheRejection() {
		ScriptedModel model = new ScriptedModel(h -> h.onCompleteResponse(response(FinishReason.STOP, null)));
		Scheduler closed = Schedulers.newSingle("closed");
		closed.dispose();

		StepVerifier.create(LangChain4jStreams.builder(model).scheduler(closed).build().stream(REQUEST))
			.expectError(RejectedExecutionException.class)
			.verify(WAIT);
		assertThat(model.threads).isEmpty();
	}

	@Test
	void withoutAnHttpExchangeACancelStopsLangChain4jsHandle() {
		AtomicInteger cancels = new AtomicInteger();
		StreamingHandle handle = new StreamingHandle() {
			@Override
			public void cancel() {
				cancels.incrementAndGet();
			}

			@Override
			public boolean isCancelled() {
				return cancels.get() > 0;
			}
		};
		ScriptedModel model = new ScriptedModel(
				h -> h.onPartialResponse(new PartialResponse("first"), new PartialResponseContext(handle)));

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(ChatChunk.token("first"))
			.thenCancel()
			.verify(WAIT);

		await("the handle is cancelled", () -> cancels.get() == 1);
	}

	@Test
	void aHandleThatRefusesCancellationStillEndsTheSubscription() {
		StreamingHandle refusing = new StreamingHandle() {
			@Override
			public void cancel() {
				throw new UnsupportedFeatureException("no cancellation here");
			}

			@Override
			public boolean isCancelled() {
				return false;
			}
		};
		ScriptedModel model = new ScriptedModel(h -> {
			h.onPartialResponse(new PartialResponse("first"), new PartialResponseContext(refusing));
		});

		StepVerifier.create(LangChain4jStreams.of(model).stream(REQUEST))
			.expectNext(ChatChunk.token("first"))
			.thenCancel()
			.verifyThenAssertThat(WAIT)
			.hasNotDroppedErrors();
	}

	@Test
	void theProviderNameComesFromTheModelUnlessSet() {
		assertThat(LangChain4jStreams.of(new ScriptedModel(ModelProvider.OPEN_AI, h -> {
		})).provider()).isEqualTo("openai");
		assertThat(LangChain4jStreams.of(new ScriptedModel(ModelProvider.ANTHROPIC, h -> {
		})).provider()).isEqualTo("anthropic");
		assertThat(LangChain4jStreams.of(new ScriptedModel(ModelProvider.GOOGLE_AI_GEMINI, h -> {
		})).provider()).isEqualTo("google-ai-gemini");
		assertThat(LangChain4jStreams.of(new ScriptedModel(null, h -> {
		})).provider()).isEqualTo("langchain4j");
		assertThat(LangChain4jStreams.builder(new ScriptedModel(h -> {
		})).provider("vllm").build().provider()).isEqualTo("vllm");
		assertThatThrownBy(() -> LangChain4jStreams.builder(new ScriptedModel(h -> {
		})).provider(" ")).isInstanceOf(IllegalArgumentException.class).hasMessage("provider must not be blank, was ' '");
	}

	@Test
	void nothingIsCalledBeforeSubscription() {
		ScriptedModel model = new ScriptedModel(h -> h.onCompleteResponse(response(FinishReason.STOP, null)));
		LangChain4jStreams streams = LangChain4jStreams.of(model);

		streams.stream(REQUEST);
		streams.apply(dev.aiguard.chat.ChatRequest.of(null, List.of(dev.aiguard.chat.ChatMessage.user("Hi"))));

		assertThat(model.threads).isEmpty();
	}

	private static LangChain4jStreams onTheSubscribingThread(ScriptedModel model) {
		return LangChain4jStreams.builder(model).scheduler(Schedulers.immediate()).build();
	}
}
