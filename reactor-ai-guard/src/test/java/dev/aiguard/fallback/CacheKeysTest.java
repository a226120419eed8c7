package dev.aiguard.fallback;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.ToolCall;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Hooks;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;

class CacheKeysTest {

	static ChatRequest req(String model, ChatMessage... messages) {
		return ChatRequest.of(model, List.of(messages));
	}

	@AfterEach
	void resetHooks() {
		Hooks.resetOnErrorDropped();
	}

	@Test
	void sameRequestSameKey() {
		Object a = CacheKeys.of(req("gpt", ChatMessage.system("Be brief."), ChatMessage.user("Hours?")));
		Object b = CacheKeys.of(req("gpt", ChatMessage.system("Be brief."), ChatMessage.user("Hours?")));
		assertThat(a).isEqualTo(b).hasSameHashCodeAs(b).isNotSameAs(b);
	}

	@Test
	void aResponseFormatIsPartOfTheKey() {
		ChatRequest plain = req("gpt", ChatMessage.user("Weather?"));
		ChatRequest json = plain.withResponseFormat(dev.aiguard.chat.ResponseFormat.jsonSchema("w", "{\"type\":\"object\"}"));
		ChatRequest other = plain.withResponseFormat(dev.aiguard.chat.ResponseFormat.jsonSchema("w", "{\"type\":\"array\"}"));
		assertThat(CacheKeys.of(json)).isNotEqualTo(CacheKeys.of(plain)).isNotEqualTo(CacheKeys.of(other));
		assertThat(CacheKeys.of(json)).isEqualTo(CacheKeys.of(plain.withResponseFormat(json.responseFormat())));
	}

	@Test
	void whitespaceDifferencesDoNotChangeTheKey() {
		Object a = CacheKeys.of(req("gpt", ChatMessage.user("What are\tyour   opening hours?")));
		Object b = CacheKeys.of(req("gpt", ChatMessage.user("  What are your opening\n\nhours? \r\n")));
		assertThat(a).isEqualTo(b);
	}

	@Test
	void modelRoleContentCaseAndToolsChangeTheKey() {
		Object base = CacheKeys.of(req("gpt", ChatMessage.user("Hours?")));
		assertThat(CacheKeys.of(req("claude", ChatMessage.user("Hours?")))).isNotEqualTo(base);
		assertThat(CacheKeys.of(req(null, ChatMessage.user("Hours?")))).isNotEqualTo(base);
		assertThat(CacheKeys.of(req("gpt", ChatMessage.system("Hours?")))).isNotEqualTo(base);
		assertThat(CacheKeys.of(req("gpt", ChatMessage.user("hours?")))).isNotEqualTo(base);
		assertThat(CacheKeys.of(req("gpt", ChatMessage.user("Hours?"), ChatMessage.assistant("9-5"),
				ChatMessage.user("Hours?")))).isNotEqualTo(base);
		Object callA = CacheKeys.of(req("gpt", ChatMessage.assistantToolCalls(List.of(new ToolCall("1", "hours", "{}")))));
		Object callB = CacheKeys.of(req("gpt", ChatMessage.assistantToolCalls(List.of(new ToolCall("1", "menu", "{}")))));
		assertThat(callA).isNotEqualTo(callB);
	}

	@Test
	void fieldBoundariesAreUnambiguous() {
		Object a = CacheKeys.of(req("gpt", ChatMessage.user("ab"), ChatMessage.user("c")));
		Object b = CacheKeys.of(req("gpt", ChatMessage.user("a"), ChatMessage.user("bc")));
		Object c = CacheKeys.of(req("gptu", ChatMessage.user("ser")));
		Object d = CacheKeys.of(req("gpt", ChatMessage.user("user")));
		assertThat(a).isNotEqualTo(b);
		assertThat(c).isNotEqualTo(d);
	}

