package dev.aiguard.langchain4j;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.provider.ProviderException;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import reactor.core.publisher.Flux;

/**
 * The mock model server and LangChain4j's real OpenAI model talking to it over loopback. A test
 * takes a mock of its own, closed after it:
 *
 * <pre>{@code
 * @AutoClose
 * private final MockModelServer mock = MockModels.startMock();
 * }</pre>
 */
final class MockModels {

	/** The longest any wait on real HTTP may take before a test fails. */
	static final Duration WAIT = Duration.ofSeconds(10);

	private static final AtomicBoolean WARM = new AtomicBoolean();

	private MockModels() {
	}

	/**
	 * One full answer, one error answer and two guarded stalls (first token, idle) through LangChain4j
	 * and the mock, once per JVM: the first of each loads (and has BlockHound instrument) the classes
	 * of the mock server, LangChain4j, the JDK HTTP client, the error classification and the guard's
	 * stall path, which takes from a few hundred milliseconds to seconds that would otherwise land in
	 * the first test's deadlines.
	 */
	static void warmUp() {
		if (!WARM.compareAndSet(false, true)) {
			return;
		}
		try (MockModelServer mock = newMock()) {
			dev.langchain4j.model.chat.request.ChatRequest request = dev.langchain4j.model.chat.request.ChatRequest
				.builder()
				.messages(UserMessage.from("warm up"))
				.build();
			LangChain4jStreams streams = LangChain4jStreams.of(openAi(mock));
			streams.stream(request).blockLast(Duration.ofSeconds(60));
			mock.faults(mock.faults().withErrors(1.0, 429, 1));
			streams.stream(request).onErrorComplete(ProviderException.class).blockLast(Duration.ofSeconds(60));
			GuardPolicy stalls = GuardPolicy.builder("warm-up")
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofMillis(300)).idleTimeout(Duration.ofMillis(300)))
				.retry(RetryRules.none())
				.build();
			dev.aiguard.chat.ChatRequest ask = dev.aiguard.chat.ChatRequest.of(null, List.of(ChatMessage.user("warm up")));
			for (int tokens : new int[] { 0, 1 }) {
				mock.faults(mock.defaultFaults().withStallAfter(tokens));
				AiGuard.of(stalls).call(ask, streams).onErrorComplete().blockLast(Duration.ofSeconds(60));
			}
		}
	}

	/**
	 * @return a mock answering at once, 5 ms between tokens, no errors drawn unless the rate is 1;
	 *         the JVM warmed up first ({@link #warmUp()})
	 */
	static MockModelServer startMock() {
		warmUp();
		return newMock();
	}

	private static MockModelServer newMock() {
		return MockModelServer.builder().faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(5)))
			.random(() -> 0.0).start();
	}

	/** @return LangChain4j's OpenAI streaming model on the bridge's abortable HTTP client */
	static OpenAiStreamingChatModel openAi(MockModelServer mock) {
		return openAi(mock, AbortableHttpClientBuilder.create());
	}

	/** @return LangChain4j's OpenAI streaming model on its default HTTP client */
	static OpenAiStreamingChatModel openAiOnDefaultClient(MockModelServer mock) {
		return openAiAt(mock.baseUrl()).timeout(WAIT).build();
	}

	static OpenAiStreamingChatModel openAi(MockModelServer mock, AbortableHttpClientBuilder http) {
		return openAiAt(mock.baseUrl()).httpClientBuilder(http).timeout(WAIT).build();
	}

	/**
	 * @return a builder of LangChain4j's OpenAI streaming model for the server at {@code baseUrl}, with
	 *         the mock's model name and a test key; HTTP client and timeout as LangChain4j's defaults
	 */
	static OpenAiStreamingChatModel.OpenAiStreamingChatModelBuilder openAiAt(String baseUrl) {
		return OpenAiStreamingChatModel.builder().baseUrl(baseUrl).apiKey("sk-test").modelName(MockModelServer.MODEL);
	}

	/**
	 * @param words how many times each earlier turn repeats its filler word
	 * @return a conversation of a system prompt, six earlier exchanges of about {@code words} tokens
	 *         each, and {@code question}: a history far over a small context limit while the system
	 *         prompt and the last turn fit
	 */
	static List<ChatMessage> longConversation(String question, int words) {
		List<ChatMessage> messages = new ArrayList<>();
		messages.add(ChatMessage.system("Be brief."));
		for (int i = 0; i < 6; i++) {
			messages.add(ChatMessage.user("Earlier question " + i + ": " + "context ".repeat(words)));
			messages.add(ChatMessage.assistant("Earlier answer " + i + ": " + "detail ".repeat(words)));
		}
		messages.add(ChatMessage.user(question));
		return messages;
	}

	/** @return the base URL of an OpenAI-compatible server on this machine's loopback {@code port} */
	static String loopback(int port) {
		return "http://127.0.0.1:" + port + "/v1";
	}

	/** Waits (bounded, polling every 10 ms off the test thread) until {@code condition} holds. */
	static void await(String what, BooleanSupplier condition) {
		Flux.interval(Duration.ZERO, Duration.ofMillis(10))
			.filter(i -> condition.getAsBoolean())
			.next()
			.timeout(WAIT, reactor.core.publisher.Mono.error(() -> new AssertionError("timed out waiting for: " + what)))
			.block();
	}

	/** Waits until the mock has no response open: every connection of an ended answer is closed. */
	static void awaitNoneInProgress(MockModelServer mock) {
		await("no response of the mock in progress, " + mock.stats(), () -> mock.stats().inProgress() == 0);
	}
}
