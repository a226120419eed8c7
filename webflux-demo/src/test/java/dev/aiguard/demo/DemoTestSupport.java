package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;
import java.util.function.LongSupplier;

import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.breaker.BreakerNode;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.budget.BucketStore;
import dev.aiguard.budget.LocalBucketStore;
import dev.aiguard.load.LoadGovernor;
import dev.aiguard.test.mock.CapturedRequest;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.BeforeEach;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.test.web.reactive.server.WebTestClient;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.netty.http.HttpResources;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The running demo on a random loopback port, shared by the test classes (one Spring context):
 * a fast mock, short deadlines, a breaker that trips after a handful of calls, an OpenAI SDK timeout
 * of 3 s under the Spring AI client, and the demo's load governor. Each test starts from a
 * well-behaved mock with an empty request log and a fresh provider rate-limit window, full budgets,
 * a breaker tree whose breakers are all closed and empty, and a governor at HEALTHY that has
 * forgotten what the previous test measured.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
		"aiguard.mock.first-token-delay=5ms",
		"aiguard.mock.token-interval=2ms",
		"aiguard.policies.chat.stall.first-token-timeout=1500ms",
		"aiguard.policies.chat.stall.idle-timeout=400ms",
		"aiguard.policies.chat.stall.max-duration=20s",
		"aiguard.breakers.model.minimum-calls=5",
		"aiguard.breakers.model.open-wait=60s",
		"aiguard.breakers.model.max-open-wait=480s",
		"aiguard.breakers.model.minimum-dwell=1s",
		"aiguard.policies.chat.retry.min-backoff=20ms",
		"aiguard.policies.chat.retry.max-backoff=100ms",
		"aiguard.fallback.timeout=1s",
		"aiguard.spring-ai.timeout=3s",
		"logging.level.dev.aiguard=INFO" })
abstract class DemoTestSupport {

	/**
	 * The bound of a wait for one quick thing: an answer of the well-behaved mock (5 ms to the first
	 * token, 2 ms between tokens), an answer the guard ends by a deadline of under 2 s, a switch's
	 * round trip, the page's next poll (every second). Those take well under a second on an idle
	 * machine; the rest is slack for a loaded 2-core machine. A wait whose answer goes through
	 * failed attempts, backoffs and the ladder computes its bound from the policy instead.
	 */
	static final Duration WAIT = Duration.ofSeconds(20);

	static final ParameterizedTypeReference<ServerSentEvent<String>> SSE = new ParameterizedTypeReference<>() {
	};

	@LocalServerPort
	int port;

	@Autowired
	MockModelServer mock;

	/** The chat policy's endpoint breaker, {@code llm/mock/mock-large}: the breaker card of the page. */
	CircuitBreaker breaker;

	/** The breaker tree the chat policy's attempts pass: system {@code llm}, provider {@code mock}, two models. */
	BreakerTree tree;

	/** The demo's breakers as the starter built them from {@code aiguard.breaker-tree}. */
	@Autowired
	void breakerFrom(AiGuardRegistry registry) {
		breaker = registry.guard(GuardConfiguration.POLICY).policy().breaker();
		tree = registry.breakerTree().orElseThrow();
	}

	@Autowired
	JsonMapper json;

	/** The demo's load governor ({@code aiguard.load}), on as the demo runs it. */
	@Autowired
	LoadGovernor governor;

	/** Where the budgets' buckets live: the in-process store, unless a test's context shares them through Redis. */
	@Autowired
	BucketStore bucketStore;

	/** The Host, Origin, media-type and token checks; its token is the one the page's address carries. */
	@Autowired
	LocalAccessFilter access;

	/** A client of the demo at its own address, sending the access token with every request as the page does. */
	WebTestClient client;

	/** Whether this JVM has answered through the Spring AI client yet. */
	private static boolean springAiWarm;

	/** Reactor Netty's global resources when this JVM's shared context last checked its mock. */
	private static HttpResources mockResources;

	@BeforeEach
	void resetTheWorld() {
		client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(WAIT)
			.defaultHeader(LocalAccessFilter.TOKEN_HEADER, access.token())
			.build();
		restartTheMockWhenItsLoopsWereDisposed();
		mock.resetFaults();
		mock.resetProviderWindow();
		// every test starts with full budgets: no test inherits another's spending
		if (bucketStore instanceof LocalBucketStore local) {
			local.clear();
		}
		warmUpSpringAi();
		closeWithEmptyWindows(tree);
		// the tests break the model on purpose, one after the other: without a reset the next test
		// would meet the level the previous one's failures raised
		governor.reset();
		mock.clearRequests();
	}

	/** The primary model, the one the chat asks for and the policy's path ends at. */
	static final String PRIMARY = "mock-large";

	/** Its sibling on the same provider, which the ladder's {@code FALLBACK_MODEL} step asks. */
	static final String SIBLING = "mock-small";

	/** Closes every breaker of the tree with an empty window, so no test inherits another's calls. */
	static void closeWithEmptyWindows(BreakerTree tree) {
		closeWithEmptyWindows(tree.root());
	}

