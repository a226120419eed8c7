package dev.aiguard.validation;

import java.util.List;
import java.util.regex.Pattern;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ResponseFormat;
import dev.aiguard.chat.ToolCall;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/** The built-in end-of-attempt validators, each on answers it passes and answers it rejects. */
class ValidationValidatorsTest {

	static final String CITY_SCHEMA = "{\"type\":\"object\",\"required\":[\"city\"],"
			+ "\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\",\"minimum\":1}}}";

	static final ChatRequest ASK = ChatRequest.of("m", List.of(ChatMessage.user("weather?")));
	static final ChatRequest ASK_JSON = ASK.withResponseFormat(ResponseFormat.jsonSchema("weather", CITY_SCHEMA));

	static Answer text(String text, String finishReason, ChatRequest request) {
		return Answer.of(text, List.of(), finishReason, request);
	}

	@Test
	void emptyAnswerRejectsNoTextAndWhitespaceButPassesTextAndToolCalls() {
		OutputValidator empty = Validators.emptyAnswer();
		assertThat(empty.check(text("", "stop", ASK))).contains("no content");
		assertThat(empty.check(text(" \n\t ", "stop", ASK))).contains("no content");
		assertThat(empty.check(Answer.withoutText(true, List.of(), "stop", null))).contains("no content");
		assertThat(empty.check(text(" ok ", "stop", ASK))).isNull();
		assertThat(empty.check(Answer.withoutText(true, List.of(new ToolCall("c1", "lookup", "{\"q\":1}")), "tool_calls",
				ASK))).isNull();
		assertThat(empty.name()).isEqualTo("empty");
		assertThat(empty.needsText()).isFalse();
		assertThat(empty.retryable()).isTrue();
	}

	@Test
	void emptyAnswerRejectsAToolCallWithoutArguments() {
		Answer answer = Answer.withoutText(true, List.of(new ToolCall("c1", "lookup", "{}"),
				new ToolCall("c2", "search", " ")), "tool_calls", ASK);
		assertThat(Validators.emptyAnswer().check(answer)).isEqualTo("tool call 'search' has no arguments");
	}

	@Test
	void finishReasonRejectsContentFilterByDefaultInAnyCase() {
		OutputValidator filter = Validators.finishReason();
		assertThat(filter.check(text("partial", "content_filter", ASK))).isEqualTo("finish reason 'content_filter'");
		assertThat(filter.check(text("partial", "CONTENT_FILTER", ASK))).isNotNull();
		assertThat(filter.check(text("fine", "stop", ASK))).isNull();
		assertThat(filter.check(text("fine", null, ASK))).isNull();
		assertThat(filter.check(text("cut", "length", ASK))).isNull();
		assertThat(filter.retryable()).isFalse();
	}

	@Test
	void lengthCountsOnlyWhenTheCallerAskedForNoCap() {
		OutputValidator limits = Validators.finishReason("content_filter", "length", "max_tokens");
		assertThat(limits.check(text("cut", "length", ASK))).contains("no maxTokens");
		assertThat(limits.check(text("cut", "max_tokens", ASK))).contains("no maxTokens");
		assertThat(limits.check(text("cut", "length", null))).contains("no maxTokens");
		assertThat(limits.check(text("cut", "length", ASK.withMaxTokens(50)))).isNull();
		assertThat(limits.check(text("whole", "stop", ASK))).isNull();
	}

	@Test
	void finishReasonNamesBadArguments() {
		assertThatIllegalArgumentException().isThrownBy(() -> Validators.finishReason(new String[0]))
				.withMessageContaining("reasons");
		assertThatIllegalArgumentException().isThrownBy(() -> Validators.finishReason("stop", " "))
				.withMessageContaining("reasons").withMessageContaining("' '");
	}

	@Test
	void refusalMatchesTheUsersPatternsOnly() {
		OutputValidator refusal = Validators.refusal(Pattern.compile("^I('m| am) (sorry|unable)", Pattern.CASE_INSENSITIVE),
				Pattern.compile("as an AI"));
		assertThat(refusal.check(text("I'm sorry, I can't help with that.", "stop", ASK))).contains("refusal pattern");
		assertThat(refusal.check(text("Well, as an AI model...", "stop", ASK))).contains("as an AI");
		assertThat(refusal.check(text("Paris is sunny, sorry for the wait.", "stop", ASK))).isNull();
		assertThat(refusal.needsText()).isTrue();
		assertThatIllegalArgumentException().isThrownBy(() -> Validators.refusal(new Pattern[0]))
				.withMessageContaining("patterns");
	}

