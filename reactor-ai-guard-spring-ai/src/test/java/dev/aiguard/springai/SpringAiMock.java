package dev.aiguard.springai;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.DoubleSupplier;

import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.core.Priority;
import dev.aiguard.core.Tenant;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.client.ChatClientRequest;
import org.springframework.ai.chat.client.ChatClientResponse;
import org.springframework.ai.chat.client.advisor.api.CallAdvisor;
import org.springframework.ai.chat.client.advisor.api.CallAdvisorChain;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisor;
import org.springframework.ai.chat.client.advisor.api.StreamAdvisorChain;
import org.springframework.ai.chat.prompt.Prompt;
import org.springframework.ai.openai.OpenAiChatModel;
import org.springframework.ai.openai.OpenAiChatOptions;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The mock model server and Spring AI's real {@link OpenAiChatModel} talking HTTP to it, with the
 * SDK's own retries off; and what the tests watch: guard reports, and the attempts an advisor
 * behind the guard sees.
 */
final class SpringAiMock implements AutoCloseable {

	/** The longest any test waits for something that happens in milliseconds. */
	static final Duration WAIT = Duration.ofSeconds(10);

	/**
	 * The OpenAI SDK's timeout: its socket read timeout and its cap on a whole call. A stream the
	 * guard abandons keeps its connection until a read times out (see docs/spring-ai.md).
	 */
	static final Duration SDK_TIMEOUT = Duration.ofSeconds(3);

	/** Whether this JVM has sent its first request through the whole stack. */
	private static boolean warm;

	final MockModelServer mock;
	final OpenAiChatModel model;

	SpringAiMock() {
		this(() -> 0.0);
	}

	SpringAiMock(DoubleSupplier random) {
		this.mock = MockModelServer.builder()
			.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(5)))
			.random(random)
			.start();
		this.model = OpenAiChatModel.builder().options(options().build()).build();
		warmUp();
	}

	/**
	 * The first requests of a JVM load the OpenAI SDK, Kotlin, OkHttp, Spring AI and the guard
	 * (BlockHound instruments each class as it loads): seconds on a busy machine, on the success path
	 * and again on the stall path. Both are taken once, here, against a mock of their own, so the
	 * tests' deadlines measure requests and not class loading.
	 */
	private static synchronized void warmUp() {
		if (warm) {
			return;
		}
		try (MockModelServer mock = MockModelServer.builder()
			.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)))
			.start()) {
			OpenAiChatModel model = OpenAiChatModel.builder()
				.options(options(mock).timeout(Duration.ofMinutes(1)).build())
				.build();
			ChatClient plain = ChatClient.builder(model)
				.defaultAdvisors(AiGuardAdvisor.of(GuardPolicy.builder("warm-up").build()))
				.build();
			plain.prompt("warm up").stream().content().blockLast(Duration.ofMinutes(1));
			plain.prompt("warm up").call().content();
			ChatClient watched = ChatClient.builder(model)
				.defaultAdvisors(AiGuardAdvisor.of(GuardPolicy.builder("warm-up")
					.stall(StallSpec.defaults().firstTokenTimeout(Duration.ofMillis(300)).idleTimeout(Duration.ofMillis(300)))
					.build()))
				.build();
			mock.faults(mock.faults().withStallAfter(1));
			watched.prompt("warm up").stream().content().onErrorComplete().blockLast(Duration.ofMinutes(1));
			mock.faults(mock.faults().withStallAfter(null).withPace(1_000, 1));
			watched.prompt("warm up").stream().content().onErrorComplete().blockLast(Duration.ofMinutes(1));
			// the error paths: typing and scrubbing an error loads the SDK's error classes, Jackson's
			// readers and the scrubbing patterns, hundreds of ms the first time (more under BlockHound),
			// which a test's idle deadline would count as model silence
			mock.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)).withDropAfter(1));
			plain.prompt("warm up").stream().content().onErrorComplete().blockLast(Duration.ofMinutes(1));
			mock.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)).withInBandError(1, "invalid_api_key"));
			plain.prompt("warm up").stream().content().onErrorComplete().blockLast(Duration.ofMinutes(1));
			mock.faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1)).withErrors(1.0, 401, 0)
				.withErrorBody("{\"error\":{\"message\":\"Incorrect API key provided: {api_key}.\"}}"));
			try {
				plain.prompt("warm up").call().content();
			}
			catch (RuntimeException expected) {
				// the 401 it was asked for
			}
		}
		// closing the mock closed the connections of the stalled answers
		warm = true;
	}

	/** The model's options: the mock's address, and no retries of the OpenAI SDK's own. */
	OpenAiChatOptions.Builder options() {
		return options(mock);
	}

	private static OpenAiChatOptions.Builder options(MockModelServer mock) {
		return OpenAiChatOptions.builder()
			.baseUrl(mock.baseUrl())
			.apiKey("test-key")
			.model(MockModelServer.MODEL)
			.maxRetries(0)
			.timeout(SDK_TIMEOUT);
	}

	/** @return a model with other options, same mock */
	OpenAiChatModel model(OpenAiChatOptions options) {
		return OpenAiChatModel.builder().options(options).build();
	}

	/**
	 * Emits once no response of the mock is still open: the client closed what it left. Fails when
	 * that takes longer than a read of the SDK can wait, and a little more.
	 */
	Mono<Long> noneInProgress() {
		return Flux.interval(Duration.ofMillis(10)).map(i -> mock.stats().inProgress()).filter(n -> n == 0).next()
			.timeout(SDK_TIMEOUT.plusSeconds(2));
	}

	@Override
	public void close() {
		mock.close();
	}

	/** Collects a policy's reports. */
	static final class Reports {

		private final Queue<GuardReport> reports = new ConcurrentLinkedQueue<>();

		void add(GuardReport report) {
			reports.add(report);
		}

		/** @return the next report, once there is one */
		Mono<GuardReport> next() {
			return Flux.interval(Duration.ofMillis(5))
				.<GuardReport>handle((i, sink) -> {
					GuardReport r = reports.poll();
					if (r != null) {
						sink.next(r);
					}
				})
				.next()
				.timeout(WAIT);
		}
	}

	/**
	 * An advisor behind the guard: it sees every attempt the guard makes, with the request and the
	 * priority and tenant of the Reactor {@code Context} ({@code null} on a call).
	 */
	static final class Probe implements CallAdvisor, StreamAdvisor {

		record Attempt(long nanos, Prompt prompt, Map<String, Object> params, Priority priority, Tenant tenant) {
		}

		final List<Attempt> attempts = new CopyOnWriteArrayList<>();

		@Override
		public String getName() {
			return "probe";
		}

		@Override
		public int getOrder() {
			return AiGuardAdvisor.DEFAULT_ORDER + 1;
		}

		@Override
		public ChatClientResponse adviseCall(ChatClientRequest request, CallAdvisorChain chain) {
			attempts.add(new Attempt(System.nanoTime(), request.prompt(), Map.copyOf(request.context()), null, null));
			return chain.nextCall(request);
		}

		@Override
		public Flux<ChatClientResponse> adviseStream(ChatClientRequest request, StreamAdvisorChain chain) {
			return Flux.deferContextual(context -> {
				attempts.add(new Attempt(System.nanoTime(), request.prompt(), Map.copyOf(request.context()),
						Priority.from(context, null), Tenant.from(context).orElse(null)));
				return chain.nextStream(request);
			});
		}
	}
}
