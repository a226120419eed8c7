package dev.aiguard.truncation;

import java.lang.reflect.InvocationTargetException;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.List;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ToolCall;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

class TokenCounterTest {

	@Test
	void estimateIsCharactersOverFourRoundedUp() {
		TokenCounter c = TokenCounter.estimate();
		assertThat(c.count((String) null)).isZero();
		assertThat(c.count("")).isZero();
		assertThat(c.count("a")).isEqualTo(1);
		assertThat(c.count("abcd")).isEqualTo(1);
		assertThat(c.count("abcde")).isEqualTo(2);
		assertThat(c.count("x".repeat(4001))).isEqualTo(1001);
	}

	@Test
	void aMessageAddsItsOverheadToolCallsAndToolCallId() {
		TokenCounter c = TokenCounter.estimate();
		assertThat(c.count(ChatMessage.user("abcdefgh"))).isEqualTo(4 + 2);
		ChatMessage call = ChatMessage.assistantToolCalls(List.of(new ToolCall("id01", "weather", "{\"c\":\"Oslo\"}")));
		assertThat(c.count(call)).isEqualTo(4 + 0 + 1 + 2 + 3);
		assertThat(c.count(ChatMessage.tool("id01", "4 C"))).isEqualTo(4 + 1 + 1);
	}

	@Test
	void aConversationAddsTheRequestOverhead() {
		TokenCounter c = TokenCounter.estimate();
		List<ChatMessage> messages = List.of(ChatMessage.system("abcd"), ChatMessage.user("abcdefgh"));
		assertThat(c.count(messages)).isEqualTo(3 + (4 + 1) + (4 + 2));
		assertThat(c.count(List.of())).isEqualTo(3);
	}

	@Test
	void aCustomCounterNeedsOnlyTheTextCount() {
		TokenCounter words = text -> text == null || text.isBlank() ? 0 : text.trim().split("\\s+").length;
		assertThat(words.count(List.of(ChatMessage.user("one two three")))).isEqualTo(3 + 4 + 3);
	}

	@Test
	void jtokkitCountsOpenAiTokensExactly() {
		TokenCounter cl100k = TokenCounter.jtokkit("cl100k_base");
		TokenCounter o200k = TokenCounter.jtokkit("o200k_base");
		assertThat(cl100k.count("hello world")).isEqualTo(2);
		assertThat(o200k.count("hello world")).isEqualTo(2);
		assertThat(cl100k.count("")).isZero();
		assertThat(cl100k.messageOverhead()).isEqualTo(3);
		assertThat(cl100k.count(List.of(ChatMessage.user("hello world")))).isEqualTo(3 + 3 + 2);
		assertThat(cl100k).hasToString("TokenCounter.jtokkit(cl100k_base)");
	}

	@Test
	void jtokkitCountsSpecialTokensAsPlainText() {
		assertThat(TokenCounter.jtokkit("cl100k_base").count("<|endoftext|>")).isGreaterThan(1);
	}

	@Test
	void unknownEncodingsAreNamed() {
		assertThatThrownBy(() -> TokenCounter.jtokkit("gpt5_base"))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("encodingName")
				.hasMessageContaining("gpt5_base");
		assertThatThrownBy(() -> TokenCounter.jtokkit(" "))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("encodingName");
	}

	@Test
	void theLibraryWorksWithoutJtokkitUntilItIsAskedFor() throws Exception {
		URL libraryClasses = TokenCounter.class.getProtectionDomain().getCodeSource().getLocation();
		try (URLClassLoader isolated = new URLClassLoader(new URL[] {libraryClasses}, ClassLoader.getPlatformClassLoader())) {
			assertThatThrownBy(() -> isolated.loadClass("com.knuddels.jtokkit.Encodings"))
					.isInstanceOf(ClassNotFoundException.class);
			Class<?> counterType = Class.forName(TokenCounter.class.getName(), true, isolated);
			assertThat(counterType).isNotSameAs(TokenCounter.class);

			Object estimate = counterType.getMethod("estimate").invoke(null);
			assertThat(counterType.getMethod("count", String.class).invoke(estimate, "abcdefgh")).isEqualTo(2);
			Class<?> spec = Class.forName(TruncationSpec.class.getName(), true, isolated);
			assertThat(spec.getMethod("defaults").invoke(null)).isNotNull();

			Throwable failure = catchThrowable(() -> counterType.getMethod("jtokkit", String.class).invoke(null, "cl100k_base"));
			assertThat(failure).isInstanceOf(InvocationTargetException.class);
			assertThat(failure.getCause()).isInstanceOf(IllegalStateException.class)
					.hasMessageContaining("com.knuddels:jtokkit");
		}
	}
}
