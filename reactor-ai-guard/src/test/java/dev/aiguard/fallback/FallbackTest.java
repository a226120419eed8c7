package dev.aiguard.fallback;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import dev.aiguard.core.Priority;
import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import org.junit.jupiter.api.Test;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import dev.aiguard.core.Source;

class FallbackTest {

	static final ChatRequest CHAT = ChatRequest.of("m", List.of(ChatMessage.user("hi")));

	static FallbackRequest callForm(Object key) {
		return new FallbackRequest(CHAT, new RuntimeException("down"), FallbackTrigger.BREAKER_OPEN, Priority.P1, key);
	}

	static FallbackRequest transformForm() {
		return new FallbackRequest(null, new RuntimeException("down"), FallbackTrigger.BREAKER_OPEN, Priority.P1, null);
	}

	@Test
	void staticTextIsAWordByWordAnswerWithFinishAndDone() {
		Fallback<ChatChunk> step = Fallback.staticText("  Sorry,  the assistant\nis busy. ");
		assertThat(step.source()).isEqualTo(Source.STATIC);
		assertThat(step.mayBlock()).isFalse();
		List<ChatChunk> chunks = step.answer(transformForm()).collectList().block(Duration.ofSeconds(1));
		assertThat(chunks).containsExactly(ChatChunk.token("  Sorry,  "), ChatChunk.token("the "),
				ChatChunk.token("assistant\n"), ChatChunk.token("is "), ChatChunk.token("busy. "),
				ChatChunk.finish("stop"), ChatChunk.done());
		StringBuilder text = new StringBuilder();
		chunks.forEach(c -> text.append(c.text()));
		assertThat(text).hasToString("  Sorry,  the assistant\nis busy. ");
	}

	@Test
	void staticTextMustNotBeBlank() {
		assertThatThrownBy(() -> Fallback.staticText(" \n")).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("text must not be blank, was ' \n'");
		assertThatThrownBy(() -> Fallback.staticText(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("text must not be blank, was null");
	}

	@Test
	void staticAnswerIsCopiedAndValidated() {
		List<String> chunks = new ArrayList<>(List.of("a", "b"));
		Fallback<String> step = Fallback.staticAnswer(chunks);
		chunks.add("c");
		StepVerifier.create(step.answer(transformForm())).expectNext("a", "b").verifyComplete();
		StepVerifier.create(step.answer(transformForm())).expectNext("a", "b").verifyComplete();
		assertThatThrownBy(() -> Fallback.staticAnswer(List.of())).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("chunks must hold at least one chunk, was []");
		assertThatThrownBy(() -> Fallback.staticAnswer(Arrays.asList("a", null)))
				.isInstanceOf(IllegalArgumentException.class)
				.hasMessage("chunks[1] must not be null");
	}

	@Test
	void factoriesRejectNullNamingTheArgument() {
		assertThatThrownBy(() -> Fallback.model(null)).hasMessage("factory must not be null");
		assertThatThrownBy(() -> Fallback.<String>model(r -> Flux.empty(), null)).hasMessage("guard must not be null");
		assertThatThrownBy(() -> Fallback.cache(null)).hasMessage("cache must not be null");
		assertThatThrownBy(() -> Fallback.lightweight(null)).isInstanceOf(IllegalArgumentException.class)
				.hasMessage("function must not be null");
	}

	@Test
	void modelStepOpensItsStreamOnlyWhenSubscribed() {
		AtomicInteger opened = new AtomicInteger();
		Fallback<String> step = Fallback.model(r -> {
			opened.incrementAndGet();
			return Flux.just(r.model() + ":answer");
		});
		assertThat(step.source()).isEqualTo(Source.FALLBACK_MODEL);
		assertThat(step.mayBlock()).isFalse();
		Flux<String> answer = step.answer(callForm(null));
		assertThat(opened).hasValue(0);
		StepVerifier.create(answer).expectNext("m:answer").verifyComplete();
		assertThat(opened).hasValue(1);
	}

	@Test
	void modelStepAppliesItsOwnGuard() {
		Fallback<String> step = Fallback.model(r -> Flux.just("a", "b"), flux -> flux.map(String::toUpperCase));
		StepVerifier.create(step.answer(callForm(null))).expectNext("A", "B").verifyComplete();
	}

	@Test
	void modelStepFailsWithoutAChatRequest() {
		Fallback<String> step = Fallback.model(r -> Flux.just("never"));
		StepVerifier.create(step.answer(transformForm()))
				.expectErrorSatisfies(e -> assertThat(e).isInstanceOf(IllegalStateException.class)
						.hasMessageContaining("needs the ChatRequest"))
				.verify(Duration.ofSeconds(1));
	}

	@Test
	void lightweightMayBlockUnlessDeclaredOtherwise() {
		Fallback<String> blocking = Fallback.lightweight(r -> Flux.just(r.priority().name()));
		Fallback<String> quick = Fallback.lightweight(r -> Flux.just("q"), false);
		assertThat(blocking.source()).isEqualTo(Source.LIGHTWEIGHT);
		assertThat(blocking.mayBlock()).isTrue();
		assertThat(quick.mayBlock()).isFalse();
		StepVerifier.create(blocking.answer(callForm(null))).expectNext("P1").verifyComplete();
	}

	@Test
	void cacheStepReplaysAHitAndMissesWithoutKey() {
		AtomicInteger lookups = new AtomicInteger();
		ResponseCache<String> cache = new ResponseCache<>() {
			@Override
			public Mono<List<String>> lookup(Object key) {
				lookups.incrementAndGet();
				return "k".equals(key) ? Mono.just(List.of("x", "y")) : Mono.empty();
			}

			@Override
			public void store(Object key, List<String> chunks) {
			}

			@Override
			public boolean mayBlock() {
				return true;
			}
		};
		Fallback<String> step = Fallback.cache(cache);
		assertThat(step.source()).isEqualTo(Source.CACHE);
		assertThat(step.mayBlock()).as("blocking exactly when the cache is").isTrue();
		StepVerifier.create(step.answer(callForm("k"))).expectNext("x", "y").verifyComplete();
		StepVerifier.create(step.answer(callForm("other"))).verifyComplete();
		StepVerifier.create(step.answer(transformForm())).verifyComplete();
		assertThat(lookups).as("no key, no lookup").hasValue(2);
	}

	@Test
	void requestRequiresCauseTriggerAndPriority() {
		RuntimeException cause = new RuntimeException();
		assertThatThrownBy(() -> new FallbackRequest(CHAT, null, FallbackTrigger.REJECTED, Priority.P0, null))
				.hasMessage("cause");
		assertThatThrownBy(() -> new FallbackRequest(CHAT, cause, null, Priority.P0, null)).hasMessage("trigger");
		assertThatThrownBy(() -> new FallbackRequest(CHAT, cause, FallbackTrigger.REJECTED, null, null))
				.hasMessage("priority");
	}
}
