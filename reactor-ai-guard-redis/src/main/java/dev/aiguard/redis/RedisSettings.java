package dev.aiguard.redis;

import java.time.Duration;
import java.util.Objects;

import io.lettuce.core.RedisURI;

/**
 * How the guard talks to Redis: where, and how long it waits before it stops counting on it.
 * Immutable; every setter of the builder checks its value and names it when it is wrong.
 *
 * <pre>{@code
 * RedisSettings settings = RedisSettings.builder("redis://127.0.0.1:6379")
 *     .commandTimeout(Duration.ofMillis(200))   // an operation not answered by then: the fallback answers it
 *     .reconnectDelay(Duration.ofMillis(200))
 *     .build();
 * }</pre>
 *
 * <p>The timeouts are short on purpose: a budget check that waits for Redis holds the request it
 * checks, so an operation Redis does not answer within {@link #commandTimeout()} is answered by the
 * store's fallback instead. The store itself moves to its fallback only on a pattern
 * ({@link #fallbackAfterTimeouts()}) and back only after {@link #sharedAfterProbes()} answered pings.
 */
public final class RedisSettings {

	/**
	 * The defaults: 200 ms per command, 500 ms to connect, reconnect every 200 ms, probe every 250 ms;
	 * fall back after 3 operations in a row without an answer, share again after 3 answered pings.
	 */
	public static final Duration DEFAULT_COMMAND_TIMEOUT = Duration.ofMillis(200);
	/** @see #DEFAULT_COMMAND_TIMEOUT */
	public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofMillis(500);
	/** @see #DEFAULT_COMMAND_TIMEOUT */
	public static final Duration DEFAULT_RECONNECT_DELAY = Duration.ofMillis(200);
	/** @see #DEFAULT_COMMAND_TIMEOUT */
	public static final Duration DEFAULT_PROBE_INTERVAL = Duration.ofMillis(250);
	/** Operations in a row without an answer within the command timeout before a store falls back. */
	public static final int DEFAULT_FALLBACK_AFTER_TIMEOUTS = 3;
	/** Pings answered in a row before a store in fallback shares again. */
	public static final int DEFAULT_SHARED_AFTER_PROBES = 3;
	/** The prefix of every key and channel the guard writes. */
	public static final String DEFAULT_KEY_PREFIX = "aiguard:";

	private final RedisURI uri;
	private final Duration commandTimeout;
	private final Duration connectTimeout;
	private final Duration reconnectDelay;
	private final Duration probeInterval;
	private final String keyPrefix;
	private final int fallbackAfterTimeouts;
	private final int sharedAfterProbes;

	private RedisSettings(Builder b) {
		this.uri = b.uri;
		this.commandTimeout = b.commandTimeout;
		this.connectTimeout = b.connectTimeout;
		this.reconnectDelay = b.reconnectDelay;
		this.probeInterval = b.probeInterval;
		this.keyPrefix = b.keyPrefix;
		this.fallbackAfterTimeouts = b.fallbackAfterTimeouts;
		this.sharedAfterProbes = b.sharedAfterProbes;
		this.uri.setTimeout(commandTimeout);
	}

	/**
	 * @param uri a Redis URI such as {@code redis://127.0.0.1:6379} or {@code rediss://user:pw@host:6380/2}
	 * @return a builder with the defaults
	 * @throws IllegalArgumentException when the URI cannot be parsed, naming it
	 */
	public static Builder builder(String uri) {
		Objects.requireNonNull(uri, "uri");
		RedisURI parsed;
		try {
			parsed = RedisURI.create(uri);
		}
		catch (RuntimeException e) {
			throw new IllegalArgumentException("uri is not a Redis URI: '" + uri + "' (" + e.getMessage() + ")", e);
		}
		return new Builder(parsed);
	}

	/** @return settings for {@code uri} with the defaults */
	public static RedisSettings of(String uri) {
		return builder(uri).build();
	}

	/** @return where Redis is (its timeout set to {@link #commandTimeout()}) */
	public RedisURI uri() {
		return uri;
	}

	/**
	 * @return how long one operation (all its round trips) may take before the store's fallback answers
	 *         it; a pattern of such timeouts ({@link #fallbackAfterTimeouts()}) counts as Redis down
	 */
	public Duration commandTimeout() {
		return commandTimeout;
	}

	/** @return how long connecting may take */
	public Duration connectTimeout() {
		return connectTimeout;
	}

	/** @return the pause between two attempts to reconnect a lost connection */
	public Duration reconnectDelay() {
		return reconnectDelay;
	}

	/** @return how often a store in fallback asks Redis whether it is back */
	public Duration probeInterval() {
		return probeInterval;
	}

