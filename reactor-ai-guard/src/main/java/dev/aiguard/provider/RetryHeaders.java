package dev.aiguard.provider;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/** Reads {@code Retry-After}, {@code retry-after-ms} and the rate-limit headers of both providers. */
final class RetryHeaders {

	// Go-style durations as OpenAI sends them: "1s", "6m0s", "20ms", "1h2m3.5s"
	private static final Pattern GO_DURATION_PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|us|\u00b5s|ns|h|m|s)");

	private RetryHeaders() {
	}

	/** @return {@code retry-after-ms}, else {@code retry-after} (seconds or HTTP date), else {@code null} */
	static @Nullable Duration retryAfter(Function<String, String> header, Clock clock) {
		String ms = get(header, "retry-after-ms");
		if (ms != null) {
			try {
				double millis = Double.parseDouble(ms.trim());
				if (millis >= 0 && millis < 1e12) {
					return Duration.ofNanos((long) (millis * 1_000_000));
				}
			}
			catch (NumberFormatException ignored) {
				// fall through to retry-after
			}
		}
		String value = get(header, "retry-after");
		if (value == null) {
			return null;
		}
		value = value.trim();
		try {
			double seconds = Double.parseDouble(value);
			return seconds >= 0 && seconds < 1e9 ? Duration.ofMillis((long) (seconds * 1000)) : null;
		}
		catch (NumberFormatException notSeconds) {
			try {
				Instant at = ZonedDateTime.parse(value, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
				return nonNegative(Duration.between(clock.instant(), at));
			}
			catch (DateTimeParseException notADate) {
				return null;
			}
		}
	}

	static RateLimits rateLimits(Function<String, String> header, Clock clock) {
		RateLimits openAi = new RateLimits(number(header, "x-ratelimit-limit-requests"),
				number(header, "x-ratelimit-remaining-requests"), goDuration(get(header, "x-ratelimit-reset-requests")),
				number(header, "x-ratelimit-limit-tokens"), number(header, "x-ratelimit-remaining-tokens"),
				goDuration(get(header, "x-ratelimit-reset-tokens")));
		if (openAi.isKnown()) {
			return openAi;
		}
		return new RateLimits(number(header, "anthropic-ratelimit-requests-limit"),
				number(header, "anthropic-ratelimit-requests-remaining"),
				timestamp(get(header, "anthropic-ratelimit-requests-reset"), clock),
				number(header, "anthropic-ratelimit-tokens-limit"),
				number(header, "anthropic-ratelimit-tokens-remaining"),
				timestamp(get(header, "anthropic-ratelimit-tokens-reset"), clock));
	}

	/** Parses a Go duration ({@code 6m0s}); {@code null} when absent or not one. */
	static @Nullable Duration goDuration(@Nullable String value) {
		if (value == null || value.isBlank()) {
			return null;
		}
		String v = value.trim();
		Matcher m = GO_DURATION_PART.matcher(v);
		long nanos = 0;
		int end = 0;
		while (m.find()) {
			if (m.start() != end) {
				return null;
			}
			end = m.end();
			double amount = Double.parseDouble(m.group(1));
			double unit;
			switch (m.group(2)) {
				case "h":
					unit = 3600e9;
					break;
				case "m":
					unit = 60e9;
					break;
				case "s":
					unit = 1e9;
					break;
				case "ms":
					unit = 1e6;
					break;
				case "ns":
					unit = 1;
					break;
				default:
					unit = 1e3;
			}
			nanos += (long) (amount * unit);
		}
		return end == v.length() && end > 0 ? Duration.ofNanos(nanos) : null;
	}

	private static @Nullable Duration timestamp(@Nullable String value, Clock clock) {
		if (value == null) {
			return null;
		}
		try {
			return nonNegative(Duration.between(clock.instant(), OffsetDateTime.parse(value.trim()).toInstant()));
		}
		catch (DateTimeParseException e) {
			return null;
		}
	}

	private static long number(Function<String, String> header, String name) {
		String v = get(header, name);
		if (v == null) {
			return -1;
		}
		try {
			long n = Long.parseLong(v.trim());
			return n < 0 ? -1 : n;
		}
		catch (NumberFormatException e) {
			return -1;
		}
	}

	private static Duration nonNegative(Duration d) {
		return d.isNegative() ? Duration.ZERO : d;
	}

	private static @Nullable String get(Function<String, String> header, String name) {
		String v = header.apply(name);
		return v == null || v.isBlank() ? null : v;
	}
}
