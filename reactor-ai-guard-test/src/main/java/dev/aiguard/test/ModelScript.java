package dev.aiguard.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.Supplier;

import dev.aiguard.chat.ChatChunk;
import dev.aiguard.chat.ChatMessage;
import dev.aiguard.chat.ChatRequest;
import dev.aiguard.chat.Usage;
import dev.aiguard.test.mock.MockAnswers;
import dev.aiguard.truncation.TokenCounter;
import org.jspecify.annotations.Nullable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;

/**
 * What a {@link ScriptedModel} does with one call: which tokens it answers, how fast, and how the
 * answer ends. Immutable and copy-on-write: every setter returns a new script, so a script can be
 * a shared template.
 *
 * <pre>{@code
 * ModelScript slow = ModelScript.answer("Streams stall when nobody watches them.")
 *     .firstTokenDelay(Duration.ofSeconds(2))
 *     .tokenInterval(Duration.ofMillis(50));
 * ModelScript stuck = slow.stallAfter(3);                         // 3 tokens, then silence
 * ModelScript broken = slow.failAfter(0, () -> new ProviderServerException("openai", 500, "server_error", null, "boom", null));
 * }</pre>
 *
 * The chunks are those {@code OpenAiCompatibleClient} makes of an OpenAI stream: a role chunk
 * ({@code role = "assistant"}, no text), one {@link ChatChunk#token} per token, then
 * {@link ChatChunk#finish}, a {@link ChatChunk#usage} chunk and {@link ChatChunk#done()}. A script
 * ends its answer in one of three ways: completes (with or without the terminal chunks, see
 * {@link #omitTerminal()}), stalls after some tokens ({@link #stallAfter}), or fails after some
 * tokens ({@link #failAfter}); the last of these set wins. A stall or failure after more tokens
 * than the answer has comes after the whole answer.
 */
public final class ModelScript {

	private static final TokenCounter COUNTER = TokenCounter.estimate();

	private enum Ending {
		COMPLETE, STALL, FAIL
	}

	private final Function<ChatRequest, List<String>> tokens;
	private final Duration firstTokenDelay;
	private final Duration tokenInterval;
	private final Ending ending;
	private final int endAfter;
	@Nullable
	private final Supplier<? extends Throwable> failure;
	private final boolean omitTerminal;
	private final String finishReason;

	private ModelScript(Function<ChatRequest, List<String>> tokens, Duration firstTokenDelay, Duration tokenInterval,
			Ending ending, int endAfter, @Nullable Supplier<? extends Throwable> failure, boolean omitTerminal,
			String finishReason) {
		this.tokens = tokens;
		this.firstTokenDelay = firstTokenDelay;
		this.tokenInterval = tokenInterval;
		this.ending = ending;
		this.endAfter = endAfter;
		this.failure = failure;
		this.omitTerminal = omitTerminal;
		this.finishReason = finishReason;
	}

	private static ModelScript of(Function<ChatRequest, List<String>> tokens) {
		return new ModelScript(tokens, Duration.ZERO, Duration.ZERO, Ending.COMPLETE, 0, null, false, "stop");
	}

	/**
	 * @param text the answer, split into tokens the way the mock server splits its answers: words,
	 *        each with the space that follows it
	 * @return a script answering {@code text} at once, whatever the request
	 */
	public static ModelScript answer(String text) {
		Objects.requireNonNull(text, "text");
		List<String> split = words(text);
		return of(request -> split);
	}

	/**
	 * @param tokens the content deltas of the answer, in order (none: an answer without content)
	 * @return a script answering these tokens at once, whatever the request
	 */
	public static ModelScript tokens(String... tokens) {
		Objects.requireNonNull(tokens, "tokens");
		for (int i = 0; i < tokens.length; i++) {
			if (tokens[i] == null) {
				throw new IllegalArgumentException("tokens[" + i + "] must not be null");
			}
		}
		List<String> list = List.of(tokens);
		return of(request -> list);
	}

	/**
	 * @return a script answering each request as the mock model server does: {@link MockAnswers#tokens}
	 *         of its last user message, so a test can predict every token of any question
	 */
	public static ModelScript mockAnswers() {
		return of(request -> MockAnswers.tokens(lastUserText(request)));
	}

	/** @param delay from subscription to the first token (0 by default) */
	public ModelScript firstTokenDelay(Duration delay) {
		return new ModelScript(tokens, nonNegative("firstTokenDelay", delay), tokenInterval, ending, endAfter, failure,
				omitTerminal, finishReason);
	}

	/** @param interval between two tokens (0 by default) */
	public ModelScript tokenInterval(Duration interval) {
		return new ModelScript(tokens, firstTokenDelay, nonNegative("tokenInterval", interval), ending, endAfter,
				failure, omitTerminal, finishReason);
	}

