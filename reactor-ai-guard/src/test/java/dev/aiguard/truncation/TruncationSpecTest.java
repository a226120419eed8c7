package dev.aiguard.truncation;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.provider.ContextLengthExceededException;
import dev.aiguard.provider.ProviderErrors;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

class TruncationSpecTest {

	private static final OptionalInt NONE = OptionalInt.empty();

	/** A conversation of {@code rounds} long rounds, in prose so that real tokenizers see words. */
	private static ChatRequest conversation(int rounds) {
		List<ChatMessage> messages = new ArrayList<>();
		messages.add(ChatMessage.system("You are a careful assistant. Answer in full sentences."));
		for (int i = 0; i < rounds; i++) {
			messages.add(ChatMessage.user("Question " + i + ": " + "why does the network stack retransmit packets? ".repeat(20)));
			messages.add(ChatMessage.assistant("Answer " + i + ": " + "because acknowledgements time out under loss. ".repeat(25)));
		}
		messages.add(ChatMessage.user("Now summarise everything in one paragraph."));
		return ChatRequest.of("gpt-4o", messages);
	}

	/** A provider whose tokenizer counts 30 % more than the estimate, and which refuses above its limit. */
	record Provider(int limit, TokenCounter tokenizer) {
		int count(ChatRequest r) {
			return tokenizer.count(r.messages());
		}

		boolean accepts(ChatRequest r, int reservedOutput) {
			return count(r) + reservedOutput <= limit;
		}
	}

	@Test
	void defaults() {
		TruncationSpec spec = TruncationSpec.defaults();
		assertThat(spec.maxTruncations()).isEqualTo(2);
		assertThat(spec.reservedOutputTokens()).isEqualTo(1024);
		assertThat(spec.shrinkFactor()).isEqualTo(0.75);
		assertThat(spec.truncator()).isSameAs(PromptTruncator.tokenBudget());
		assertThat(spec.counter()).isSameAs(TokenCounter.estimate());
	}

	@Test
	void aParsedLimitIsReachedInOneStepEvenWithTheEstimate() {
		TokenCounter estimate = TokenCounter.estimate();
		Provider provider = new Provider(8_192, text -> (int) Math.ceil(estimate.count(text) * 1.3));
		ChatRequest request = conversation(40);
		assertThat(provider.accepts(request, 1024)).isFalse();

		TruncationSpec.Result r = TruncationSpec.defaults()
				.shrink(request, OptionalInt.of(provider.limit()), OptionalInt.of(provider.count(request)));

		assertThat(provider.accepts(r.request(), 1024)).as("fits after one truncation").isTrue();
		assertThat(r.tokensAfter()).isLessThan(r.tokensBefore()).isLessThanOrEqualTo(r.budget());
		assertThat(r.tokensDropped()).isEqualTo(r.tokensBefore() - r.tokensAfter());
		// and not by throwing away far more than needed
		assertThat(provider.count(r.request()) + 1024).isGreaterThan(8_192 * 9 / 10);
	}

	@Test
	void theLimitsParsedFromRealProviderErrorsAreReachedInOneStep() {
		TokenCounter estimate = TokenCounter.estimate();
		Provider provider = new Provider(8_192, text -> (int) Math.ceil(estimate.count(text) * 1.3));
		ChatRequest request = conversation(40);
		int counted = provider.count(request);
		String openAi = "{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens. However, your "
				+ "messages resulted in " + counted + " tokens. Please reduce the length of the messages.\","
				+ "\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}";
		String anthropic = "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\","
				+ "\"message\":\"prompt is too long: " + counted + " tokens > 8192 maximum\"}}";
		for (String body : List.of(openAi, anthropic)) {
			ContextLengthExceededException e = (ContextLengthExceededException) ProviderErrors.fromHttp("p", 400,
					header -> null, body);
			assertThat(e.limit()).hasValue(8_192);
			assertThat(e.actual()).hasValue(counted);

			TruncationSpec.Result r = TruncationSpec.defaults().shrink(request, e.limit(), e.actual());

			assertThat(provider.accepts(r.request(), 1024)).as("fits after one truncation: %s", body).isTrue();
		}
	}

	@Test
	void aParsedLimitIsReachedInOneStepWithAnExactCounter() {
		TokenCounter exact = TokenCounter.jtokkit("o200k_base");
		Provider provider = new Provider(4_096, exact);
		ChatRequest request = conversation(25).withMaxTokens(500);
		TruncationSpec spec = TruncationSpec.defaults().counter(exact);

		TruncationSpec.Result r = spec.shrink(request, OptionalInt.of(4_096), OptionalInt.of(provider.count(request)));

		assertThat(r.budget()).isEqualTo(4_096 - 500);
		assertThat(provider.accepts(r.request(), 500)).isTrue();
		assertThat(r.request().maxTokens()).isEqualTo(500);
	}

	@Test
	void theRequestsMaxTokensIsReservedInsteadOfTheDefault() {
		ChatRequest request = conversation(2);
		assertThat(TruncationSpec.defaults().reservedFor(request)).isEqualTo(1024);
		assertThat(TruncationSpec.defaults().reservedFor(request.withMaxTokens(300))).isEqualTo(300);
		assertThat(TruncationSpec.defaults().nextBudget(request.withMaxTokens(300), OptionalInt.of(2_000), NONE, 5_000))
				.isEqualTo(1_700);
		assertThat(TruncationSpec.defaults().reservedOutputTokens(0).nextBudget(request, OptionalInt.of(2_000), NONE, 5_000))
				.isEqualTo(2_000);
	}

