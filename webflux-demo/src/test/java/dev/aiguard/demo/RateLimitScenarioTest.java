package dev.aiguard.demo;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongPredicate;

import dev.aiguard.breaker.BreakerState;
import dev.aiguard.boot.autoconfigure.AiGuardRegistry;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.test.mock.FaultProfile;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.test.mock.MockModelServer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.MediaType;
import org.springframework.http.codec.ServerSentEvent;
import org.springframework.test.context.bean.override.convention.TestBean;
import org.springframework.test.web.reactive.server.WebTestClient;
import tools.jackson.databind.json.JsonMapper;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Step 5 of docs/demo.md played against the app with the demo's default breaker (50 % of at least
 * six calls in 30 s) and the page's 429 switch ({@code Retry-After: 1}). The mock's error draws are
 * scripted, so "50 %" and "20 %" are exact: at 50 % every question's first attempt is refused and
 * its retry answers; at 20 % one attempt in five is refused.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
		"aiguard.policies.chat.retry.min-backoff=20ms",
		"aiguard.policies.chat.retry.max-backoff=100ms",
		"aiguard.fallback.timeout=1s" })
class RateLimitScenarioTest {

	private static final Duration WAIT = Duration.ofSeconds(20);
	private static final ParameterizedTypeReference<ServerSentEvent<String>> SSE = new ParameterizedTypeReference<>() {
	};

	/** The draws so far, and which of them (1-based) are refused. */
	private static final AtomicLong draws = new AtomicLong();
	private static volatile LongPredicate refused = n -> false;

	@TestBean(name = "mockModelServer", methodName = "scriptedMock")
	MockModelServer mock;

	CircuitBreaker breaker;

	BreakerTree tree;

	/** The chat policy's endpoint breaker ({@code llm/mock/mock-large}) and its tree, as the starter built them. */
	@Autowired
	void breakerFrom(AiGuardRegistry registry) {
		breaker = registry.guard(GuardConfiguration.POLICY).policy().breaker();
		tree = registry.breakerTree().orElseThrow();
	}

	@Autowired
	GuardStats stats;

	@Autowired
	JsonMapper json;

	@LocalServerPort
	int port;

	private WebTestClient client;

	/** The demo's mock with a fast pace and error draws that follow {@link #refused}. */
	static MockModelServer scriptedMock() {
		return MockModelServer.builder()
			.faults(FaultProfile.defaults(Duration.ofMillis(5), Duration.ofMillis(2)))
			.random(() -> refused.test(draws.incrementAndGet()) ? 0.0 : 0.99)
			.start();
	}

	@BeforeEach
	void resetTheWorld() {
		mock.resetFaults();
		mock.clearRequests();
		DemoTestSupport.closeWithEmptyWindows(tree);
		draws.set(0);
		client = WebTestClient.bindToServer().baseUrl("http://127.0.0.1:" + port).responseTimeout(WAIT).build();
	}