	/**
	 * @param tokens content chunks sent before the stream goes silent, never completing (until cancelled)
	 * @return a copy that stalls
	 */
	public ModelScript stallAfter(int tokens) {
		return new ModelScript(this.tokens, firstTokenDelay, tokenInterval, Ending.STALL, count("stallAfter", tokens),
				null, omitTerminal, finishReason);
	}

	/**
	 * @param tokens content chunks sent before the failure; 0 fails before anything, role chunk
	 *        included, the way an HTTP error does
	 * @param error makes the exception, once per call; it arrives when the next token would have
	 *        (after the first-token delay when {@code tokens} is 0)
	 * @return a copy that fails
	 */
	public ModelScript failAfter(int tokens, Supplier<? extends Throwable> error) {
		Objects.requireNonNull(error, "error");
		return new ModelScript(this.tokens, firstTokenDelay, tokenInterval, Ending.FAIL, count("failAfter", tokens),
				error, omitTerminal, finishReason);
	}

	/**
	 * @return a copy that completes after its tokens without the finish, usage and terminal
	 *         chunks: a silently truncated answer
	 */
	public ModelScript omitTerminal() {
		return new ModelScript(tokens, firstTokenDelay, tokenInterval, Ending.COMPLETE, 0, null, true, finishReason);
	}

	/** @param reason the finish reason of the answer ({@code stop} by default; {@code length}, {@code content_filter}...) */
	public ModelScript finishReason(String reason) {
		if (reason == null || reason.isBlank()) {
			throw new IllegalArgumentException("finishReason must not be blank, was "
					+ (reason == null ? "null" : "'" + reason + "'"));
		}
		return new ModelScript(tokens, firstTokenDelay, tokenInterval, ending, endAfter, failure, omitTerminal, reason);
	}

	/** @return the tokens this script answers {@code request} with */
	public List<String> tokensFor(ChatRequest request) {
		return tokens.apply(Objects.requireNonNull(request, "request"));
	}

	/** Plays the script for one call, every delay on {@code timer}. */
	Flux<ChatChunk> play(ChatRequest request, Scheduler timer) {
		List<String> answer = tokensFor(request);
		int sent = ending == Ending.COMPLETE ? answer.size() : Math.min(endAfter, answer.size());
		Flux<ChatChunk> content = Flux.range(0, sent)
			.concatMap(i -> delayed(i == 0 ? firstTokenDelay : tokenInterval, ChatChunk.token(answer.get(i)), timer));
		Duration untilNext = sent == 0 ? firstTokenDelay : tokenInterval;
		Flux<ChatChunk> end = switch (ending) {
			case STALL -> Flux.never();
			case FAIL -> delayed(untilNext, 0, timer).flatMapMany(tick -> Flux.error(failure.get()));
			case COMPLETE -> omitTerminal ? Flux.empty()
					: Flux.just(ChatChunk.finish(finishReason),
							ChatChunk.usage(new Usage(COUNTER.count(request.messages()), answer.size())), ChatChunk.done());
		};
		if (ending == Ending.FAIL && sent == 0) {
			return end;
		}
		ChatChunk role = new ChatChunk("", "assistant", null, null, List.of(), false, false);
		return Flux.concat(Mono.just(role), content, end);
	}

	private static <T> Mono<T> delayed(Duration delay, T value, Scheduler timer) {
		return delay.isZero() ? Mono.just(value) : Mono.delay(delay, timer).thenReturn(value);
	}

	private static String lastUserText(ChatRequest request) {
		List<ChatMessage> messages = request.messages();
		for (int i = messages.size() - 1; i >= 0; i--) {
			if (messages.get(i).role() == ChatMessage.Role.USER) {
				return messages.get(i).content();
			}
		}
		return request.lastMessage().content();
	}

	private static List<String> words(String text) {
		List<String> out = new ArrayList<>();
		int start = 0;
		for (int i = 0; i < text.length(); i++) {
			if (text.charAt(i) == ' ') {
				out.add(text.substring(start, i + 1));
				start = i + 1;
			}
		}
		if (start < text.length()) {
			out.add(text.substring(start));
		}
		return List.copyOf(out);
	}

	private static Duration nonNegative(String field, Duration value) {
		if (value == null || value.isNegative()) {
			throw new IllegalArgumentException(field + " must be 0 or more, was " + value);
		}
		return value;
	}

	private static int count(String field, int value) {
		if (value < 0) {
			throw new IllegalArgumentException(field + " must be 0 or more tokens, was " + value);
		}
		return value;
	}

	@Override
	public String toString() {
		return "ModelScript[firstTokenDelay=" + firstTokenDelay + ", tokenInterval=" + tokenInterval + ", ending="
				+ (ending == Ending.COMPLETE ? (omitTerminal ? "complete without terminal" : "complete, " + finishReason)
						: ending.name().toLowerCase(java.util.Locale.ROOT) + " after " + endAfter)
				+ ']';
	}
}
