package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.AnthropicClient;
import dev.aiguard.provider.OpenAiCompatibleClient;
import dev.aiguard.validation.DegenerateOutputException;
import dev.aiguard.validation.InvalidOutputException;
import dev.aiguard.validation.RepetitionDetector;
import dev.aiguard.validation.Validators;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import reactor.test.StepVerifier;
import tools.jackson.databind.JsonNode;

import static dev.aiguard.test.mock.RawHttp.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The answer faults over loopback HTTP: an empty answer, a finish reason of the profile's choosing
 * and a looping answer, on the wire and as the library's validators judge them.
 */
class AnswerFaultsTest {

	private MockModelServer mock;
	private String chatUrl;
	private OpenAiCompatibleClient client;

	@BeforeEach
	void start() {
		mock = MockModelServer.builder().faults(FaultProfile.defaults(Duration.ZERO, Duration.ZERO)).start();
		chatUrl = mock.baseUrl() + "/chat/completions";
		client = OpenAiCompatibleClient.builder(mock.baseUrl()).model(MockModelServer.MODEL).build();
	}

	@AfterEach
	void stop() {
		mock.close();
	}

	private static String user(String question, String extra) {
		return "{\"model\":\"mock-1\",\"messages\":[{\"role\":\"user\",\"content\":\"" + question + "\"}]" + extra + "}";
	}

	private static String streamedText(List<JsonNode> events) {
		return events.stream()
			.map(e -> e.path("choices").path(0).path("delta").path("content").asString(""))
			.collect(Collectors.joining());
	}

	private static String finishOf(List<JsonNode> events) {
		return events.get(events.size() - 1).path("choices").path(0).path("finish_reason").asString();
	}

	private static ChatRequest ask(String question) {
		return ChatRequest.of(null, List.of(ChatMessage.user(question)));
	}

	@Test
	void anEmptyAnswerIsA200StreamWithoutContentEndingWithStopAndDone() {
		mock.faults(mock.faults().withEmptyAnswer(true));

		RawHttp.Reply reply = RawHttp.post(chatUrl, user("Anything?", ",\"stream\":true"));

		assertThat(reply.status()).isEqualTo(200);
		List<JsonNode> events = reply.jsonEvents();
		assertThat(events).hasSize(2);
		assertThat(events.get(0).path("choices").path(0).path("delta").path("role").asString()).isEqualTo("assistant");
		assertThat(streamedText(events)).isEmpty();
		assertThat(finishOf(events)).isEqualTo("stop");
		assertThat(reply.events()).last().isEqualTo("[DONE]");

		JsonNode whole = RawHttp.post(chatUrl, user("Anything?", "")).json();
		assertThat(whole.path("choices").path(0).path("message").path("content").asString("x")).isEmpty();
		assertThat(whole.path("usage").path("completion_tokens").asInt(-1)).isZero();

		mock.faults(mock.faults().withEmptyAnswer(false));
		assertThat(streamedText(RawHttp.post(chatUrl, user("Anything?", ",\"stream\":true")).jsonEvents()))
			.isEqualTo(MockAnswers.text("Anything?"));
	}

	@Test
	void theFinishReasonOfTheProfileEndsTheWholeAnswer() {
		mock.faults(mock.faults().withFinishReason("content_filter"));

		List<JsonNode> events = RawHttp.post(chatUrl, user("Filtered?", ",\"stream\":true")).jsonEvents();
		assertThat(streamedText(events)).isEqualTo(MockAnswers.text("Filtered?"));
		assertThat(finishOf(events)).isEqualTo("content_filter");
		JsonNode whole = RawHttp.post(chatUrl, user("Filtered?", "")).json();
		assertThat(whole.path("choices").path(0).path("finish_reason").asString()).isEqualTo("content_filter");
		// it replaces the "length" of a capped answer too
		List<JsonNode> capped = RawHttp.post(chatUrl, user("Filtered?", ",\"stream\":true,\"max_tokens\":2"))
			.jsonEvents();
		assertThat(finishOf(capped)).isEqualTo("content_filter");

		mock.faults(mock.faults().withFinishReason(null));
		assertThat(finishOf(RawHttp.post(chatUrl, user("Filtered?", ",\"stream\":true")).jsonEvents()))
			.isEqualTo("stop");
	}

