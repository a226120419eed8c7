package dev.aiguard.boot.autoconfigure.properties;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * A breaker hierarchy: the system, its providers and their model endpoints. Built when at least one
 * provider is listed. Each level's settings are copied from a breaker under {@code aiguard.breakers}
 * (that breaker is built too, on its own); the library's defaults otherwise.
 *
 * <pre>
 * aiguard:
 *   breaker-tree:
 *     name: llm
 *     providers:
 *       openai: gpt-4o, gpt-4o-mini
 *       anthropic: claude-sonnet
 *     endpoint-config: endpoint
 *     system-p0-probe-share: 0.05
 *     p0-probe-window: 2s
 *   policies:
 *     chat: { breaker-path: openai/gpt-4o }
 * </pre>
 */
public class BreakerTreeProperties {

	/** The tree's name: its system breaker's name and the first part of every breaker's in it. */
	private String name = "llm";

	/** Providers and their model endpoints, in order (the order a siblings fallback tries them in). */
	private Map<String, List<String>> providers = new LinkedHashMap<>();

	/** The breaker under {@code aiguard.breakers} whose settings every endpoint takes. */
	@Nullable
	private String endpointConfig;

	/** The breaker whose settings every provider takes (its trip policy becomes the correlation rule). */
	@Nullable
	private String providerConfig;

	/** The breaker whose settings the system takes (its trip policy becomes the correlation rule). */
	@Nullable
	private String systemConfig;

	/** The fewest failing children that trip a parent, at least 2. */
	private int childrenToTrip = 2;

	/** The share of a parent's children with traffic that must be failing for it to trip, in (0, 1]. */
	private double childrenShareToTrip = 0.5;

	/** For this long after a breaker of the tree enters HALF_OPEN, only P0 calls probe. Unset: off. */
	@Nullable
	private Duration p0ProbeWindow;

	/** While the system breaker is OPEN, this share of P0 calls still passes (0 to 0.5). Unset: off. */
	@Nullable
	private Double systemP0ProbeShare;

	public String getName() {
		return name;
	}

	public void setName(String name) {
		this.name = name;
	}

	public Map<String, List<String>> getProviders() {
		return providers;
	}

	public void setProviders(Map<String, List<String>> providers) {
		this.providers = providers;
	}

	public @Nullable String getEndpointConfig() {
		return endpointConfig;
	}

	public void setEndpointConfig(@Nullable String endpointConfig) {
		this.endpointConfig = endpointConfig;
	}

	public @Nullable String getProviderConfig() {
		return providerConfig;
	}

	public void setProviderConfig(@Nullable String providerConfig) {
		this.providerConfig = providerConfig;
	}

	public @Nullable String getSystemConfig() {
		return systemConfig;
	}

	public void setSystemConfig(@Nullable String systemConfig) {
		this.systemConfig = systemConfig;
	}

	public int getChildrenToTrip() {
		return childrenToTrip;
	}

	public void setChildrenToTrip(int childrenToTrip) {
		this.childrenToTrip = childrenToTrip;
	}

	public double getChildrenShareToTrip() {
		return childrenShareToTrip;
	}

	public void setChildrenShareToTrip(double childrenShareToTrip) {
		this.childrenShareToTrip = childrenShareToTrip;
	}

	public @Nullable Duration getP0ProbeWindow() {
		return p0ProbeWindow;
	}

	public void setP0ProbeWindow(@Nullable Duration p0ProbeWindow) {
		this.p0ProbeWindow = p0ProbeWindow;
	}

	public @Nullable Double getSystemP0ProbeShare() {
		return systemP0ProbeShare;
	}

	public void setSystemP0ProbeShare(@Nullable Double systemP0ProbeShare) {
		this.systemP0ProbeShare = systemP0ProbeShare;
	}
}
