package dev.aiguard;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import dev.aiguard.breaker.BreakerSpec;
import dev.aiguard.core.Priority;
import dev.aiguard.retry.RetryRules;
import dev.aiguard.retry.RetrySpec;
import dev.aiguard.stall.StallSpec;
import org.jspecify.annotations.Nullable;

/**
 * A policy in words: every setting by a dotted name for {@link GuardPolicy#describe()}, and the
 * short form of {@link GuardPolicy#toString()}. The description reads the settings a builder holds,
 * so a policy describes itself through {@link GuardPolicy#toBuilder()}, which carries the
 * policy's settings as they were given (its own timer, not the stall spec's).
 */
final class PolicyDescription {

	private PolicyDescription() {
	}

	static Map<String, String> describe(PolicyBuilder b) {
		Map<String, String> d = new LinkedHashMap<>();
		d.put("defaultPriority", b.defaultPriority.name());
		stall(d, "stall.", b.stall);
		RetrySpec retry = b.retry;
		if (retry.hasRules()) {
			retry(d, "retry.", retry.rules());
		}
		else {
			d.put("retry", "unset (no retry)");
		}
		d.put("retryBudget", String.valueOf(retry.budget()));
		d.put("midStream", retry.midStream().toString());
		d.put("truncation", String.valueOf(b.truncation));
		d.put("fallback", String.valueOf(b.fallback.chain()));
		d.put("responseCache", String.valueOf(b.fallback.responseCache()));
		d.put("cacheKey", String.valueOf(b.fallback.cacheKey()));
		BreakerSpec breaker = b.breaker;
		if (breaker.config() != null) {
			d.put("breaker", "own");
			d.put("breaker.config", breaker.config().toString());
		}
		else {
			d.put("breaker", breaker.breaker() == null ? "none" : breaker.breaker().name());
		}
		d.put("breakerPath", breaker.path() == null ? "none" : breaker.path().toString());
		d.put("lanes", b.lanes == null ? "none" : b.lanes.name());
		d.put("load", b.load == null ? "none" : b.load.name());
		if (b.budget != null) {
			d.putAll(b.budget.describe());
		}
		else {
			d.put("budget", "none");
		}
		d.put("bucketStore", String.valueOf(b.bucketStore));
		d.put("blockingUpstream", String.valueOf(b.blockingUpstream));
		d.put("timer", String.valueOf(b.timer));
		d.put("reportScheduler", String.valueOf(b.reportScheduler));
		d.put("errorClassifier", String.valueOf(b.errorClassifier));
		d.put("metrics", String.valueOf(b.metrics));
		d.put("observer", String.valueOf(b.observer));
		d.put("onReport", String.valueOf(b.reportListeners));
		d.put("validate", String.valueOf(b.validation.validators()));
		d.put("validateStreaming", String.valueOf(b.validation.streamingValidators()));
		for (Map.Entry<Priority, PriorityOverrides> e : b.overrides.entrySet()) {
			overrides(d, "priority." + e.getKey().name() + '.', e.getValue());
		}
		return Collections.unmodifiableMap(d);
	}

	private static void overrides(Map<String, String> d, String at, PriorityOverrides o) {
		if (o.stall() != null) {
			stall(d, at + "stall.", o.stall());
		}
		putIfSet(d, at + "firstTokenTimeout", o.firstTokenTimeout());
		putIfSet(d, at + "idleTimeout", o.idleTimeout());
		putIfSet(d, at + "maxDuration", o.maxDuration());
		if (o.retry() != null) {
			retry(d, at + "retry.", o.retry());
		}
		putIfSet(d, at + "countedByBreaker", o.countedByBreaker());
		if (o.laneConcurrency() >= 0) {
			d.put(at + "laneConcurrency", String.valueOf(o.laneConcurrency()));
		}
	}

	static String toString(GuardPolicy p, Map<Priority, PriorityOverrides> overrides) {
		return "GuardPolicy{" + p.name() + ", defaultPriority=" + p.defaultPriority() + ", stall=" + p.stall()
				+ (p.breakerGate() != null ? ", breaker=" + p.breakerGate().name() : "")
				+ (p.lanes() != null ? ", lanes=" + p.lanes().name() : "")
				+ (p.load() != null ? ", load=" + p.load().name() : "") + ", retry=" + p.retry()
				+ ", midStream=" + p.midStream() + (p.truncation() != null ? ", truncation=" + p.truncation() : "")
				+ (p.fallback() != null ? ", fallback=" + p.fallback() : "")
				+ (overrides.isEmpty() ? "" : ", overrides=" + overrides)
				+ (p.validators().isEmpty() ? "" : ", validators=" + p.validators())
				+ (p.streamingValidators().isEmpty() ? "" : ", streamingValidators=" + p.streamingValidators()) + '}';
	}

	private static void stall(Map<String, String> d, String at, StallSpec s) {
		d.put(at + "firstTokenTimeout", orNone(s.firstTokenTimeout()));
		d.put(at + "idleTimeout", orNone(s.idleTimeout()));
		d.put(at + "maxDuration", orNone(s.maxDuration()));
		d.put(at + "heartbeatsExtendIdle", String.valueOf(s.heartbeatsExtendIdle()));
		d.put(at + "requireTerminal", String.valueOf(s.requireTerminal()));
		d.put(at + "idleChecks", String.valueOf(s.idleChecks()));
	}

	private static void retry(Map<String, String> d, String at, RetryRules r) {
		d.put(at + "maxAttempts", String.valueOf(r.maxAttempts()));
		d.put(at + "minBackoff", r.minBackoff().toString());
		d.put(at + "maxBackoff", r.maxBackoff().toString());
		d.put(at + "maxRetryAfter", r.maxRetryAfter().toString());
		d.put(at + "jitter", String.valueOf(r.jitter()));
		d.put(at + "retryOn", String.valueOf(r.retryOn()));
	}

	private static void putIfSet(Map<String, String> d, String key, @Nullable Object value) {
		if (value != null) {
			d.put(key, value.toString());
		}
	}

	private static String orNone(@Nullable Duration d) {
		return d == null ? "none" : d.toString();
	}
}