	@Test
	void aLoopingAnswerRepeatsThePhraseOneWordPerChunk() {
		mock.faults(mock.faults().withLoopingAnswer(true));

		List<JsonNode> events = RawHttp.post(chatUrl, user("Loop?", ",\"stream\":true")).jsonEvents();

		assertThat(streamedText(events)).isEqualTo(FaultProfile.LOOP_PHRASE.repeat(FaultProfile.LOOP_REPEATS));
		// the role chunk, 4 words per phrase, the finish chunk
		assertThat(events).hasSize(1 + 4 * FaultProfile.LOOP_REPEATS + 1);
		assertThat(finishOf(events)).isEqualTo("stop");
	}

	@Test
	void anEmptyAnswerTakesPrecedenceOverALoop() {
		mock.faults(mock.faults().withLoopingAnswer(true).withEmptyAnswer(true).withFinishReason("length"));

		List<JsonNode> events = RawHttp.post(chatUrl, user("Both?", ",\"stream\":true")).jsonEvents();

		assertThat(streamedText(events)).isEmpty();
		assertThat(finishOf(events)).isEqualTo("length");
	}

	@Test
	void theLibrarysValidatorsJudgeTheFaultyAnswersInvalid() {
		GuardPolicy empty = GuardPolicy.builder("empty").validate(Validators.emptyAnswer()).build();
		mock.faults(mock.faults().withEmptyAnswer(true));
		StepVerifier.create(AiGuard.of(empty).call(ask("Empty?"), client::stream))
			.thenConsumeWhile(chunk -> !chunk.hasContent())
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(InvalidOutputException.class)
				.hasMessageContaining("empty"))
			.verify(WAIT);

		GuardPolicy filtered = GuardPolicy.builder("filtered").validate(Validators.finishReason("content_filter"))
			.build();
		mock.faults(mock.faults().withEmptyAnswer(false).withFinishReason("content_filter"));
		StepVerifier.create(AiGuard.of(filtered).call(ask("Filtered?"), client::stream))
			.thenConsumeWhile(chunk -> true)
			.expectErrorSatisfies(e -> assertThat(causes(e)).anyMatch(InvalidOutputException.class::isInstance))
			.verify(WAIT);

		GuardPolicy looping = GuardPolicy.builder("looping").validateStreaming(RepetitionDetector.defaults()).build();
		mock.faults(mock.faults().withFinishReason(null).withLoopingAnswer(true));
		StepVerifier.create(AiGuard.of(looping).call(ask("Loop?"), client::stream).filter(ChatChunk::hasContent))
			.thenConsumeWhile(chunk -> true)
			.expectErrorSatisfies(e -> assertThat(causes(e)).anyMatch(DegenerateOutputException.class::isInstance))
			.verify(WAIT);
	}

	@Test
	void theAnthropicRouteSendsTheFaultsInItsFormat() {
		AnthropicClient anthropic = AnthropicClient.builder(mock.anthropicBaseUrl()).apiKey("sk-ant-mock")
			.model("claude-mock").build();
		mock.faults(mock.faults().withEmptyAnswer(true).withFinishReason("refusal"));

		List<ChatChunk> chunks = anthropic.stream(ask("Empty?")).collectList().block(WAIT);

		assertThat(chunks).noneMatch(ChatChunk::hasContent);
		assertThat(chunks).anyMatch(c -> "refusal".equals(c.finishReason()));

		mock.faults(mock.faults().withEmptyAnswer(false).withFinishReason(null).withLoopingAnswer(true));
		String text = anthropic.stream(ask("Loop?")).filter(ChatChunk::hasContent).map(ChatChunk::text)
			.collect(Collectors.joining()).block(WAIT);
		assertThat(text).isEqualTo(FaultProfile.LOOP_PHRASE.repeat(FaultProfile.LOOP_REPEATS));
	}

	@Test
	void aFinishReasonThatIsNoWordIsRefusedNamingTheField() {
		FaultProfile base = FaultProfile.defaults(Duration.ZERO, Duration.ZERO);
		assertThatThrownBy(() -> base.withFinishReason("content filter"))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("finishReason")
			.hasMessageContaining("'content filter'");
		assertThatThrownBy(() -> base.withFinishReason(""))
			.isInstanceOf(IllegalArgumentException.class)
			.hasMessageContaining("finishReason");
		assertThatThrownBy(() -> MockAnswers.loop(" ", 3)).isInstanceOf(IllegalArgumentException.class);
		assertThatThrownBy(() -> MockAnswers.loop("again ", 0)).isInstanceOf(IllegalArgumentException.class);
	}

	private static List<Throwable> causes(Throwable e) {
		List<Throwable> chain = new java.util.ArrayList<>();
		for (Throwable t = e; t != null && !chain.contains(t); t = t.getCause()) {
			chain.add(t);
		}
		return chain;
	}
}
