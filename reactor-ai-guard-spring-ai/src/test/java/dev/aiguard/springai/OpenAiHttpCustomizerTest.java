package dev.aiguard.springai;

import java.time.Duration;
import java.util.List;

import dev.aiguard.GuardReport;
import dev.aiguard.core.Outcome;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.stall.IncompleteStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.test.mock.MockAnswers;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.ai.chat.client.ChatClient;
import org.springframework.ai.chat.model.ChatResponse;
import org.springframework.ai.openai.OpenAiChatModel;
import org.springframework.ai.openai.OpenAiChatOptions;
import reactor.test.StepVerifier;

import static dev.aiguard.springai.SpringAiMock.WAIT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link OpenAiHttpCustomizer} under Spring AI's real {@code OpenAiChatModel} and {@code ChatClient},
 * against the mock model: finish reasons in any letter case, and a read timeout apart from the cap
 * on the whole call.
 */
class OpenAiHttpCustomizerTest extends AdvisorFixture {

	OpenAiHttpCustomizerTest() {
		super("spring-ai-http");
	}

	private ChatClient client(OpenAiChatOptions options, OpenAiHttpCustomizer http) {
		OpenAiChatModel model = OpenAiChatModel.builder().options(options).httpClientBuilderCustomizer(http).build();
		return ChatClient.builder(model).defaultAdvisors(AiGuardAdvisor.of(policy().build())).build();
	}

	@ParameterizedTest
	@ValueSource(strings = { "STOP", "stop", "Stop", "LENGTH", "length", "Length", "CONTENT_FILTER", "Content_Filter",
			"TOOL_CALLS" })
	void aFinishReasonInAnyCaseEndsAStreamedAnswerAsComplete(String reason) {
		ai.mock.faults(ai.mock.faults().withFinishReason(reason));
		ChatClient chat = client(ai.options().build(), OpenAiHttpCustomizer.defaults());

		List<String> tokens = chat.prompt("Hello").stream().content().collectList().block(WAIT);

		assertThat(String.join("", tokens)).isEqualTo(MockAnswers.text("Hello"));
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualToIgnoringCase(reason);
		assertThat(report.outputTruncated()).isEqualTo(reason.equalsIgnoreCase("length"));
	}

	@ParameterizedTest
	@ValueSource(strings = { "STOP", "stop", "Stop", "LENGTH", "Length", "content_FILTER" })
	void aFinishReasonInAnyCaseEndsACallAsComplete(String reason) {
		ai.mock.faults(ai.mock.faults().withFinishReason(reason));
		ChatClient chat = client(ai.options().build(), OpenAiHttpCustomizer.defaults());

		ChatResponse response = chat.prompt("Hello").call().chatResponse();

		assertThat(response.getResult().getOutput().getText()).isEqualTo(MockAnswers.text("Hello"));
		assertThat(response.getResult().getMetadata().getFinishReason()).isEqualToIgnoringCase(reason);
		GuardReport report = reports.next().block(WAIT);
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualToIgnoringCase(reason);
		assertThat(report.outputTruncated()).isEqualTo(reason.equalsIgnoreCase("length"));
	}

