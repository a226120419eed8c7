package dev.aiguard.redis;

import java.time.Instant;

import dev.aiguard.budget.BucketStore;

/**
 * A {@link RedisBucketStore} moved from one {@link BucketStore.Mode} to another: Redis became
 * unreachable (to a fallback mode) or came back (to {@link BucketStore.Mode#SHARED}).
 *
 * <pre>{@code
 * RedisBucketStore.builder(redis).listener(change ->
 *         log.warn("budget store {}: {} -> {} ({})", change.store(), change.from(), change.to(), change.reason()))
 * }</pre>
 *
 * @param store the store's name
 * @param from the mode before
 * @param to the mode now
 * @param reason why, in words (the error that made Redis count as down, or "redis answered again")
 * @param at when, on the wall clock
 */
public record StoreModeChange(String store, BucketStore.Mode from, BucketStore.Mode to, String reason, Instant at) {
}
