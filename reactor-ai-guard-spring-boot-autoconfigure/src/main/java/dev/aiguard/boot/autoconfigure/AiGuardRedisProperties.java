package dev.aiguard.boot.autoconfigure;

import java.time.Duration;

import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code aiguard.budgets.redis.*}: the budgets' buckets in Redis, shared by every instance, when
 * {@code url} is set and module {@code reactor-ai-guard-redis} is on the class path. Unset values keep
 * the module's defaults.
 *
 * <pre>
 * aiguard.budgets.redis.url=redis://redis:6379
 * aiguard.budgets.redis.instances=3
 * aiguard.budgets.redis.fallback=open
 * aiguard.budgets.redis.command-timeout=200ms
 * </pre>
 */
@ConfigurationProperties(AiGuardRedisProperties.PREFIX)
public class AiGuardRedisProperties {

	/** The prefix of these properties. */
	public static final String PREFIX = "aiguard.budgets.redis";

	/** Redis URI, e.g. {@code redis://redis:6379}; the store is built only when it is set. */
	private @Nullable String url;

	/** How many instances share the budgets; the local fallback holds 1/instances of each (default 1). */
	private @Nullable Integer instances;

	/** {@code open} (admit from the local share, default) or {@code closed} (refuse) while Redis is down. */
	private @Nullable String fallback;

	/** The store's name in metrics and events (default {@code budgets}). */
	private @Nullable String name;

	/** The most one budget operation may take before Redis counts as down (default 200 ms). */
	private @Nullable Duration commandTimeout;

	/** Connect timeout (default 500 ms). */
	private @Nullable Duration connectTimeout;

	/** Pause between reconnect attempts (default 200 ms). */
	private @Nullable Duration reconnectDelay;

	/** How often a store in fallback asks Redis whether it is back (default 250 ms). */
	private @Nullable Duration probeInterval;

	/** Prefix of every key (default {@code aiguard:}). */
	private @Nullable String keyPrefix;

	public @Nullable String getUrl() {
		return url;
	}

	public void setUrl(@Nullable String url) {
		this.url = url;
	}

	public @Nullable Integer getInstances() {
		return instances;
	}

	public void setInstances(@Nullable Integer instances) {
		this.instances = instances;
	}

	public @Nullable String getFallback() {
		return fallback;
	}

	public void setFallback(@Nullable String fallback) {
		this.fallback = fallback;
	}

	public @Nullable String getName() {
		return name;
	}

	public void setName(@Nullable String name) {
		this.name = name;
	}

	public @Nullable Duration getCommandTimeout() {
		return commandTimeout;
	}

	public void setCommandTimeout(@Nullable Duration commandTimeout) {
		this.commandTimeout = commandTimeout;
	}

	public @Nullable Duration getConnectTimeout() {
		return connectTimeout;
	}

	public void setConnectTimeout(@Nullable Duration connectTimeout) {
		this.connectTimeout = connectTimeout;
	}

	public @Nullable Duration getReconnectDelay() {
		return reconnectDelay;
	}

	public void setReconnectDelay(@Nullable Duration reconnectDelay) {
		this.reconnectDelay = reconnectDelay;
	}

	public @Nullable Duration getProbeInterval() {
		return probeInterval;
	}

	public void setProbeInterval(@Nullable Duration probeInterval) {
		this.probeInterval = probeInterval;
	}

	public @Nullable String getKeyPrefix() {
		return keyPrefix;
	}

	public void setKeyPrefix(@Nullable String keyPrefix) {
		this.keyPrefix = keyPrefix;
	}
}