	/** Why the customizer is in the recipe: Spring AI's model alone reports "STOP" as no finish reason. */
	@Test
	void withoutTheCustomizerSpringAiLosesAnUpperCaseFinishReason() {
		ai.mock.faults(ai.mock.faults().withFinishReason("STOP"));
		ChatClient chat = client(policy().build());

		StepVerifier.create(chat.prompt("Hello").stream().content())
			.expectNextCount(MockAnswers.tokens("Hello").size())
			.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(PartialStreamException.class)
				.cause().isInstanceOf(IncompleteStreamException.class))
			.verify(WAIT);
		assertThat(reports.next().block(WAIT).outcome()).isEqualTo(Outcome.INCOMPLETE);
	}

	@Test
	void onlyTheFinishReasonsTheSdkKnowsAreWrittenInLowerCase() {
		assertThat(FinishReasonSource.normalise("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"STOP\"}]}\n"))
			.isEqualTo("data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n");
		assertThat(FinishReasonSource.normalise("{\"finish_reason\" : \"Tool_Calls\",\"x\":1,\"finish_reason\":\"LENGTH\"}"))
			.isEqualTo("{\"finish_reason\" : \"tool_calls\",\"x\":1,\"finish_reason\":\"length\"}");
		assertThat(FinishReasonSource.normalise("{\"finish_reason\":\"END_TURN\"}")).isEqualTo("{\"finish_reason\":\"END_TURN\"}");
		assertThat(FinishReasonSource.normalise("{\"finish_reason\":null}")).isEqualTo("{\"finish_reason\":null}");
		assertThat(FinishReasonSource.normalise("{\"content\":\"STOP\"}")).isEqualTo("{\"content\":\"STOP\"}");
	}

	@Test
	void badTimeoutsFailNamingTheField() {
		assertThatThrownBy(() -> OpenAiHttpCustomizer.builder().readTimeout(Duration.ZERO))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("readTimeout");
		assertThatThrownBy(() -> OpenAiHttpCustomizer.builder().connectTimeout(null))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("connectTimeout");
		assertThatThrownBy(() -> OpenAiHttpCustomizer.builder().readTimeout(Duration.ofDays(30)))
			.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("readTimeout");
	}

	// Durations below follow the docs' recipe (idle deadline 8 s, read timeout 12 s, whole call
	// 10 min) scaled down: the idle deadline 400 ms, the read timeout 1 s, the whole call 24 s. The
	// read timeout is kept 600 ms above the deadline: at a margin of 80 ms a busy machine delayed the
	// guard's timer past the read timeout, and the answer ended as the client's read error, not as a
	// stall. A token every 90 ms: every gap far below both, and the answer outlasts three read
	// timeouts.
	private static final Duration DEADLINE = Duration.ofMillis(400);
	private static final Duration READ = Duration.ofSeconds(1);
	private static final Duration WHOLE_CALL = Duration.ofSeconds(24);
	/** A token every 90 ms. */
	private static final long TOKEN_INTERVAL_MS = 90;
	private static final String LONG_QUESTION = "Why do streams stall?";

	/** @return the model as the recipe builds it: the whole call capped apart from the read timeout */
	private OpenAiChatModel readTimeoutApart() {
		return OpenAiChatModel.builder()
			.options(ai.options().timeout(WHOLE_CALL).build())
			.httpClientBuilderCustomizer(OpenAiHttpCustomizer.builder().readTimeout(READ).build())
			.build();
	}

	/**
	 * @return a client of {@code model} whose guard has an idle deadline of {@link #DEADLINE}; the
	 *         first token gets longer (a busy machine sets requests up slowly), the gaps are what
	 *         these tests are about
	 */
	private ChatClient idleGuarded(OpenAiChatModel model) {
		StallSpec stall = StallSpec.defaults().firstTokenTimeout(Duration.ofSeconds(5)).idleTimeout(DEADLINE);
		return ChatClient.builder(model).defaultAdvisors(AiGuardAdvisor.of(policy().stall(stall).build())).build();
	}

	@Test
	void aLongHealthyAnswerOutlastsTheReadTimeoutWhenTheCallIsCappedApart() {
		ai.mock.faults(ai.mock.faults().withPace(0, TOKEN_INTERVAL_MS));
		int expected = MockAnswers.tokens(LONG_QUESTION).size();
		assertThat(Duration.ofMillis(TOKEN_INTERVAL_MS * expected)).isGreaterThan(READ.multipliedBy(3));
		ChatClient chat = idleGuarded(readTimeoutApart());

		List<String> tokens = chat.prompt(LONG_QUESTION).stream().content().collectList().block(WAIT);

		assertThat(tokens).hasSize(expected);
		assertThat(reports.next().block(WAIT).outcome()).isEqualTo(Outcome.SUCCESS);
	}

	/** What the customizer avoids: Spring AI's one timeout, kept near the deadlines, caps the whole answer. */
	@Test
	void springAisOneTimeoutNearTheDeadlinesCutsTheSameAnswer() {
		ai.mock.faults(ai.mock.faults().withPace(0, TOKEN_INTERVAL_MS));
		ChatClient chat = idleGuarded(OpenAiChatModel.builder().options(ai.options().timeout(READ).build()).build());

		StepVerifier.create(chat.prompt(LONG_QUESTION).stream().content())
			.thenConsumeWhile(t -> true)
			.expectError(PartialStreamException.class)
			.verify(WAIT);
		assertThat(reports.next().block(WAIT).tokens()).isLessThan(MockAnswers.tokens(LONG_QUESTION).size());
	}

	@Test
	void theReadTimeoutClosesAStalledAnswersConnectionSoonAfterTheDeadline() {
		ai.mock.faults(ai.mock.faults().withStallAfter(3));
		ChatClient chat = idleGuarded(readTimeoutApart());

		StepVerifier.create(chat.prompt("Hello").stream().content())
			.expectNextCount(3)
			.expectError(PartialStreamException.class)
			.verify(WAIT);

		assertThat(reports.next().block(WAIT).outcome()).isEqualTo(Outcome.STALLED);
		// within the read timeout (plus scheduling): noneInProgress waits 5 s, the whole-call cap is 24 s
		assertThat(ai.noneInProgress().block(WAIT)).isZero();
	}
}
