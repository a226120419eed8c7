package dev.aiguard.test.mock;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.test.ChatSteps;
import dev.aiguard.test.ReportRecorder;
import dev.aiguard.truncation.TruncationSpec;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;

import static dev.aiguard.test.mock.RawHttp.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the mock remembers of the requests it received, and {@code reset()} between tests. */
class RequestCaptureTest {

	private MockModelServer mock;

	@BeforeEach
	void start() {
		mock = MockModelServer.builder().faults(FaultProfile.defaults(Duration.ZERO, Duration.ofMillis(1))).start();
	}

	@AfterEach
	void stop() {
		mock.close();
	}

	private OpenAiCompatibleClient client(String apiKey) {
		return OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).apiKey(apiKey).build();
	}

	@Test
	void aChatRequestIsCapturedWithMethodPathHeadersBodyJsonAndTime() {
		Instant before = Instant.now();
		ChatRequest request = ChatRequest.of(null, List.of(ChatMessage.system("Be brief."), ChatMessage.user("Hi")));

		client("sk-test-key-123").stream(request).blockLast(WAIT);

		CapturedRequest captured = mock.lastRequest();
		assertThat(captured.method()).isEqualTo("POST");
		assertThat(captured.uri()).isEqualTo("/v1/chat/completions");
		assertThat(captured.path()).isEqualTo("/v1/chat/completions");
		assertThat(captured.header("Authorization")).isEqualTo("Bearer sk-test-key-123");
		assertThat(captured.header("authorization")).isEqualTo(captured.headers().get("authorization").get(0));
		assertThat(captured.header("content-type")).isEqualTo("application/json");
		assertThat(captured.header("x-not-sent")).isNull();
		assertThat(captured.body()).contains("\"stream\":true");
		assertThat(captured.json().path("model").asText()).isEqualTo(MockModelServer.MODEL);
		assertThat(captured.messages()).containsExactlyElementsOf(request.messages());
		assertThat(captured.receivedAt()).isBetween(before, Instant.now());
		assertThat(mock.requests()).containsExactly(captured);
	}

	@Test
	void requestsOnOtherRoutesAreCapturedToo() {
		RawHttp.get(mock.baseUrl() + "/models");
		RawHttp.get(mock.baseUrl() + "/nothing?page=2");
		RawHttp.post(mock.baseUrl() + "/chat/completions", "not json at all");

		List<CapturedRequest> all = mock.requests();
		assertThat(all).extracting(CapturedRequest::method).containsExactly("GET", "GET", "POST");
		assertThat(all.get(0).path()).isEqualTo("/v1/models");
		assertThat(all.get(0).body()).isEmpty();
		assertThat(all.get(0).json()).isNull();
		assertThat(all.get(1).uri()).isEqualTo("/v1/nothing?page=2");
		assertThat(all.get(1).path()).isEqualTo("/v1/nothing");
		assertThat(all.get(2).body()).isEqualTo("not json at all");
		assertThat(all.get(2).json()).isNull();
		assertThat(all.get(2).messages()).isEmpty();
		assertThat(all).extracting(CapturedRequest::receivedAt).isSorted();
	}

	@Test
	void theLogKeepsTheLatestRequestsUpToItsLimit() {
		try (MockModelServer small = MockModelServer.builder().captureLimit(3).start()) {
			OpenAiCompatibleClient client = OpenAiCompatibleClient.builder(small.baseUrl()).model("m").build();
			Flux.range(1, 5)
				.concatMap(i -> client.stream(ChatRequest.of(null, List.of(ChatMessage.user("q" + i)))))
				.blockLast(WAIT);

			assertThat(small.requests()).extracting(r -> r.messages().get(0).content()).containsExactly("q3", "q4", "q5");
		}
		assertThatThrownBy(() -> MockModelServer.builder().captureLimit(0)).isInstanceOf(IllegalArgumentException.class)
			.hasMessage("captureLimit must be between 1 and 100000, was 0");
	}

	@Test
	void clearRequestsForgetsThemAndLastRequestThenSaysSo() {
		RawHttp.get(mock.baseUrl() + "/models");
		assertThat(mock.requests()).hasSize(1);

		mock.clearRequests();

		assertThat(mock.requests()).isEmpty();
		assertThatThrownBy(mock::lastRequest).isInstanceOf(IllegalStateException.class)
			.hasMessage("the mock model server has received no request");
		RawHttp.get(mock.baseUrl() + "/models");
		assertThat(mock.requests()).hasSize(1);
	}

	@Test
	void resetRestoresTheDefaultFaultsEmptiesTheQueueAndForgetsRequestsButKeepsCounting() {
		FaultProfile start = mock.defaultFaults();
		mock.faults(start.withStallAfter(1));
		mock.enqueue(start.withErrors(1, 500, 0), start.withErrors(1, 500, 0));
		RawHttp.post(mock.baseUrl() + "/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}");

		mock.reset();

		assertThat(mock.faults()).isEqualTo(start);
		assertThat(mock.queued()).isZero();
		assertThat(mock.requests()).isEmpty();
		assertThat(mock.stats().requests()).isEqualTo(1);
		assertThat(RawHttp.post(mock.baseUrl() + "/chat/completions",
				"{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}").status()).isEqualTo(200);
	}

	@Test
	void aTruncatedRetrySendsFewerMessages() {
		mock.faults(mock.faults().withContextLimit(300));
		List<ChatMessage> messages = new ArrayList<>();
		messages.add(ChatMessage.system("Be brief."));
		for (int i = 0; i < 8; i++) {
			messages.add(ChatMessage.user("question " + i + " " + "word ".repeat(40)));
			messages.add(ChatMessage.assistant("answer " + i + " " + "word ".repeat(40)));
		}
		messages.add(ChatMessage.user("And now?"));
		ReportRecorder reports = new ReportRecorder();
		GuardPolicy policy = GuardPolicy.builder("truncating")
			.truncation(TruncationSpec.defaults().reservedOutputTokens(32))
			.onReport(reports)
			.build();

		String answer = ChatSteps.text(AiGuard.of(policy).call(ChatRequest.of(null, messages), client("sk-abc-123")::stream))
			.block(WAIT);

		assertThat(answer).isEqualTo(MockAnswers.text("And now?"));
		reports.expectOutcome(Outcome.SUCCESS);
		List<CapturedRequest> sent = mock.requests();
		assertThat(sent).hasSize(2);
		assertThat(sent.get(1).messages()).hasSizeLessThan(sent.get(0).messages().size())
			.last().isEqualTo(ChatMessage.user("And now?"));
		assertThat(sent).allSatisfy(r -> assertThat(r.header("authorization")).isEqualTo("Bearer sk-abc-123"));
	}
}