	@Test
	void theProvidersCountTranslatesTheLimitIntoTheCountersTokens() {
		// the counter says 5 000 where the provider counted 10 000: half the provider's room
		assertThat(TruncationSpec.defaults().nextBudget(conversation(1), OptionalInt.of(9_192), OptionalInt.of(10_000), 5_000))
				.isEqualTo(4_084);
	}

	@Test
	void anUnknownLimitShrinksByTheFactor() {
		assertThat(TruncationSpec.defaults().nextBudget(conversation(1), NONE, NONE, 1_000)).isEqualTo(750);
		assertThat(TruncationSpec.defaults().shrinkFactor(0.5).nextBudget(conversation(1), NONE, OptionalInt.of(3), 1_000))
				.isEqualTo(500);
	}

	@Test
	void everyAttemptIsStrictlySmallerEvenWhenTheCountsDisagree() {
		// by the counter 3 000 fits into 4 096 - 1 024, but the provider refused it: shrink anyway
		assertThat(TruncationSpec.defaults().nextBudget(conversation(1), OptionalInt.of(4_096), NONE, 3_000))
				.isEqualTo(2_250);
		assertThat(TruncationSpec.defaults().nextBudget(conversation(1), OptionalInt.of(4_096), OptionalInt.of(2_000), 3_000))
				.isEqualTo(2_250);
	}

	@Test
	void repeatedRefusalsShrinkTheRequestEveryTime() {
		TruncationSpec spec = TruncationSpec.defaults().maxTruncations(10);
		ChatRequest request = conversation(30);
		int previous = spec.counter().count(request.messages());
		int rounds = 0;
		try {
			for (; rounds < spec.maxTruncations(); rounds++) {
				TruncationSpec.Result r = spec.shrink(request, NONE, NONE);
				assertThat(r.tokensBefore()).isEqualTo(previous);
				assertThat(r.tokensAfter()).isLessThan(previous);
				previous = r.tokensAfter();
				request = r.request();
			}
		}
		catch (PromptTooLargeException e) {
			assertThat(e.smallestSize()).isLessThanOrEqualTo(previous);
		}
		assertThat(rounds).isGreaterThanOrEqualTo(3);
		assertThat(request.lastMessage()).isEqualTo(conversation(30).lastMessage());
	}

	@Test
	void promptTooLargeWhenEvenTheLastUserMessageAloneIsTooBig() {
		ChatRequest request = ChatRequest.of("m", List.of(ChatMessage.system("Be brief."),
				ChatMessage.assistant("Earlier answer. ".repeat(50)), ChatMessage.user("Long paste. ".repeat(3_000))));
		PromptTooLargeException e = catchThrowableOfType(PromptTooLargeException.class,
				() -> TruncationSpec.defaults().shrink(request, OptionalInt.of(4_096), OptionalInt.of(9_500)));
		assertThat(e.limit()).isPresent();
		assertThat(e.smallestSize()).isGreaterThan(e.limit().getAsInt());
		assertThat(e.getMessage()).contains("limit is " + e.limit().getAsInt() + " tokens")
				.contains("smallest size reached is " + e.smallestSize() + " tokens");
	}

	@Test
	void aLimitThatDoesNotCoverTheReservedOutputIsTooLarge() {
		assertThatThrownBy(() -> TruncationSpec.defaults().nextBudget(conversation(1), OptionalInt.of(1_000), NONE, 900))
				.isInstanceOf(PromptTooLargeException.class).hasMessageContaining("900 tokens");
	}

	@Test
	void aTruncatorThatDoesNotShrinkIsCaught() {
		TruncationSpec lazy = TruncationSpec.defaults().truncator((request, budget, counter) -> request);
		assertThatThrownBy(() -> lazy.shrink(conversation(3), NONE, NONE)).isInstanceOf(PromptTooLargeException.class);
		TruncationSpec overBudget = TruncationSpec.defaults()
				.truncator((request, budget, counter) -> request.withMessages(request.messages().subList(1, request.messages().size())));
		assertThatThrownBy(() -> overBudget.shrink(conversation(3), NONE, NONE)).isInstanceOf(PromptTooLargeException.class);
	}

	@Test
	void settersCopyAndValidate() {
		TruncationSpec base = TruncationSpec.defaults();
		TruncationSpec custom = base.maxTruncations(1).reservedOutputTokens(256).shrinkFactor(0.5)
				.truncator(PromptTruncator.keepSystemAndLastTurns(3));
		assertThat(base.maxTruncations()).isEqualTo(2);
		assertThat(custom.maxTruncations()).isEqualTo(1);
		assertThat(custom.reservedOutputTokens()).isEqualTo(256);
		assertThat(custom.shrinkFactor()).isEqualTo(0.5);

		assertThatThrownBy(() -> base.maxTruncations(-1)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("maxTruncations").hasMessageContaining("-1");
		assertThatThrownBy(() -> base.maxTruncations(11)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("maxTruncations").hasMessageContaining("11");
		assertThatThrownBy(() -> base.reservedOutputTokens(-3)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("reservedOutputTokens").hasMessageContaining("-3");
		assertThatThrownBy(() -> base.shrinkFactor(1.0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("shrinkFactor").hasMessageContaining("1.0");
		assertThatThrownBy(() -> base.shrinkFactor(0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("shrinkFactor").hasMessageContaining("0.0");
		assertThatThrownBy(() -> base.truncator(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("truncator");
		assertThatThrownBy(() -> base.counter(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("counter");
		assertThatThrownBy(() -> base.nextBudget(conversation(1), NONE, NONE, 0)).isInstanceOf(IllegalArgumentException.class)
				.hasMessageContaining("currentSize").hasMessageContaining("0");
	}
}
