package dev.aiguard;

import java.util.List;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCallDelta;
import dev.aiguard.core.OutputLimits;
import dev.aiguard.core.Outcome;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.testing.Policies;
import dev.aiguard.testing.RecordingMetrics;
import dev.aiguard.testing.Reports;
import dev.aiguard.validation.Answer;
import dev.aiguard.validation.InvalidOutputException;
import dev.aiguard.validation.Validators;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;
import reactor.test.scheduler.VirtualTimeScheduler;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Finish reasons are read in any letter case everywhere the library compares them (Spring AI and
 * LangChain4j report {@code STOP}, {@code LENGTH}...): completion, the output-limit check of the
 * report, the meters and the response cache, and the finish-reason validator, whichever case it
 * was configured in. The reason itself is reported as the provider sent it. All time is virtual.
 */
class GuardFinishReasonCaseTest {

	static final ChatRequest ASK = ChatRequest.of("m", List.of(ChatMessage.user("tell me")));
	static final ChatRequest CAPPED = new ChatRequest("m", ASK.messages(), 20, null);

	final VirtualTimeScheduler vts = VirtualTimeScheduler.create();
	final Reports reports = new Reports();
	final RecordingMetrics metrics = new RecordingMetrics();

	GuardPolicy.Builder policy() {
		return Policies.onVirtualTime("it-case", vts, reports, metrics);
	}

	/** Two tokens and a finish chunk, without the terminal marker: the finish reason alone ends the answer. */
	static Flux<ChatChunk> answer(String finishReason) {
		return Flux.just(ChatChunk.token("Hi"), ChatChunk.token("!"), ChatChunk.finish(finishReason));
	}

	@ParameterizedTest
	@ValueSource(strings = { "stop", "STOP", "Stop" })
	void aStopInAnyCaseCompletesTheAnswer(String reason) {
		AiGuard<ChatChunk> guard = AiGuard.of(policy()
				.validate(Validators.emptyAnswer(), Validators.finishReason("content_filter", "length")).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> answer(reason)), () -> vts, Long.MAX_VALUE)
				.expectNextCount(3)
				.verifyComplete();
		StepVerifier.withVirtualTime(() -> answer(reason).transform(guard), () -> vts, Long.MAX_VALUE)
				.expectNextCount(3)
				.verifyComplete();
		GuardReport report = reports.last();
		assertThat(report.outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(report.finishReason()).isEqualTo(reason);
		assertThat(report.outputTruncated()).isFalse();
		assertThat(metrics.count("outputTruncated")).isZero();
	}

	@ParameterizedTest
	@ValueSource(strings = { "length", "LENGTH", "Length", "max_tokens", "MAX_TOKENS" })
	void aTruncationInAnyCaseIsReportedAndMetered(String reason) {
		AiGuard<ChatChunk> guard = AiGuard.of(policy().build());
		StepVerifier.withVirtualTime(() -> guard.call(CAPPED, r -> answer(reason)), () -> vts, Long.MAX_VALUE)
				.expectNextCount(3)
				.verifyComplete();
		assertThat(reports.last().outputTruncated()).isTrue();
		assertThat(reports.last().finishReason()).isEqualTo(reason);
		assertThat(metrics.count("outputTruncated it-case P1")).isEqualTo(1);
		assertThat(OutputLimits.isTruncation(reason)).isTrue();
	}

	@ParameterizedTest
	@ValueSource(strings = { "length", "LENGTH", "Length" })
	void aTruncationInAnyCaseIsInvalidOnlyWithoutTheCallersCap(String reason) {
		for (String configured : new String[] { "length", "LENGTH" }) {
			AiGuard<ChatChunk> guard = AiGuard.of(policy().validate(Validators.finishReason(configured)).build());
			StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> answer(reason)), () -> vts, Long.MAX_VALUE)
					.expectNextCount(3)
					.expectErrorSatisfies(e -> {
						assertThat(e).isInstanceOf(PartialStreamException.class);
						assertThat(((InvalidOutputException) e.getCause()).validator()).isEqualTo("finish-reason");
					})
					.verify();
			StepVerifier.withVirtualTime(() -> guard.call(CAPPED, r -> answer(reason)), () -> vts, Long.MAX_VALUE)
					.expectNextCount(3)
					.verifyComplete();
		}
	}

	@ParameterizedTest
	@ValueSource(strings = { "content_filter", "CONTENT_FILTER", "Content_Filter" })
	void aContentFilterInAnyCaseIsRejected(String reason) {
		for (AiGuard<ChatChunk> guard : List.of(AiGuard.of(policy().validate(Validators.finishReason()).build()),
				AiGuard.of(policy().validate(Validators.finishReason("CONTENT_FILTER")).build()))) {
			StepVerifier.withVirtualTime(() -> answer(reason).transform(guard), () -> vts, Long.MAX_VALUE)
					.expectNextCount(3)
					.expectErrorSatisfies(e -> assertThat(e.getCause()).isInstanceOf(InvalidOutputException.class)
							.hasMessageContaining("finish reason '" + reason + "'"))
					.verify();
			assertThat(reports.last().outcome()).isEqualTo(Outcome.INVALID);
		}
		assertThat(Validators.finishReason().check(Answer.of("x", List.of(), reason, null))).isNotNull();
	}

	@ParameterizedTest
	@ValueSource(strings = { "tool_calls", "TOOL_CALLS", "Tool_Calls" })
	void aToolCallFinishInAnyCaseCompletesTheAnswer(String reason) {
		ChatChunk call = new ChatChunk("", null, null, null, List.of(new ToolCallDelta(0, "c1", "lookup", "{}")), false,
				false);
		AiGuard<ChatChunk> guard = AiGuard.of(policy()
				.validate(Validators.emptyAnswer(), Validators.finishReason("content_filter", "length")).build());
		StepVerifier.withVirtualTime(() -> guard.call(ASK, r -> Flux.just(call, ChatChunk.finish(reason))), () -> vts,
						Long.MAX_VALUE)
				.expectNext(call)
				.expectNextMatches(c -> reason.equals(c.finishReason()))
				.verifyComplete();
		assertThat(reports.last().outcome()).isEqualTo(Outcome.SUCCESS);
		assertThat(reports.last().outputTruncated()).isFalse();
	}
}
