package dev.aiguard.test.mock;

import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Set;
import java.util.regex.Pattern;

import dev.aiguard.provider.RateLimits;
import org.jspecify.annotations.Nullable;

/**
 * What the embedded mock model does wrong, and how fast it talks. Immutable; every component is
 * checked when the profile is built, and a bad one fails with an {@link IllegalArgumentException}
 * naming the field and the value.
 *
 * <pre>{@code
 * FaultProfile slowAndFlaky = FaultProfile.defaults(Duration.ofMillis(300), Duration.ofMillis(40))
 *     .withErrors(0.5, 529, 2);
 * mock.faults(slowAndFlaky);               // applies to requests that arrive from now on
 *
 * FaultProfile base = mock.faults();
 * mock.enqueue(base.withErrors(1, 429, 1), base.withErrors(1, 500, 0));   // 429, then 500, then answers
 * }</pre>
 *
 * When several faults cut the same answer, the one with the fewest tokens wins; at equal counts a
 * stall wins over a drop and a drop over an in-band error. A stall or a drop that would come after
 * the last token does not happen (the answer ends normally); an in-band error always does.
 *
 * @param firstTokenDelayMs wait before the first content chunk
 * @param tokenIntervalMs wait between content chunks
 * @param stallAfterTokens stop sending after this many content chunks, keeping the socket open; {@code null} = never
 * @param dropAfterTokens close the connection after this many content chunks; {@code null} = never
 * @param errorRate share of requests answered with {@code errorStatus} instead of an answer, 0..1
 * @param errorStatus the status of those answers, 400 to 599
 * @param retryAfterSeconds the {@code Retry-After} sent with them; 0 = no header
 * @param contextLimitTokens answer 400 {@code context_length_exceeded} when the prompt's estimated
 *        tokens exceed this; {@code null} = no limit
 * @param omitTerminal end the stream without {@code finish_reason} and without {@code [DONE]}
 * @param errorBody the body of the {@code errorStatus} answers; {@code null} = OpenAI's body for that status.
 *        {@code {api_key}} in it is replaced by the request's API key, which the answer also echoes in
 *        an {@code x-echo-api-key} header (a careless provider, for scrubbing tests)
 * @param inBandErrorAfterTokens answer 200, send this many content chunks (at most the whole answer),
 *        then an error event {@code data: {"error":{...}}} and end the stream; {@code null} = never
 * @param inBandErrorType the {@code type} of that error event, e.g. {@code server_error} or {@code overloaded_error};
 *        {@code invalid_api_key} echoes the request's API key in the event's message and in an
 *        {@code x-echo-api-key} header
 * @param rateLimits the {@code x-ratelimit-*} headers sent with every chat answer (error or not);
 *        {@code null} = none. Numbers below 0 and {@code null} resets are left out
 * @param loadPressure slower first tokens and more refusals when more requests are in progress than
 *        its capacity ({@link LoadPressure}); {@code null} = the mock does not mind its load
 * @param emptyAnswer answer 200 with no content chunk at all: the role chunk, then the finish
 *        chunk and {@code [DONE]} (takes precedence over {@code loopingAnswer})
 * @param finishReason the finish reason every answer ends with instead of {@code stop} (or
 *        {@code length} when {@code max_tokens} cut it), e.g. {@code content_filter}; {@code null} = the usual one
 * @param loopingAnswer answer with {@link #LOOP_PHRASE} repeated {@link #LOOP_REPEATS} times
 *        instead of the answer to the question, the way a model stuck in a loop does
 * @param failingModels models that are down: a request whose {@code model} is one of them is
 *        answered with {@code errorStatus} (its {@code Retry-After} and body too) every time,
 *        whatever {@code errorRate} says, while other models answer as the rest of the profile
 *        says; empty = none. Kept in the order given, without repeats
 * @param providerRateLimit the rate limit of the provider key: a fixed window of requests and tokens
 *        for the OpenAI chat route, with live {@code x-ratelimit-*} headers (they replace
 *        {@code rateLimits}) and a 429 for a request over it ({@link ProviderRateLimit});
 *        {@code null} = no limit
 */