	/** @return the prefix of every key and channel the guard uses */
	public String keyPrefix() {
		return keyPrefix;
	}

	/**
	 * @return how many operations in a row must go unanswered within {@link #commandTimeout()}, the first
	 *         and the latest at least one command timeout apart, before a store falls back
	 */
	public int fallbackAfterTimeouts() {
		return fallbackAfterTimeouts;
	}

	/** @return how many pings in a row a store in fallback needs answered before it shares again */
	public int sharedAfterProbes() {
		return sharedAfterProbes;
	}

	@Override
	public String toString() {
		return "RedisSettings{" + uri.getHost() + ":" + uri.getPort() + ", commandTimeout=" + commandTimeout
				+ ", connectTimeout=" + connectTimeout + ", reconnectDelay=" + reconnectDelay + ", probeInterval="
				+ probeInterval + ", fallbackAfterTimeouts=" + fallbackAfterTimeouts + ", sharedAfterProbes="
				+ sharedAfterProbes + ", keyPrefix=" + keyPrefix + "}";
	}

	/** Builds {@link RedisSettings}; each setter checks its value. */
	public static final class Builder {

		private final RedisURI uri;
		private Duration commandTimeout = DEFAULT_COMMAND_TIMEOUT;
		private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
		private Duration reconnectDelay = DEFAULT_RECONNECT_DELAY;
		private Duration probeInterval = DEFAULT_PROBE_INTERVAL;
		private String keyPrefix = DEFAULT_KEY_PREFIX;
		private int fallbackAfterTimeouts = DEFAULT_FALLBACK_AFTER_TIMEOUTS;
		private int sharedAfterProbes = DEFAULT_SHARED_AFTER_PROBES;

		private Builder(RedisURI uri) {
			this.uri = uri;
		}

		/** @param timeout how long a command may take, {@code > 0} and at most 1 minute */
		public Builder commandTimeout(Duration timeout) {
			this.commandTimeout = positive("commandTimeout", timeout);
			return this;
		}

		/** @param timeout how long connecting may take, {@code > 0} and at most 1 minute */
		public Builder connectTimeout(Duration timeout) {
			this.connectTimeout = positive("connectTimeout", timeout);
			return this;
		}

		/** @param delay the pause between reconnect attempts, {@code > 0} and at most 1 minute */
		public Builder reconnectDelay(Duration delay) {
			this.reconnectDelay = positive("reconnectDelay", delay);
			return this;
		}

		/** @param interval how often a store in fallback probes Redis, {@code > 0} and at most 1 minute */
		public Builder probeInterval(Duration interval) {
			this.probeInterval = positive("probeInterval", interval);
			return this;
		}

		/** @param prefix the prefix of every key and channel, non-empty, without spaces */
		public Builder keyPrefix(String prefix) {
			Objects.requireNonNull(prefix, "keyPrefix");
			if (prefix.isEmpty() || prefix.chars().anyMatch(Character::isWhitespace)) {
				throw new IllegalArgumentException("keyPrefix must be non-empty without spaces, was '" + prefix + "'");
			}
			this.keyPrefix = prefix;
			return this;
		}

		/**
		 * @param timeouts how many operations in a row must go unanswered within the command timeout, the
		 *        first and the latest at least one command timeout apart, before a store falls back;
		 *        {@code >= 2} (one slow command never moves a store) and at most 1000
		 */
		public Builder fallbackAfterTimeouts(int timeouts) {
			if (timeouts < 2 || timeouts > 1000) {
				throw new IllegalArgumentException("fallbackAfterTimeouts must be >= 2 and <= 1000, was " + timeouts);
			}
			this.fallbackAfterTimeouts = timeouts;
			return this;
		}

		/**
		 * @param probes how many pings in a row a store in fallback needs answered before it shares again,
		 *        {@code >= 1} and at most 1000
		 */
		public Builder sharedAfterProbes(int probes) {
			if (probes < 1 || probes > 1000) {
				throw new IllegalArgumentException("sharedAfterProbes must be >= 1 and <= 1000, was " + probes);
			}
			this.sharedAfterProbes = probes;
			return this;
		}

		/** @return the settings */
		public RedisSettings build() {
			return new RedisSettings(this);
		}

		private static Duration positive(String field, Duration d) {
			Objects.requireNonNull(d, field);
			if (d.isNegative() || d.isZero() || d.compareTo(Duration.ofMinutes(1)) > 0) {
				throw new IllegalArgumentException(field + " must be > 0 and <= 1 minute, was " + d);
			}
			return d;
		}
	}
}