	@Test
	void anAnswerWithoutItsTextSaysSoWhenAValidatorReadsIt() {
		Answer answer = Answer.withoutText(false, List.of(), "stop", ASK);
		assertThat(answer.hasText()).isFalse();
		assertThatIllegalStateException().isThrownBy(answer::text).withMessageContaining("needsText");
	}

	@Test
	void jsonSchemaPassesAMatchingAnswerAndNamesWhatIsWrongWithOthers() {
		OutputValidator json = Validators.jsonSchema();
		assertThat(json.check(text("{\"city\":\"Paris\",\"days\":2}", "stop", ASK_JSON))).isNull();
		assertThat(json.check(text("{\"days\":0}", "stop", ASK_JSON)))
				.contains("does not match the schema").contains("city").contains("days");
		assertThat(json.check(text("Sure! Here is the JSON: {", "stop", ASK_JSON))).contains("not JSON");
		assertThat(json.check(text("", "stop", ASK_JSON))).isNotNull();
	}

	@Test
	void jsonSchemaPassesRequestsWithoutAFormatAndHoldsOnlyThoseWithOne() {
		OutputValidator json = Validators.jsonSchema();
		assertThat(json.check(text("free text", "stop", ASK))).isNull();
		assertThat(json.holdsAnswer(ASK)).isFalse();
		assertThat(json.holdsAnswer(null)).isFalse();
		assertThat(json.holdsAnswer(ASK_JSON)).isTrue();
		assertThat(json.retryable()).isTrue();
	}

	@Test
	void aFixedSchemaAppliesToEveryAnswerAndIsCheckedWhenBuilt() {
		OutputValidator json = Validators.jsonSchema(CITY_SCHEMA);
		assertThat(json.holdsAnswer(null)).isTrue();
		assertThat(json.check(text("{\"city\":\"Oslo\"}", "stop", null))).isNull();
		assertThat(json.check(text("[]", "stop", ASK))).contains("does not match");
		assertThatIllegalArgumentException().isThrownBy(() -> Validators.jsonSchema("{not json"))
				.withMessageContaining("schema");
		assertThatIllegalArgumentException().isThrownBy(() -> Validators.jsonSchema(" "))
				.withMessageContaining("schema");
	}

	@Test
	void theJsonRetryRequestCarriesTheRejectedAnswerAndTheErrors() {
		OutputValidator json = Validators.jsonSchema();
		Answer bad = text("{\"days\":0}", "stop", ASK_JSON);
		String violation = json.check(bad);
		ChatRequest retry = json.retryRequest(ASK_JSON, bad, violation);
		assertThat(retry.messages()).hasSize(3);
		assertThat(retry.messages().get(1)).isEqualTo(ChatMessage.assistant("{\"days\":0}"));
		assertThat(retry.lastMessage().role()).isEqualTo(ChatMessage.Role.USER);
		assertThat(retry.lastMessage().content()).contains(violation).contains("JSON");
		assertThat(retry.responseFormat()).isEqualTo(ASK_JSON.responseFormat());
	}

	@Test
	void responseFormatNamesBadArguments() {
		assertThatIllegalArgumentException().isThrownBy(() -> ResponseFormat.jsonSchema("has space", CITY_SCHEMA))
				.withMessageContaining("name").withMessageContaining("has space");
		assertThatIllegalArgumentException().isThrownBy(() -> ResponseFormat.jsonSchema("ok", "  "))
				.withMessageContaining("schema");
	}

	@Test
	void anInvalidOutputExceptionNamesItsValidatorAndReason() {
		InvalidOutputException e = new InvalidOutputException("empty", "no content", true);
		assertThat(e).hasMessageContaining("'empty'").hasMessageContaining("no content");
		assertThat(e.validator()).isEqualTo("empty");
		assertThat(e.retryable()).isTrue();
		assertThat(e.getStackTrace()).isEmpty();
		assertThat(new DegenerateOutputException("repetition", 3, 70).retryable()).isFalse();
	}
}