public record FaultProfile(long firstTokenDelayMs, long tokenIntervalMs, @Nullable Integer stallAfterTokens,
		@Nullable Integer dropAfterTokens, double errorRate, int errorStatus, int retryAfterSeconds,
		@Nullable Integer contextLimitTokens, boolean omitTerminal, @Nullable String errorBody,
		@Nullable Integer inBandErrorAfterTokens, String inBandErrorType, @Nullable RateLimits rateLimits,
		@Nullable LoadPressure loadPressure, boolean emptyAnswer, @Nullable String finishReason,
		boolean loopingAnswer, Set<String> failingModels, @Nullable ProviderRateLimit providerRateLimit) {

	/** The phrase a looping answer repeats. */
	public static final String LOOP_PHRASE = "As I said before, ";

	/** How many times a looping answer repeats {@link #LOOP_PHRASE}. */
	public static final int LOOP_REPEATS = 40;

	/** The longest delay accepted, so a typo cannot park a request for hours. */
	static final long MAX_DELAY_MS = 120_000;

	/** The error type of an in-band error unless another is given. */
	public static final String SERVER_ERROR = "server_error";

	private static final Pattern ERROR_TYPE = Pattern.compile("[A-Za-z0-9_.\\-]{1,64}");

	private static final Pattern MODEL_NAME = Pattern.compile("[A-Za-z0-9_.:\\-]{1,64}");

	public FaultProfile {
		range("firstTokenDelayMs", firstTokenDelayMs, 0, MAX_DELAY_MS);
		range("tokenIntervalMs", tokenIntervalMs, 0, MAX_DELAY_MS);
		if (stallAfterTokens != null) {
			range("stallAfterTokens", stallAfterTokens, 0, Integer.MAX_VALUE);
		}
		if (dropAfterTokens != null) {
			range("dropAfterTokens", dropAfterTokens, 0, Integer.MAX_VALUE);
		}
		if (!(errorRate >= 0 && errorRate <= 1)) {
			throw new IllegalArgumentException("errorRate must be between 0 and 1, was " + errorRate);
		}
		range("errorStatus", errorStatus, 400, 599);
		range("retryAfterSeconds", retryAfterSeconds, 0, 3_600);
		if (contextLimitTokens != null) {
			range("contextLimitTokens", contextLimitTokens, 1, Integer.MAX_VALUE);
		}
		if (inBandErrorAfterTokens != null) {
			range("inBandErrorAfterTokens", inBandErrorAfterTokens, 0, Integer.MAX_VALUE);
		}
		if (inBandErrorType == null || !ERROR_TYPE.matcher(inBandErrorType).matches()) {
			throw new IllegalArgumentException("inBandErrorType must be 1 to 64 letters, digits, '_', '.' or '-', was "
					+ (inBandErrorType == null ? "null" : "'" + inBandErrorType + "'"));
		}
		if (finishReason != null && !ERROR_TYPE.matcher(finishReason).matches()) {
			throw new IllegalArgumentException("finishReason must be 1 to 64 letters, digits, '_', '.' or '-', was '"
					+ finishReason + "'");
		}
		failingModels = models(failingModels);
	}

	/** A profile without a provider rate limit. */
	public FaultProfile(long firstTokenDelayMs, long tokenIntervalMs, @Nullable Integer stallAfterTokens,
			@Nullable Integer dropAfterTokens, double errorRate, int errorStatus, int retryAfterSeconds,
			@Nullable Integer contextLimitTokens, boolean omitTerminal, @Nullable String errorBody,
			@Nullable Integer inBandErrorAfterTokens, String inBandErrorType, @Nullable RateLimits rateLimits,
			@Nullable LoadPressure loadPressure, boolean emptyAnswer, @Nullable String finishReason,
			boolean loopingAnswer, Set<String> failingModels) {
		this(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate, errorStatus,
				retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens, inBandErrorType,
				rateLimits, loadPressure, emptyAnswer, finishReason, loopingAnswer, failingModels, null);
	}

	/** A profile in which every model answers alike. */
	public FaultProfile(long firstTokenDelayMs, long tokenIntervalMs, @Nullable Integer stallAfterTokens,
			@Nullable Integer dropAfterTokens, double errorRate, int errorStatus, int retryAfterSeconds,
			@Nullable Integer contextLimitTokens, boolean omitTerminal, @Nullable String errorBody,
			@Nullable Integer inBandErrorAfterTokens, String inBandErrorType, @Nullable RateLimits rateLimits,
			@Nullable LoadPressure loadPressure, boolean emptyAnswer, @Nullable String finishReason,
			boolean loopingAnswer) {
		this(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate, errorStatus,
				retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens, inBandErrorType,
				rateLimits, loadPressure, emptyAnswer, finishReason, loopingAnswer, Set.of(), null);
	}

	/** A profile whose answers have their usual content and finish reason. */
	public FaultProfile(long firstTokenDelayMs, long tokenIntervalMs, @Nullable Integer stallAfterTokens,
			@Nullable Integer dropAfterTokens, double errorRate, int errorStatus, int retryAfterSeconds,
			@Nullable Integer contextLimitTokens, boolean omitTerminal, @Nullable String errorBody,
			@Nullable Integer inBandErrorAfterTokens, String inBandErrorType, @Nullable RateLimits rateLimits,
			@Nullable LoadPressure loadPressure) {
		this(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate, errorStatus,
				retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens, inBandErrorType,
				rateLimits, loadPressure, false, null, false);
	}

	/** A profile without load pressure. */
	public FaultProfile(long firstTokenDelayMs, long tokenIntervalMs, @Nullable Integer stallAfterTokens,
			@Nullable Integer dropAfterTokens, double errorRate, int errorStatus, int retryAfterSeconds,
			@Nullable Integer contextLimitTokens, boolean omitTerminal, @Nullable String errorBody,
			@Nullable Integer inBandErrorAfterTokens, String inBandErrorType, @Nullable RateLimits rateLimits) {
		this(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate, errorStatus,
				retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens, inBandErrorType,
				rateLimits, null);
	}

	/** A profile with OpenAI's error bodies, no in-band error and no rate-limit headers. */
	public FaultProfile(long firstTokenDelayMs, long tokenIntervalMs, @Nullable Integer stallAfterTokens,
			@Nullable Integer dropAfterTokens, double errorRate, int errorStatus, int retryAfterSeconds,
			@Nullable Integer contextLimitTokens, boolean omitTerminal) {
		this(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate, errorStatus,
				retryAfterSeconds, contextLimitTokens, omitTerminal, null, null, SERVER_ERROR, null, null);
	}

	/** @return a profile without faults, at the given pace */
	public static FaultProfile defaults(Duration firstTokenDelay, Duration tokenInterval) {
		return new FaultProfile(firstTokenDelay.toMillis(), tokenInterval.toMillis(), null, null, 0, 500, 0, null,
				false);
	}

	/** @return a copy at another pace, in milliseconds */
	public FaultProfile withPace(long firstTokenDelay, long tokenInterval) {
		return new FaultProfile(firstTokenDelay, tokenInterval, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/** @return a copy that stalls after {@code tokens} content chunks ({@code null}: never) */
	public FaultProfile withStallAfter(@Nullable Integer tokens) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, tokens, dropAfterTokens, errorRate, errorStatus,
				retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/** @return a copy that drops the connection after {@code tokens} content chunks ({@code null}: never) */
	public FaultProfile withDropAfter(@Nullable Integer tokens) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, tokens, errorRate, errorStatus,
				retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/**
	 * @param rate share of requests answered with the error, 0 to 1 (1: every request)
	 * @param status the HTTP status, 400 to 599
	 * @param retryAfter the {@code Retry-After} in seconds, 0 to 3600 (0: no header)
	 * @return a copy answering {@code rate} of requests with {@code status}
	 */
	public FaultProfile withErrors(double rate, int status, int retryAfter) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, rate, status,
				retryAfter, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens, inBandErrorType,
				rateLimits, loadPressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/**
	 * @param body the body of the error answers, sent as {@code application/json} whatever it holds;
	 *        {@code null} restores OpenAI's body for the status
	 * @return a copy whose error answers carry {@code body}
	 */
	public FaultProfile withErrorBody(@Nullable String body) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, body, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/** @return a copy with a context limit ({@code null}: none) */
	public FaultProfile withContextLimit(@Nullable Integer tokens) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, tokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/** @return a copy that does or does not omit the terminal marker */
	public FaultProfile withOmitTerminal(boolean omit) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omit, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/**
	 * @param tokens content chunks sent before the error event ({@code null}: no in-band error)
	 * @return a copy that ends its answers with a {@code server_error} event after {@code tokens} chunks
	 */
	public FaultProfile withInBandError(@Nullable Integer tokens) {
		return withInBandError(tokens, SERVER_ERROR);
	}

	/**
	 * @param tokens content chunks sent before the error event ({@code null}: no in-band error)
	 * @param type the event's error type: {@code server_error}, {@code overloaded_error}, {@code rate_limit_error}...
	 * @return a copy that ends its answers with an error event of {@code type} after {@code tokens} chunks
	 */
	public FaultProfile withInBandError(@Nullable Integer tokens, String type) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, tokens, type, rateLimits,
				loadPressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/**
	 * @param limits the values of the {@code x-ratelimit-*} headers ({@code null}: no headers); a
	 *        reset is written the way OpenAI writes it, e.g. {@code 1s}, {@code 6m0s}, {@code 20ms}
	 * @return a copy that sends these headers with every chat answer
	 */
	public FaultProfile withRateLimits(@Nullable RateLimits limits) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, limits, loadPressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/**
	 * @param pressure how answers suffer past a number of concurrent requests ({@code null}: they never do)
	 * @return a copy whose first tokens slow down and whose requests start failing under load
	 */
	public FaultProfile withLoadPressure(@Nullable LoadPressure pressure) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, pressure, emptyAnswer, finishReason,
				loopingAnswer, failingModels, providerRateLimit);
	}

	/**
	 * @param capacity concurrent requests served without any change
	 * @return a copy under {@link LoadPressure#of(int) LoadPressure.of(capacity)}
	 */
	public FaultProfile withLoadPressure(int capacity) {
		return withLoadPressure(LoadPressure.of(capacity));
	}

	/**
	 * @param empty whether answers come without any content chunk
	 * @return a copy whose streamed answers are a role chunk, a finish chunk and {@code [DONE]}
	 *         (a whole answer: content {@code ""})
	 */
	public FaultProfile withEmptyAnswer(boolean empty) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, empty, finishReason, loopingAnswer,
				failingModels, providerRateLimit);
	}

	/**
	 * @param reason the finish reason answers end with, e.g. {@code content_filter}: 1 to 64 letters,
	 *        digits, '_', '.' or '-'; {@code null} restores the usual one
	 * @return a copy whose answers end with {@code reason}
	 */
	public FaultProfile withFinishReason(@Nullable String reason) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, reason, loopingAnswer,
				failingModels, providerRateLimit);
	}

	/**
	 * @param looping whether answers repeat {@link #LOOP_PHRASE} instead of answering
	 * @return a copy whose answers are {@link #LOOP_PHRASE} {@link #LOOP_REPEATS} times, one word per chunk
	 */
	public FaultProfile withLoopingAnswer(boolean looping) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, finishReason, looping,
				failingModels, providerRateLimit);
	}

	/**
	 * @param models the models that are down, e.g. {@code mock-large}: each 1 to 64 letters, digits,
	 *        '_', '.', ':' or '-'; none (an empty set) brings every model back
	 * @return a copy in which requests naming one of {@code models} get {@code errorStatus} every time
	 */
	public FaultProfile withFailingModels(Collection<String> models) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, finishReason, loopingAnswer,
				models(models), providerRateLimit);
	}

	/** @return a copy in which requests naming one of {@code models} get {@code errorStatus} every time */
	public FaultProfile withFailingModels(String... models) {
		return withFailingModels(Arrays.asList(models));
	}

	/**
	 * @param limit the provider key's window of requests and tokens ({@code null}: no limit)
	 * @return a copy whose OpenAI chat route counts requests and tokens in {@code limit}'s window,
	 *         answers with its live {@code x-ratelimit-*} headers and refuses a request over it with 429
	 */
	public FaultProfile withProviderRateLimit(@Nullable ProviderRateLimit limit) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal, errorBody, inBandErrorAfterTokens,
				inBandErrorType, rateLimits, loadPressure, emptyAnswer, finishReason, loopingAnswer, failingModels,
				limit);
	}

	/** @return whether a request for {@code model} is answered with {@code errorStatus} whatever the error rate */
	public boolean failsModel(String model) {
		return failingModels.contains(model);
	}

	private static Set<String> models(@Nullable Collection<String> models) {
		if (models == null) {
			throw new IllegalArgumentException("failingModels must not be null (empty: no model is down)");
		}
		Set<String> copy = new LinkedHashSet<>();
		for (String m : models) {
			if (m == null || !MODEL_NAME.matcher(m).matches()) {
				throw new IllegalArgumentException("failingModels must hold model names of 1 to 64 letters, digits, "
						+ "'_', '.', ':' or '-', was " + (m == null ? "null" : "'" + m + "'"));
			}
			copy.add(m);
		}
		return Collections.unmodifiableSet(copy);
	}

	private static void range(String field, long value, long min, long max) {
		if (value < min || value > max) {
			throw new IllegalArgumentException(field + " must be between " + min + " and " + max + ", was " + value);
		}
	}
}
