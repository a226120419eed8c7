package dev.aiguard.test;

import java.time.Duration;
import java.util.List;

import dev.aiguard.AiGuard;
import dev.aiguard.GuardPolicy;
import dev.aiguard.GuardReport;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.core.Outcome;
import dev.aiguard.retry.PartialStreamException;
import dev.aiguard.stall.StallSpec;
import dev.aiguard.stall.StreamStalledException;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The StepVerifier helpers: content tokens and text, complete and partial answers. */
class ChatStepsTest {

	private static final ChatRequest HELLO = ChatRequest.of(null, List.of(ChatMessage.user("Hello")));

	private static Flux<ChatChunk> answer(String... tokens) {
		return ScriptedModel.of(ModelScript.tokens(tokens)).apply(HELLO);
	}

	private static PartialStreamException partial(long tokens) {
		return new PartialStreamException(new IllegalStateException("cut"), tokens);
	}

	@Test
	void tokensAreTheTextsOfContentChunksOnly() {
		StepVerifier.create(ChatSteps.tokens(answer("Hel", "lo")))
			.expectNext("Hel", "lo")
			.verifyComplete();
		StepVerifier.create(ChatSteps.tokens(Flux.just(ChatChunk.keepAlive(), ChatChunk.token("a"))
			.concatWith(Flux.error(partial(1)))))
			.expectNext("a")
			.expectErrorMatches(ChatSteps.partialAfter(1))
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void textJoinsTheContentOnceTheAnswerCompletes() {
		StepVerifier.create(ChatSteps.text(answer("Hel", "lo", " there"))).expectNext("Hello there").verifyComplete();
		StepVerifier.create(ChatSteps.text(answer())).expectNext("").verifyComplete();
		StepVerifier.create(ChatSteps.text(answer("a").concatWith(Flux.error(partial(1)))))
			.expectError(PartialStreamException.class)
			.verify(Duration.ofSeconds(5));
	}

	@Test
	void partialAfterMatchesOnlyAPartialStreamExceptionWithThatCount() {
		assertThat(ChatSteps.partialAfter(2)).accepts(partial(2)).rejects(partial(3), new IllegalStateException("x"));
	}

	@Test
	void expectAnswerPassesOnTheTextAndFailsNamingBothTexts() {
		ChatSteps.expectAnswer(StepVerifier.create(answer("Hel", "lo")), "Hello").verify(Duration.ofSeconds(5));

		assertThatThrownBy(() -> ChatSteps.expectAnswer(StepVerifier.create(answer("Hel", "lo")), "Help")
			.verify(Duration.ofSeconds(5)))
			.isInstanceOf(AssertionError.class)
			.hasMessageContaining("expected the answer \"Help\" but it was \"Hello\"");
		assertThatThrownBy(() -> ChatSteps.expectAnswer(StepVerifier.create(answer("a").concatWith(Flux.error(partial(1)))),
				"a").verify(Duration.ofSeconds(5)))
			.isInstanceOf(AssertionError.class);
	}

	@Test
	void expectPartialAnswerReadsAGuardedStallMidStream() {
		ReportRecorder reports = new ReportRecorder();
		GuardPolicy policy = GuardPolicy.builder("chat")
			.stall(StallSpec.defaults().idleTimeout(Duration.ofSeconds(1)))
			.onReport(reports)
			.build();
		ScriptedModel model = ScriptedModel.of(ModelScript.tokens("Hel", "lo", " there").stallAfter(2));

		ChatSteps.expectPartialAnswer(StepVerifier.withVirtualTime(() -> AiGuard.of(policy).call(HELLO, model))
			.thenAwait(Duration.ofSeconds(5)), "Hel", "lo")
			.verify(Duration.ofSeconds(5));

		GuardReport report = reports.expectOutcome(Outcome.STALLED);
		assertThat(report.error()).isInstanceOf(PartialStreamException.class)
			.hasCauseInstanceOf(StreamStalledException.class);
	}

	@Test
	void expectPartialAnswerFailsOnAnotherTokenOrAnotherEnding() {
		Flux<ChatChunk> twoThenPartial = answer("a", "b").filter(ChatChunk::hasContent).concatWith(Flux.error(partial(2)));

		assertThatThrownBy(() -> ChatSteps.expectPartialAnswer(StepVerifier.create(twoThenPartial), "a", "x")
			.verify(Duration.ofSeconds(5)))
			.isInstanceOf(AssertionError.class)
			.hasMessageContaining("expected token 2 to be \"x\"");
		assertThatThrownBy(() -> ChatSteps.expectPartialAnswer(StepVerifier.create(twoThenPartial), "a")
			.verify(Duration.ofSeconds(5)))
			.isInstanceOf(AssertionError.class);
		assertThatThrownBy(() -> ChatSteps.expectPartialAnswer(StepVerifier.create(
				answer("a").filter(ChatChunk::hasContent).concatWith(Flux.error(new IllegalStateException("other")))), "a")
			.verify(Duration.ofSeconds(5)))
			.isInstanceOf(AssertionError.class)
			.hasMessageContaining("expected a PartialStreamException after 1 token(s)");
	}
}
