package dev.aiguard.boot.autoconfigure;

import static dev.aiguard.boot.autoconfigure.PropertyChecks.checkName;
import static dev.aiguard.boot.autoconfigure.PropertyChecks.make;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import dev.aiguard.boot.autoconfigure.properties.BreakerTreeProperties;
import dev.aiguard.breaker.BreakerConfig;
import dev.aiguard.breaker.BreakerPath;
import dev.aiguard.breaker.BreakerTree;
import dev.aiguard.breaker.CircuitBreaker;
import dev.aiguard.metrics.GuardMetrics;
import org.jspecify.annotations.Nullable;

/**
 * {@code aiguard.breaker-tree} → a {@link BreakerTree} whose levels copy named breakers' settings,
 * and a policy's {@code breaker-path} → its {@link BreakerPath} in that tree.
 */
final class BreakerTreeMapper {

	private BreakerTreeMapper() {
	}

	/** @return the path a policy's {@code breaker-path} ({@code provider/endpoint}) names in the tree */
	static BreakerPath path(String at, String value, @Nullable String breaker, @Nullable BreakerTree tree) {
		if (breaker != null) {
			throw new InvalidGuardPropertyException(at, value, "a policy has either a breaker or a breaker-path, not both",
					null);
		}
		if (tree == null) {
			throw new InvalidGuardPropertyException(at, value, "no breaker tree is configured (aiguard.breaker-tree.providers)",
					null);
		}
		int slash = value.indexOf('/');
		if (slash <= 0 || slash == value.length() - 1) {
			throw new InvalidGuardPropertyException(at, value, "a breaker path is provider/endpoint", null);
		}
		return make(at, () -> tree.path(value.substring(0, slash), value.substring(slash + 1)));
	}

	private static BreakerConfig template(String at, @Nullable String name, Map<String, CircuitBreaker> breakers) {
		if (name == null) {
			return BreakerConfig.defaults();
		}
		CircuitBreaker breaker = breakers.get(name);
		if (breaker == null) {
			throw new InvalidGuardPropertyException(at, name,
					"no breaker of that name under aiguard.breakers (known: " + breakers.keySet() + ")", null);
		}
		return breaker.config();
	}

	private static BreakerConfig withWindow(String at, BreakerConfig config, BreakerTreeProperties t) {
		Duration window = t.getP0ProbeWindow();
		return window == null ? config
				: make(at + ".p0-probe-window", () -> BreakerConfig.from(config).p0ProbeWindow(window).build());
	}

	/** @return the tree {@code aiguard.breaker-tree} describes, or {@code null} when it lists no provider */
	@Nullable
	static BreakerTree tree(BreakerTreeProperties t, Map<String, CircuitBreaker> breakers, GuardMetrics metrics) {
		if (t.getProviders().isEmpty()) {
			return null;
		}
		String at = AiGuardProperties.PREFIX + ".breaker-tree";
		checkName(at + ".name", t.getName());
		BreakerTree.Builder b = BreakerTree.builder(t.getName()).metrics(metrics);
		BreakerConfig endpoint = withWindow(at, template(at + ".endpoint-config", t.getEndpointConfig(), breakers), t);
		BreakerConfig provider = withWindow(at, template(at + ".provider-config", t.getProviderConfig(), breakers), t);
		BreakerConfig system = withWindow(at, template(at + ".system-config", t.getSystemConfig(), breakers), t);
		if (t.getSystemP0ProbeShare() != null) {
			BreakerConfig base = system;
			double share = t.getSystemP0ProbeShare();
			system = make(at + ".system-p0-probe-share", () -> BreakerConfig.from(base).openP0ProbeShare(share).build());
		}
		BreakerConfig e = endpoint;
		BreakerConfig p = provider;
		BreakerConfig s = system;
		make(at + ".endpoint-config", () -> b.endpointConfig(e));
		make(at + ".provider-config", () -> b.providerConfig(p));
		make(at + ".system-config", () -> b.systemConfig(s));
		make(at + ".children-to-trip", () -> b.childrenToTrip(t.getChildrenToTrip()));
		make(at + ".children-share-to-trip", () -> b.childrenShareToTrip(t.getChildrenShareToTrip()));
		t.getProviders().forEach((name, endpoints) -> make(at + ".providers." + name,
				() -> b.provider(name, endpoints == null ? List.of() : endpoints)));
		return make(at, b::build);
	}
}