	@Test
	void at50PercentEveryRefusalCountsAndTheBreakerOpensAtTheFourthQuestion() {
		refused = n -> n % 2 == 1;
		mock.faults(mock.faults().withErrors(0.5, 429, 1));
		assertThat(breaker.config().minimumCalls()).as("the demo's default").isEqualTo(6);
		assertThat(breaker.config().failureRateThreshold()).isEqualTo(0.5);
		long calls = mock.stats().requests();

		for (int i = 1; i <= 3; i++) {
			long started = System.nanoTime();
			Answer answer = ask("rate limited question " + i);
			assertThat(answer.source()).as("question %d", i).isEqualTo("REALTIME");
			assertThat(answer.text()).isEqualTo(MockAnswers.text("rate limited question " + i));
			assertThat(answer.attempts()).as("refused once, answered by the retry").isEqualTo(2);
			assertThat(Duration.ofNanos(System.nanoTime() - started)).as("Retry-After honoured")
				.isGreaterThanOrEqualTo(Duration.ofSeconds(1));
			assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		}
		assertThat(breaker.snapshot().calls()).isEqualTo(6);
		assertThat(breaker.snapshot().failures()).as("half the calls failed, one short of judging").isEqualTo(3);

		Answer fourth = ask("rate limited question 4");
		assertThat(breaker.state()).as("7 calls, 4 refused: 57 % >= 50 %").isEqualTo(BreakerState.OPEN);
		assertThat(fourth.source()).as("the retry finds the breaker open: the ladder asks the sibling model, "
				+ "whose draw (8) is not refused").isEqualTo("FALLBACK_MODEL");
		assertThat(fourth.text()).isEqualTo(MockAnswers.text("rate limited question 4"));
		assertThat(mock.stats().requests()).isEqualTo(calls + 8);
		assertThat(callsFor(DemoTestSupport.PRIMARY)).isEqualTo(7);
		assertThat(callsFor(DemoTestSupport.SIBLING)).isEqualTo(1);

		assertThat(ask("rate limited question 5").source()).as("the sibling's draw (9) is refused: the ladder goes on")
			.isEqualTo("STATIC");
		assertThat(callsFor(DemoTestSupport.PRIMARY)).as("an open breaker spares the rate-limited model").isEqualTo(7);
		assertThat(callsFor(DemoTestSupport.SIBLING)).isEqualTo(2);
		assertThat(tree.provider("mock").breaker().state()).as("one model failing never trips its provider")
			.isEqualTo(BreakerState.CLOSED);
	}

	private long callsFor(String model) {
		return DemoTestSupport.callsFor(mock, json, model);
	}

	@Test
	void at20PercentTheRetriesAbsorbTheRefusalsAndEveryQuestionIsAnsweredLive() {
		refused = n -> n % 5 == 1;
		mock.faults(mock.faults().withErrors(0.2, 429, 1));
		long refusedBefore = mock.stats().injectedErrors();

		for (int i = 1; i <= 8; i++) {
			Answer answer = ask("lightly limited question " + i);
			assertThat(answer.source()).as("question %d", i).isEqualTo("REALTIME");
			assertThat(answer.text()).isEqualTo(MockAnswers.text("lightly limited question " + i));
		}
		assertThat(mock.stats().injectedErrors()).as("draws 1, 6: two questions waited for a retry").isEqualTo(refusedBefore + 2);
		assertThat(breaker.state()).isEqualTo(BreakerState.CLOSED);
		assertThat(breaker.snapshot().failureRate()).isEqualTo(0.2);
	}

	/** What the page shows of one answer: its source and text, and the guard's attempt count. */
	private record Answer(String source, String text, int attempts) {
	}

	private Answer ask(String question) {
		long before = stats.requests();
		String body = json.writeValueAsString(json.createObjectNode().set("messages",
				json.createArrayNode().add(json.createObjectNode().put("role", "user").put("content", question))));
		List<ServerSentEvent<String>> events = client.post().uri("/api/chat")
			.contentType(MediaType.APPLICATION_JSON)
			.accept(MediaType.TEXT_EVENT_STREAM)
			.bodyValue(body)
			.exchange()
			.expectStatus().isOk()
			.returnResult(SSE)
			.getResponseBody()
			.collectList()
			.block(WAIT);
		ServerSentEvent<String> last = events.get(events.size() - 1);
		assertThat(last.event()).isEqualTo("done");
		StringBuilder text = new StringBuilder();
		events.stream().filter(e -> "token".equals(e.event()))
			.forEach(e -> text.append(json.readTree(e.data()).get("text").stringValue()));
		// the report comes once the request has ended, just after the last event
		DemoTestSupport.when(stats::requests, before + 1).block(WAIT);
		GuardStats.Recent report = stats.recent().get(stats.recent().size() - 1);
		return new Answer(json.readTree(last.data()).get("source").stringValue(), text.toString(), report.attempts());
	}
}
