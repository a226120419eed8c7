package dev.aiguard.openai;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.LongSupplier;

import com.openai.client.OpenAIClientAsync;
import com.openai.client.okhttp.OpenAIOkHttpClientAsync;
import com.openai.core.Timeout;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.truncation.TruncationSpec;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The mock model server and the real SDK client pointed at it, for tests over loopback. The
 * mock's error draws come from a queue a test fills ({@link #failNext(int)}), so "the first
 * request fails, the retry succeeds" needs no timing.
 *
 * <p>One instance serves every test class of the module ({@link #shared()}): its first answer
 * loads the SDK, OkHttp, Jackson's Kotlin module and the guard (seconds on a busy machine, most of
 * it class loading under BlockHound's agent), which must not count against a deadline under test.
 * A test class registers it as an extension, which readies it before each test:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final SdkMock sdk = SdkMock.shared();
 * }</pre>
 */
final class SdkMock implements BeforeEachCallback {

	private static SdkMock shared;

	/** Fast pacing: a first token after 20 ms, then one every 5 ms. */
	static final FaultProfile FAST = FaultProfile.defaults(Duration.ofMillis(20), Duration.ofMillis(5));

	/**
	 * The SDK's read timeout: above every stall deadline of the tests, so the guard sees a stall
	 * first; it bounds how long a stalled connection stays open after the guard gave up on it.
	 */
	static final Duration READ_TIMEOUT = Duration.ofSeconds(2);

	/** The longest a test waits for something that should happen at once. */
	static final Duration WAIT = Duration.ofSeconds(5);

	private final ConcurrentLinkedQueue<Double> draws = new ConcurrentLinkedQueue<>();
	final MockModelServer mock;
	final OpenAIClientAsync client;

	SdkMock() {
		this.mock = MockModelServer.builder().faults(FAST).random(() -> {
			Double next = draws.poll();
			return next != null ? next : 0.999;
		}).start();
		this.client = OpenAIOkHttpClientAsync.builder()
			.baseUrl(mock.baseUrl())
			.apiKey("test-key")
			.maxRetries(0)
			.timeout(Timeout.builder().read(READ_TIMEOUT).build())
			.build();
	}

	/** @return the module's mock and client, started and warmed up on first use; closed when the JVM ends */
	static synchronized SdkMock shared() {
		if (shared == null) {
			SdkMock sdk = new SdkMock();
			// a client of its own, without the short read timeout: a cold JVM may pause longer than that
			OpenAIClientAsync patient = OpenAIOkHttpClientAsync.builder().baseUrl(sdk.mock.baseUrl()).apiKey("test-key")
				.maxRetries(0).build();
			try {
				AiGuard.of(GuardPolicy.builder("warm-up").build())
					.call(request("warm up"), OpenAiStreams.of(patient, params("warm up")))
					.blockLast(Duration.ofSeconds(60));
			}
			finally {
				patient.close();
			}
			OpenAiStreams.create(sdk.client).stream(params("warm up")).blockLast(Duration.ofSeconds(60));
			// and the stall paths (first token and idle: the deadline, the error, the cancel, the close),
			// a few times over, so the timer's code is compiled before a test measures it
			AiGuard<ChatChunk> stalling = AiGuard.of(GuardPolicy.builder("warm-up")
				.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofMillis(300)).idleTimeout(Duration.ofMillis(200))
					.idleChecks(40))
				.build());
			for (int round = 0; round < 5; round++) {
				long before = sdk.mock.stats().requests();
				sdk.mock.faults(FAST.withStallAfter(0));
				CompletableFuture<Void> firstToken = stalling.call(request("warm up"),
						OpenAiStreams.of(sdk.client, params("warm up"))).onErrorResume(e -> Flux.empty()).then().toFuture();
				await(() -> sdk.mock.stats().requests(), before + 1);
				sdk.mock.faults(FAST.withStallAfter(2));
				stalling.call(request("warm up"), OpenAiStreams.of(sdk.client, params("warm up")))
					.onErrorResume(e -> Flux.empty())
					.blockLast(Duration.ofSeconds(60));
				Mono.fromFuture(firstToken).block(Duration.ofSeconds(60));
			}
			// and the error paths: a rate limit with Retry-After, a server error, a context-length refusal
			for (FaultProfile fault : List.of(FAST.withErrors(1.0, 429, 1), FAST.withErrors(1.0, 500, 0),
					FAST.withContextLimit(1))) {
				sdk.mock.faults(fault);
				OpenAiStreams.create(sdk.client).stream(params("warm up")).onErrorResume(e -> Flux.empty())
					.blockLast(Duration.ofSeconds(60));
			}
			// and truncation: a long conversation refused, then sent shorter
			sdk.mock.faults(FAST.withContextLimit(60));
			AiGuard.of(GuardPolicy.builder("warm-up").truncation(TruncationSpec.defaults().reservedOutputTokens(10)).build())
				.call(new ChatRequest("mock-1", List.of(ChatMessage.user("a long warm-up question ".repeat(40)),
						ChatMessage.assistant("a long warm-up answer ".repeat(40)), ChatMessage.user("warm up")), null, null),
					OpenAiStreams.of(sdk.client, params("warm up")))
				.onErrorResume(e -> Flux.empty())
				.blockLast(Duration.ofSeconds(60));
			sdk.reset();
			shared = sdk;
		}
		return shared;
	}

	/**
	 * Back to fast pacing without faults, and no response of an earlier test (or of the warm-up's
	 * stalls, which end at the SDK's read timeout) still open: the mock's counters move for this test
	 * alone.
	 */
	@Override
	public void beforeEach(ExtensionContext context) {
		reset();
		await(() -> mock.stats().inProgress(), 0);
	}

	/** The next {@code n} requests draw an error when the profile has an error rate (below 1). */
	void failNext(int n) {
		for (int i = 0; i < n; i++) {
			draws.add(0.0);
		}
	}

	/** Back to fast pacing without faults, no queued error draws. */
	void reset() {
		draws.clear();
		mock.faults(FAST);
	}

	static ChatCompletionCreateParams params(String question) {
		return ChatCompletionCreateParams.builder().model("mock-1").addUserMessage(question).build();
	}

	static ChatRequest request(String question) {
		return ChatRequest.of("mock-1", List.of(ChatMessage.user(question)));
	}

	/** Waits (on a timer, without sleeping) until {@code value} reads {@code expected}; fails after {@link #WAIT}. */
	static void await(LongSupplier value, long expected) {
		Flux.interval(Duration.ZERO, Duration.ofMillis(10))
			.map(i -> value.getAsLong())
			.filter(v -> v == expected)
			.next()
			.timeout(WAIT, Mono.error(() -> new AssertionError("expected " + expected + ", still " + value.getAsLong()
					+ " after " + WAIT)))
			.block();
	}
}
