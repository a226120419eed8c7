package dev.aiguard.test;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Objects;
import java.util.function.Predicate;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.retry.PartialStreamException;
import org.reactivestreams.Publisher;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * Small helpers for testing streams of {@link ChatChunk}s with {@code StepVerifier}: look at the
 * text and leave out the role, finish, usage and terminal chunks around it.
 *
 * <pre>{@code
 * StepVerifier.create(ChatSteps.tokens(guarded))             // content only
 *     .expectNext("Hel", "lo")
 *     .expectErrorMatches(ChatSteps.partialAfter(2))
 *     .verify();
 *
 * ChatSteps.expectAnswer(StepVerifier.create(guarded), "Hello there").verify();
 *
 * ChatSteps.expectPartialAnswer(StepVerifier.withVirtualTime(() -> guard.call(request, model))
 *         .thenAwait(Duration.ofSeconds(10)), "Hel", "lo")
 *     .verify();
 * }</pre>
 *
 * In virtual time, advance the clock ({@code thenAwait}) before handing the step over: these
 * helpers only read signals.
 */
public final class ChatSteps {

	private ChatSteps() {
	}

	/**
	 * @return the text of each content chunk of {@code answer}, in order; errors and completion pass
	 *         through
	 */
	public static Flux<String> tokens(Publisher<ChatChunk> answer) {
		Objects.requireNonNull(answer, "answer");
		return Flux.from(answer).filter(ChatChunk::hasContent).map(ChatChunk::text);
	}

	/** @return the text of {@code answer}'s content chunks joined, once it completes; its error otherwise */
	public static Mono<String> text(Publisher<ChatChunk> answer) {
		return tokens(answer).collect(StringBuilder::new, StringBuilder::append).map(StringBuilder::toString);
	}

	/**
	 * @return matches a {@link PartialStreamException} saying {@code tokens} content chunks reached the
	 *         subscriber (for {@code expectErrorMatches})
	 */
	public static Predicate<Throwable> partialAfter(long tokens) {
		return error -> error instanceof PartialStreamException partial && partial.tokensDelivered() == tokens;
	}

	/**
	 * Expects the whole remaining stream to be an answer whose content reads {@code text}, then
	 * completion.
	 *
	 * @param step where the answer starts, e.g. {@code StepVerifier.create(answer)}
	 * @return the verifier, ready for {@code verify()}
	 */
	public static StepVerifier expectAnswer(StepVerifier.Step<ChatChunk> step, String text) {
		Objects.requireNonNull(step, "step");
		Objects.requireNonNull(text, "text");
		return step.recordWith(ArrayList::new)
			.thenConsumeWhile(chunk -> true)
			.consumeRecordedWith(chunks -> {
				String seen = join(chunks);
				if (!seen.equals(text)) {
					throw new AssertionError("expected the answer \"" + text + "\" but it was \"" + seen + "\"");
				}
			})
			.expectComplete();
	}

	/**
	 * Expects exactly these content tokens (other chunks in between are skipped), then a
	 * {@link PartialStreamException} counting them: the guard's way of saying the answer broke
	 * after the user saw part of it.
	 *
	 * @param step where the answer starts
	 * @param tokens the content the subscriber receives before the failure, one chunk each
	 * @return the verifier, ready for {@code verify()}
	 */
	public static StepVerifier expectPartialAnswer(StepVerifier.Step<ChatChunk> step, String... tokens) {
		Objects.requireNonNull(step, "step");
		Objects.requireNonNull(tokens, "tokens");
		StepVerifier.Step<ChatChunk> s = step;
		for (int i = 0; i < tokens.length; i++) {
			String expected = Objects.requireNonNull(tokens[i], "tokens[" + i + "]");
			int position = i + 1;
			s = s.thenConsumeWhile(chunk -> !chunk.hasContent()).assertNext(chunk -> {
				if (!chunk.text().equals(expected)) {
					throw new AssertionError("expected token " + position + " to be \"" + expected + "\" but it was "
							+ chunk);
				}
			});
		}
		Predicate<Throwable> partial = partialAfter(tokens.length);
		return s.thenConsumeWhile(chunk -> !chunk.hasContent()).expectErrorSatisfies(error -> {
			if (!partial.test(error)) {
				throw new AssertionError("expected a PartialStreamException after " + tokens.length
						+ " token(s) but the stream failed with " + error, error);
			}
		});
	}

	private static String join(Collection<ChatChunk> chunks) {
		StringBuilder text = new StringBuilder();
		for (ChatChunk chunk : chunks) {
			if (chunk.hasContent()) {
				text.append(chunk.text());
			}
		}
		return text.toString();
	}
}