	@Test
	void keyIsAFixedSizeDigestWithAStableText() {
		StringBuilder longPrompt = new StringBuilder();
		for (int i = 0; i < 10_000; i++) {
			longPrompt.append("word").append(i).append(' ');
		}
		Object key = CacheKeys.of(req("gpt", ChatMessage.user(longPrompt.toString())));
		assertThat(key.toString()).matches("sha256:[0-9a-f]{64}");
		// pinned: the text form is a contract for external stores
		assertThat(CacheKeys.of(req("gpt", ChatMessage.user("hello"))).toString())
				.isEqualTo(CacheKeys.of(req("gpt", ChatMessage.user(" hello "))).toString())
				.isEqualTo(CacheKeysTest.expectedDigestOfGptHello());
	}

	/** Recomputed independently of CacheKeys, from the documented byte layout. */
	static String expectedDigestOfGptHello() {
		try {
			java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
			java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
			java.io.DataOutputStream data = new java.io.DataOutputStream(out);
			for (Object field : new Object[] {"aiguard-cache-key-v1", "gpt", 1, "user", "hello", null, 0}) {
				if (field instanceof Integer) {
					data.writeInt((Integer) field);
				}
				else if (field == null) {
					data.writeInt(-1);
				}
				else {
					byte[] bytes = ((String) field).getBytes(java.nio.charset.StandardCharsets.UTF_8);
					data.writeInt(bytes.length);
					data.write(bytes);
				}
			}
			byte[] digest = md.digest(out.toByteArray());
			StringBuilder hex = new StringBuilder("sha256:");
			for (byte b : digest) {
				hex.append(String.format("%02x", b));
			}
			return hex.toString();
		}
		catch (Exception e) {
			throw new AssertionError(e);
		}
	}

	@Test
	void lastUserMessageKeyIgnoresHistory() {
		var lastUser = CacheKeys.lastUserMessage();
		Object a = lastUser.apply(req("gpt", ChatMessage.system("You are a bot."), ChatMessage.user("Hours?")));
		Object b = lastUser.apply(req("gpt", ChatMessage.user("Hi"), ChatMessage.assistant("Hello!"),
				ChatMessage.user("Hours?")));
		Object c = lastUser.apply(req("gpt", ChatMessage.user("Menu?")));
		assertThat(a).isEqualTo(b).isNotEqualTo(c);
		assertThat(a).isNotEqualTo(CacheKeys.of(req("gpt", ChatMessage.user("Hours?"))));
	}

	@Test
	void standardFunctionIsTheStandardKey() {
		ChatRequest r = req("gpt", ChatMessage.user("Hours?"));
		assertThat(CacheKeys.standard().apply(r)).isEqualTo(CacheKeys.of(r));
	}

	@Test
	void keyOfIsolatesAThrowingFunctionAndHasNoKeyWithoutRequest() {
		List<Throwable> dropped = new CopyOnWriteArrayList<>();
		Hooks.onErrorDropped(dropped::add);
		RuntimeException broken = new RuntimeException("key function broke");
		ChatRequest r = req("gpt", ChatMessage.user("Hours?"));
		assertThat(CacheKeys.keyOf(x -> {
			throw broken;
		}, r)).isNull();
		assertThat(dropped).containsExactly(broken);
		assertThat(CacheKeys.keyOf(CacheKeys.standard(), null)).isNull();
		assertThat(CacheKeys.keyOf(x -> "tenant-1:" + x.model(), r)).isEqualTo("tenant-1:gpt");
	}

	@Test
	void normalizeWhitespaceTrimsAndCollapses() {
		assertThat(CacheKeys.normalizeWhitespace("")).isEmpty();
		assertThat(CacheKeys.normalizeWhitespace("   ")).isEmpty();
		assertThat(CacheKeys.normalizeWhitespace("a b")).isEqualTo("a b");
		assertThat(CacheKeys.normalizeWhitespace(" a  b\t\nc ")).isEqualTo("a b c");
		assertThat(CacheKeys.normalizeWhitespace("a\tb")).isEqualTo("a b");
		String clean = "already clean";
		assertThat(CacheKeys.normalizeWhitespace(clean)).isSameAs(clean);
	}

	@Test
	void keysAreComputedWithoutBlockingOnANonBlockingThread() {
		ChatRequest r = req("gpt", ChatMessage.user("Hours?"));
		StepVerifier.create(Mono.fromCallable(() -> CacheKeys.of(r)).subscribeOn(Schedulers.parallel()))
				.expectNext(CacheKeys.of(r))
				.verifyComplete();
	}
}
