package dev.aiguard.openai;

import java.util.List;

import com.openai.models.chat.completions.ChatCompletionContentPart;
import com.openai.models.chat.completions.ChatCompletionContentPartImage;
import com.openai.models.chat.completions.ChatCompletionContentPartText;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionFunctionMessageParam;
import com.openai.models.chat.completions.ChatCompletionMessageParam;
import com.openai.models.chat.completions.ChatCompletionStreamOptions;
import com.openai.models.chat.completions.ChatCompletionUserMessageParam;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;

class OpenAiRequestsTest {

	private static final ChatCompletionCreateParams TEMPLATE = ChatCompletionCreateParams.builder()
		.model("gpt-4o-mini")
		.addSystemMessage("template system message")
		.addUserMessage("template question")
		.temperature(0.3)
		.maxCompletionTokens(256L)
		.seed(7L)
		.user("user-42")
		.streamOptions(ChatCompletionStreamOptions.builder().includeUsage(true).build())
		.build();

	private static final List<ChatMessage> CONVERSATION = List.of(
			ChatMessage.system("Be brief."),
			ChatMessage.user("What is the weather in Oslo?"),
			ChatMessage.assistantToolCalls(List.of(new ToolCall("call_1", "weather", "{\"city\":\"Oslo\"}"))),
			ChatMessage.tool("call_1", "{\"celsius\":-3}"),
			ChatMessage.assistant("It is -3 °C."),
			ChatMessage.user("And tomorrow?"));

	/** @return a user message's content made of {@code parts} */
	private static ChatCompletionUserMessageParam.Content parts(ChatCompletionContentPart... parts) {
		return ChatCompletionUserMessageParam.Content.ofArrayOfContentParts(List.of(parts));
	}

	/** @return a text part */
	private static ChatCompletionContentPart text(String text) {
		return ChatCompletionContentPart.ofText(ChatCompletionContentPartText.builder().text(text).build());
	}

	/** @return an image part, by its address */
	private static ChatCompletionContentPart image(String url) {
		return ChatCompletionContentPart.ofImageUrl(ChatCompletionContentPartImage.builder()
			.imageUrl(ChatCompletionContentPartImage.ImageUrl.builder().url(url).build())
			.build());
	}

	@Test
	void theRequestsConversationReplacesTheTemplatesAndTheOptionsStay() {
		ChatCompletionCreateParams params = OpenAiRequests.toParams(TEMPLATE, new ChatRequest(null, CONVERSATION, null, null));

		assertThat(params.messages()).hasSize(6);
		assertThat(params.model().asString()).isEqualTo("gpt-4o-mini");
		assertThat(params.temperature()).contains(0.3);
		assertThat(params.maxCompletionTokens()).contains(256L);
		assertThat(params.seed()).contains(7L);
		assertThat(params.user()).contains("user-42");
		assertThat(params.streamOptions()).isPresent();
	}

	@Test
	void theRequestsModelLimitAndTemperatureWinWhenSet() {
		@SuppressWarnings("deprecation")
		ChatCompletionCreateParams legacyLimit = TEMPLATE.toBuilder().maxCompletionTokens((Long) null).maxTokens(100L).build();

		ChatCompletionCreateParams params = OpenAiRequests.toParams(legacyLimit,
				new ChatRequest("gpt-4.1", CONVERSATION, 64, 0.9));

		assertThat(params.model().asString()).isEqualTo("gpt-4.1");
		assertThat(params.maxCompletionTokens()).contains(64L);
		assertThat(deprecatedMaxTokens(params)).as("never both limits").isEmpty();
		assertThat(params.temperature()).contains(0.9);
	}

	@SuppressWarnings("deprecation")
	private static java.util.Optional<Long> deprecatedMaxTokens(ChatCompletionCreateParams params) {
		return params.maxTokens();
	}

	@Test
	void aConversationSurvivesTheRoundTrip() {
		ChatRequest request = new ChatRequest("gpt-4o-mini", CONVERSATION, 256, 0.3);

		ChatRequest back = OpenAiRequests.toChatRequest(OpenAiRequests.toParams(TEMPLATE, request));

		assertThat(back).isEqualTo(request);
	}

	@Test
	void theTemplateBecomesARequest() {
		ChatRequest request = OpenAiRequests.toChatRequest(TEMPLATE);

		assertThat(request.model()).isEqualTo("gpt-4o-mini");
		assertThat(request.messages()).containsExactly(ChatMessage.system("template system message"),
				ChatMessage.user("template question"));
		assertThat(request.maxTokens()).isEqualTo(256);
		assertThat(request.temperature()).isEqualTo(0.3);
	}

	@Test
	void aDeveloperMessageAndTextPartsBecomeText() {
		ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
			.model("o3-mini")
			.addDeveloperMessage("Think first.")
			.addUserMessage(parts(text("Hello, "), text("world")))
			.build();

		assertThat(OpenAiRequests.toChatRequest(params).messages())
			.containsExactly(ChatMessage.system("Think first."), ChatMessage.user("Hello, world"));
	}

	@Test
	void anImageCannotBeCarriedAndTheErrorNamesIt() {
		ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
			.model("gpt-4o")
			.addSystemMessage("Describe images.")
			.addUserMessage(parts(text("What is this?"), image("https://example.com/a.png")))
			.build();

		assertThatIllegalArgumentException().isThrownBy(() -> OpenAiRequests.toChatRequest(params))
			.withMessageStartingWith("messages[1].content[1]: the image_url part cannot be carried by a ChatRequest");
	}

	@Test
	@SuppressWarnings("deprecation")
	void aFunctionMessageCannotBeCarriedAndTheErrorNamesIt() {
		ChatCompletionCreateParams params = ChatCompletionCreateParams.builder()
			.model("gpt-4o")
			.addUserMessage("Hi")
			.addMessage(ChatCompletionMessageParam.ofFunction(
					ChatCompletionFunctionMessageParam.builder().name("legacy").content("{}").build()))
			.build();

		assertThatIllegalArgumentException().isThrownBy(() -> OpenAiRequests.toChatRequest(params))
			.withMessageStartingWith("messages[1]: a function message cannot be carried by a ChatRequest");
	}

	@Test
	void nullsAreRefusedByName() {
		ChatRequest request = ChatRequest.of("m", List.of(ChatMessage.user("q")));
		assertThatNullPointerException().isThrownBy(() -> OpenAiRequests.toParams(null, request)).withMessage("template");
		assertThatNullPointerException().isThrownBy(() -> OpenAiRequests.toParams(TEMPLATE, null)).withMessage("request");
		assertThatNullPointerException().isThrownBy(() -> OpenAiRequests.toChatRequest(null)).withMessage("params");
	}
}
