package dev.aiguard.langchain4j;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import com.sun.net.httpserver.HttpServer;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderConnectionException;
import dev.aiguard.provider.ProviderServerException;
import dev.aiguard.provider.RateLimitedException;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.reactivestreams.Subscription;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.SignalType;
import reactor.core.scheduler.NonBlocking;
import reactor.test.StepVerifier;

import static dev.aiguard.langchain4j.MockModels.WAIT;
import static dev.aiguard.langchain4j.MockModels.await;
import static dev.aiguard.langchain4j.MockModels.awaitNoneInProgress;
import static org.assertj.core.api.Assertions.assertThat;

/** The bridge on its own: LangChain4j's real OpenAI model, over loopback HTTP, to the mock. */
class LangChain4jStreamsTest {

	@AutoClose
	private final MockModelServer mock = MockModels.startMock();

	private static ChatRequest ask(String question) {
		return ChatRequest.builder().messages(SystemMessage.from("Be brief."), UserMessage.from(question)).build();
	}

	private static String text(List<ChatChunk> chunks) {
		return chunks.stream().filter(ChatChunk::hasContent).map(ChatChunk::text).collect(Collectors.joining());
	}

	@Test
	void streamsTokensThenTheFinishReasonWithUsageThenTheTerminal() {
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAi(mock));