	private static void closeWithEmptyWindows(BreakerNode node) {
		node.children().forEach(DemoTestSupport::closeWithEmptyWindows);
		// an operator close of a CLOSED breaker keeps its window: go through DISABLED to empty it
		node.breaker().transitionToDisabled();
		node.breaker().transitionToClosed();
	}

	/** @return the breaker of the tree's node {@code llm/mock} ({@code provider}) or {@code llm/mock/<model>} */
	CircuitBreaker treeBreaker(String provider, String... model) {
		return model.length == 0 ? tree.provider(provider).breaker() : tree.path(provider, model[0]).endpoint().breaker();
	}

	/** @return the chat requests the mock received for {@code model} since this test started */
	long callsFor(String model) {
		return callsFor(mock, json, model);
	}

	/** @return the chat requests {@code mock} holds in its log for {@code model} */
	static long callsFor(MockModelServer mock, JsonMapper json, String model) {
		return modelRequests(mock).stream()
			.filter(r -> r.path().endsWith("/chat/completions"))
			.filter(r -> model.equals(json.readTree(r.body()).path("model").asString("")))
			.count();
	}

	/**
	 * The mock listens on Reactor Netty's global event loops. An app context that closes disposes
	 * them: Spring's test framework pauses this shared context first (the mock stops and starts
	 * again with it), but a test that starts and closes an app of its own ({@link MockAddressTest},
	 * {@link UpstreamConfigTest}) leaves this context's mock bound on loops that are gone. New global
	 * resources then tell it: the mock binds anew, and the clients follow its new base URL.
	 */
	private void restartTheMockWhenItsLoopsWereDisposed() {
		synchronized (DemoTestSupport.class) {
			HttpResources now = HttpResources.get();
			if (mockResources != null && mockResources != now) {
				mock.stop();
				mock.start();
			}
			mockResources = now;
		}
	}

	/**
	 * The first answer through the Spring AI client loads the OpenAI SDK, Kotlin's reflection,
	 * OkHttp and Spring AI's chat client, each class instrumented by BlockHound as it loads: over a
	 * second to the first token on a busy machine, close to the 1.5 s first-token deadline. It is
	 * taken once per JVM, here, so the tests' deadlines measure answers and not class loading.
	 */
	private void warmUpSpringAi() {
		synchronized (DemoTestSupport.class) {
			if (!springAiWarm) {
				chatToEnd(ask(WARM_UP, AnswerClient.SPRING_AI));
				springAiWarm = true;
			}
		}
	}

	/** The warm-up's question. */
	static final String WARM_UP = "warm up";

	/**
	 * @return the requests the mock received since this test started, the warm-up's left out: a
	 *         warm-up attempt the guard gave up on (its first token past the deadline while the
	 *         SDK's classes loaded) may still be on its way on a blocked SDK thread, and reach the
	 *         mock during the JVM's first test
	 */
	long mockRequests() {
		return modelRequests().size();
	}

	/** @return the requests the mock holds in its log, the warm-up's left out (see {@link #mockRequests()}) */
	List<CapturedRequest> modelRequests() {
		return modelRequests(mock);
	}

	static List<CapturedRequest> modelRequests(MockModelServer mock) {
		return mock.requests().stream().filter(r -> !r.body().contains(WARM_UP)).toList();
	}

	/** @return a chat body with one user message */
	String ask(String question) {
		return json.writeValueAsString(json.createObjectNode()
			.set("messages", json.createArrayNode().add(json.createObjectNode().put("role", "user").put("content", question))));
	}

	/** @return a chat body with one user message, answered through {@code client} */
	String ask(String question, AnswerClient client) {
		return json.writeValueAsString(json.createObjectNode()
			.put("client", client.id())
			.set("messages", json.createArrayNode().add(json.createObjectNode().put("role", "user").put("content", question))));
	}

	/** @return the events of one {@code POST /api/chat}, as they arrive */
	Flux<ServerSentEvent<String>> chat(String body) {
		return client.post().uri("/api/chat")
			.contentType(MediaType.APPLICATION_JSON)
			.accept(MediaType.TEXT_EVENT_STREAM)
			.bodyValue(body)
			.exchange()
			.expectStatus().isOk()
			.returnResult(SSE)
			.getResponseBody();
	}

	/** @return every event of one answer, once it has ended */
	List<ServerSentEvent<String>> chatToEnd(String body) {
		return chat(body).collectList().block(WAIT);
	}

	JsonNode data(ServerSentEvent<String> event) {
		return json.readTree(event.data());
	}

	/** @return the text of the answer's token events */
	String text(List<ServerSentEvent<String>> events) {
		StringBuilder b = new StringBuilder();
		events.stream().filter(e -> "token".equals(e.event())).forEach(e -> b.append(data(e).get("text").stringValue()));
		return b.toString();
	}

	static ServerSentEvent<String> last(List<ServerSentEvent<String>> events) {
		return events.get(events.size() - 1);
	}

	void faults(FaultProfile profile) {
		mock.faults(profile);
	}

	/** Completes once {@code counter} reaches {@code atLeast}, polling without sleeping the test thread. */
	static Mono<Long> when(LongSupplier counter, long atLeast) {
		return Flux.interval(Duration.ofMillis(10)).map(i -> counter.getAsLong()).filter(n -> n >= atLeast).next()
			.timeout(WAIT);
	}
}
