package dev.aiguard.test.mock;

import java.time.Duration;

import reactor.util.annotation.Nullable;

/**
 * What the embedded mock model does wrong, and how fast it talks. Immutable; every component is
 * checked when the profile is built, and a bad one fails with an {@link IllegalArgumentException}
 * naming the field and the value.
 *
 * <pre>{@code
 * FaultProfile slowAndFlaky = FaultProfile.defaults(Duration.ofMillis(300), Duration.ofMillis(40))
 *     .withErrors(0.5, 529, 2);
 * mock.faults(slowAndFlaky);               // applies to requests that arrive from now on
 * }</pre>
 *
 * @param firstTokenDelayMs wait before the first content chunk
 * @param tokenIntervalMs wait between content chunks
 * @param stallAfterTokens stop sending after this many content chunks, keeping the socket open; {@code null} = never
 * @param dropAfterTokens close the connection after this many content chunks; {@code null} = never
 * @param errorRate share of requests answered with {@code errorStatus} instead of a stream, 0..1
 * @param errorStatus the status of those answers: 500, 429 or 529
 * @param retryAfterSeconds the {@code Retry-After} sent with them; 0 = no header
 * @param contextLimitTokens answer 400 {@code context_length_exceeded} when the prompt's estimated
 *        tokens exceed this; {@code null} = no limit
 * @param omitTerminal end the stream without {@code finish_reason} and without {@code [DONE]}
 */
public record FaultProfile(long firstTokenDelayMs, long tokenIntervalMs, @Nullable Integer stallAfterTokens,
		@Nullable Integer dropAfterTokens, double errorRate, int errorStatus, int retryAfterSeconds,
		@Nullable Integer contextLimitTokens, boolean omitTerminal) {

	/** The longest delay accepted, so a typo cannot park a request for hours. */
	static final long MAX_DELAY_MS = 120_000;

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
		if (errorStatus != 500 && errorStatus != 429 && errorStatus != 529) {
			throw new IllegalArgumentException("errorStatus must be 500, 429 or 529, was " + errorStatus);
		}
		range("retryAfterSeconds", retryAfterSeconds, 0, 3_600);
		if (contextLimitTokens != null) {
			range("contextLimitTokens", contextLimitTokens, 1, Integer.MAX_VALUE);
		}
	}

	/** @return a profile without faults, at the given pace */
	public static FaultProfile defaults(Duration firstTokenDelay, Duration tokenInterval) {
		return new FaultProfile(firstTokenDelay.toMillis(), tokenInterval.toMillis(), null, null, 0, 500, 0, null,
				false);
	}

	/** @return a copy at another pace */
	public FaultProfile withPace(long firstTokenDelay, long tokenInterval) {
		return new FaultProfile(firstTokenDelay, tokenInterval, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omitTerminal);
	}

	/** @return a copy that stalls after {@code tokens} content chunks ({@code null}: never) */
	public FaultProfile withStallAfter(@Nullable Integer tokens) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, tokens, dropAfterTokens, errorRate, errorStatus,
				retryAfterSeconds, contextLimitTokens, omitTerminal);
	}

	/** @return a copy that drops the connection after {@code tokens} content chunks ({@code null}: never) */
	public FaultProfile withDropAfter(@Nullable Integer tokens) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, tokens, errorRate, errorStatus,
				retryAfterSeconds, contextLimitTokens, omitTerminal);
	}

	/** @return a copy answering {@code rate} of requests with {@code status} (and a Retry-After when > 0) */
	public FaultProfile withErrors(double rate, int status, int retryAfter) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, rate, status,
				retryAfter, contextLimitTokens, omitTerminal);
	}

	/** @return a copy with a context limit ({@code null}: none) */
	public FaultProfile withContextLimit(@Nullable Integer tokens) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, tokens, omitTerminal);
	}

	/** @return a copy that does or does not omit the terminal marker */
	public FaultProfile withOmitTerminal(boolean omit) {
		return new FaultProfile(firstTokenDelayMs, tokenIntervalMs, stallAfterTokens, dropAfterTokens, errorRate,
				errorStatus, retryAfterSeconds, contextLimitTokens, omit);
	}

	private static void range(String field, long value, long min, long max) {
		if (value < min || value > max) {
			throw new IllegalArgumentException(field + " must be between " + min + " and " + max + ", was " + value);
		}
	}
}