		List<ChatChunk> chunks = streams.stream(ask("How do breakers work?")).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("How do breakers work?"));
		assertThat(chunks).filteredOn(ChatChunk::hasContent).hasSize(MockAnswers.tokens("How do breakers work?").size());
		ChatChunk finish = chunks.get(chunks.size() - 2);
		assertThat(finish.finishReason()).isEqualTo("stop");
		assertThat(finish.usage()).isNotNull();
		assertThat(finish.usage().completionTokens()).isEqualTo(MockAnswers.tokens("How do breakers work?").size());
		assertThat(finish.usage().promptTokens()).isPositive();
		assertThat(chunks.get(chunks.size() - 1)).isEqualTo(ChatChunk.done());
		assertThat(streams.provider()).isEqualTo("openai");
	}

	@Test
	void theLibrarysRequestIsSentAsLangChain4jMessages() {
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAi(mock));
		dev.aiguard.chat.ChatRequest request = dev.aiguard.chat.ChatRequest.of(null,
				List.of(ChatMessage.system("Be brief."), ChatMessage.user("What is a lane?"),
						ChatMessage.assistant("A queue."), ChatMessage.user("And a stall?")));

		List<ChatChunk> chunks = streams.apply(request).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("And a stall?"));
		assertThat(mock.stats().requests()).isEqualTo(1);
	}

	@Test
	void aStreamCutShortCompletesWithoutTerminalThoughLangChain4jCallsItComplete() {
		mock.faults(mock.faults().withOmitTerminal(true));
		RecordingModel model = new RecordingModel(MockModels.openAi(mock));

		List<ChatChunk> chunks = LangChain4jStreams.of(model).stream(ask("Hello")).collectList().block(WAIT);

		assertThat(text(chunks)).isEqualTo(MockAnswers.text("Hello"));
		assertThat(chunks).noneMatch(c -> c.terminal() || c.finishReason() != null);
		assertThat(model.callbacks).filteredOn(c -> c.name().equals("onCompleteResponse")).singleElement()
			.satisfies(c -> assertThat(((ChatResponse) c.argument()).finishReason()).isNull());
	}

	@Test
	void cancellingBeforeTheFirstTokenClosesTheConnectionAndNothingFollowsTheCancel() {
		mock.faults(mock.faults().withStallAfter(0));
		RecordingModel model = new RecordingModel(MockModels.openAi(mock));
		SignalRecorder subscriber = new SignalRecorder();

		LangChain4jStreams.of(model).stream(ask("Hello")).subscribe(subscriber);
		await("the mock stalls before the first token", () -> mock.stats().stalled() == 1);
		subscriber.cancel();

		awaitNoneInProgress(mock);
		assertThat(mock.stats().cancelled()).isEqualTo(1);
		await("LangChain4j ends the aborted call", () -> model.ended(1));
		assertThat(model.callbacks).noneMatch(c -> c.name().equals("onPartialResponse"));
		assertThat(subscriber.signals).as("what reached the subscriber").isEmpty();
	}

	/**
	 * A server that sends the finish reason with the last token, in upper case: LangChain4j maps the
	 * token and drops the reason it cannot spell; the bridge finds it in the stream's last events.
	 */
	@ParameterizedTest
	@ValueSource(booleans = { true, false })
	void aFinishReasonSentWithTheLastTokenInUpperCaseEndsTheAnswer(boolean usageChunk) throws IOException {
		String chunk = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":";
		String body = chunk + "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n"
				+ chunk + "[{\"index\":0,\"delta\":{\"content\":\" there\"},\"finish_reason\":\"STOP\"}]}\n\n"
				+ (usageChunk ? chunk + "[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n" : "")
				+ "data: [DONE]\n\n";
		HttpServer server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
		server.createContext("/v1/chat/completions", exchange -> {
			exchange.getRequestBody().readAllBytes();
			byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
			exchange.getResponseHeaders().add("Content-Type", "text/event-stream");
			exchange.sendResponseHeaders(200, bytes.length);
			try (OutputStream out = exchange.getResponseBody()) {
				out.write(bytes);
			}
		});
		server.start();
		try {
			OpenAiStreamingChatModel model = MockModels.openAiAt(MockModels.loopback(server.getAddress().getPort()))
				.httpClientBuilder(AbortableHttpClientBuilder.create())
				.timeout(WAIT)
				.build();

			StepVerifier.create(LangChain4jStreams.of(model).stream(ask("Hello")))
				.expectNext(ChatChunk.token("Hi"), ChatChunk.token(" there"))
				.expectNextMatches(c -> "stop".equals(c.finishReason()))
				.expectNext(ChatChunk.done())
				.expectComplete()
				.verify(WAIT);
		}
		finally {
			server.stop(0);
		}
	}

	@Test
	void cancellingBeforeTheResponseHeadersCancelsTheRequest() throws IOException {
		try (ServerSocket silent = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			silent.setSoTimeout((int) WAIT.toMillis());
			// LangChain4j would give up on its own after its timeout: make that far later than the wait below
			OpenAiStreamingChatModel model = MockModels.openAiAt(MockModels.loopback(silent.getLocalPort()))
				.httpClientBuilder(AbortableHttpClientBuilder.create())
				.timeout(Duration.ofMinutes(1))
				.build();
			SignalRecorder subscriber = new SignalRecorder();

			LangChain4jStreams.of(model).stream(ask("Hello")).subscribe(subscriber);
			try (Socket connection = silent.accept()) {
				InputStream in = connection.getInputStream();
				connection.setSoTimeout((int) WAIT.toMillis());
				assertThat(in.read()).as("the request arrives").isNotEqualTo(-1);
				subscriber.cancel();
				connection.setSoTimeout(2_000);
				assertThat(readToEnd(in)).as("the client closed the connection within 2 s").isTrue();
			}
			assertThat(subscriber.signals).isEmpty();
		}
	}

	/** @return true when the peer closed, false when the wait ran out */
	private static boolean readToEnd(InputStream in) throws IOException {
		byte[] buffer = new byte[4096];
		try {
			while (in.read(buffer) >= 0) {
				// the rest of the request
			}
			return true;
		}
		catch (SocketTimeoutException e) {
			return false;
		}
	}

	@Test
	void aCancelFromANonBlockingThreadEndsTheExchangeOffThatThread() {
		mock.faults(mock.faults().withStallAfter(0));
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAi(mock));
		AtomicReference<Thread> subscribedOn = new AtomicReference<>();
		AtomicReference<Thread> cancelledOn = new AtomicReference<>();

		// subscribed from a parallel thread, cancelled by the timeout's timer on another
		Flux<ChatChunk> answer = Mono.delay(Duration.ofMillis(1))
			.doOnNext(i -> subscribedOn.set(Thread.currentThread()))
			.flatMapMany(i -> streams.stream(ask("Hello")).doOnCancel(() -> cancelledOn.set(Thread.currentThread())))
			.timeout(Duration.ofMillis(300));

		StepVerifier.create(answer).expectError(TimeoutException.class).verify(WAIT);

		assertThat(subscribedOn.get()).isInstanceOf(NonBlocking.class);
		assertThat(cancelledOn.get()).isInstanceOf(NonBlocking.class);
		awaitNoneInProgress(mock);
		assertThat(mock.stats().cancelled()).isEqualTo(1);
	}

	@Test
	void withoutTheAbortableClientCancellingAfterTheFirstTokenStillEndsTheExchange() {
		mock.faults(mock.faults().withStallAfter(2));
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAiOnDefaultClient(mock));

		StepVerifier.create(streams.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.expectNextCount(2)
			.thenCancel()
			.verify(WAIT);

		awaitNoneInProgress(mock);
		assertThat(mock.stats().cancelled()).isEqualTo(1);
	}

	@Test
	void aRateLimitKeepsItsRetryAfter() {
		mock.faults(mock.faults().withErrors(1.0, 429, 2));
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAi(mock));

		StepVerifier.create(streams.stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class, r -> {
				assertThat(r.retryAfter()).contains(Duration.ofSeconds(2));
				assertThat(r.status()).isEqualTo(429);
				assertThat(r.provider()).isEqualTo("openai");
				assertThat(r.getMessage()).contains("Rate limit reached");
			}))
			.verify(WAIT);
	}

	@Test
	void withoutTheAbortableClientARateLimitIsTypedButHasNoRetryAfter() {
		mock.faults(mock.faults().withErrors(1.0, 429, 2));
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAiOnDefaultClient(mock));

		StepVerifier.create(streams.stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(RateLimitedException.class,
					r -> assertThat(r.retryAfter()).isEmpty()))
			.verify(WAIT);
	}

	@Test
	void serverErrorsAndContextLengthErrorsAreTyped() {
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAi(mock));
		mock.faults(mock.faults().withErrors(1.0, 500, 0));
		StepVerifier.create(streams.stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderServerException.class,
					s -> assertThat(s.status()).isEqualTo(500)))
			.verify(WAIT);

		mock.faults(mock.resetFaults().withContextLimit(10));
		StepVerifier.create(streams.stream(ask("word ".repeat(40))))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ContextLengthExceededException.class, c -> {
				assertThat(c.limit()).hasValue(10);
				assertThat(c.actual().getAsInt()).isGreaterThan(10);
			}))
			.verify(WAIT);
	}

	@Test
	void aDroppedConnectionIsAConnectionErrorAfterTheTokensReceived() {
		mock.faults(mock.faults().withDropAfter(3));
		LangChain4jStreams streams = LangChain4jStreams.of(MockModels.openAi(mock));

		// the mock writes three tokens and closes; the JDK client behind LangChain4j gives up what it
		// received but had not handed over once it hears of the close, so on a busy machine fewer may
		// show: whatever shows is the answer's beginning, in order, and the end is a connection error
		List<String> answer = MockAnswers.tokens("Hello");
		List<String> shown = new CopyOnWriteArrayList<>();
		StepVerifier.create(streams.stream(ask("Hello")).filter(ChatChunk::hasContent))
			.thenConsumeWhile(c -> shown.add(c.text()))
			.expectError(ProviderConnectionException.class)
			.verify(WAIT);
		assertThat(shown).hasSizeLessThanOrEqualTo(3).isEqualTo(answer.subList(0, shown.size()));
	}

	@Test
	void aRefusedConnectionIsAConnectionError() throws IOException {
		int closedPort;
		try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			closedPort = s.getLocalPort();
		}
		OpenAiStreamingChatModel model = MockModels.openAiAt(MockModels.loopback(closedPort))
			.httpClientBuilder(AbortableHttpClientBuilder.create())
			.build();

		StepVerifier.create(LangChain4jStreams.of(model).stream(ask("Hello")))
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOfSatisfying(ProviderConnectionException.class,
					c -> assertThat(c.retryable()).isTrue()))
			.verify(WAIT);
	}

	@Test
	void eachSubscriptionIsANewCall() {
		RecordingModel model = new RecordingModel(MockModels.openAi(mock));
		Flux<ChatChunk> answer = LangChain4jStreams.of(model).stream(ask("Hello"));
		assertThat(model.calls).as("nothing is sent before subscription").isEmpty();

		assertThat(text(answer.collectList().block(WAIT))).isEqualTo(MockAnswers.text("Hello"));
		assertThat(text(answer.collectList().block(WAIT))).isEqualTo(MockAnswers.text("Hello"));

		assertThat(model.calls).hasSize(2);
		assertThat(mock.stats().requests()).isEqualTo(2);
	}

	/** Records every signal, requesting all; {@link #cancel()} marks where recording starts to matter. */
	static final class SignalRecorder extends BaseSubscriber<ChatChunk> {

		final List<String> signals = new CopyOnWriteArrayList<>();

		@Override
		protected void hookOnSubscribe(Subscription subscription) {
			subscription.request(Long.MAX_VALUE);
		}

		@Override
		protected void hookOnNext(ChatChunk value) {
			signals.add("next " + value);
		}

		@Override
		protected void hookOnComplete() {
			signals.add("complete");
		}

		@Override
		protected void hookOnError(Throwable throwable) {
			signals.add("error " + throwable);
		}

		@Override
		protected void hookFinally(SignalType type) {
			if (type != SignalType.CANCEL) {
				signals.add("finally " + type);
			}
		}
	}
}
