/**
 * State shared by every instance of a service through Redis, opt-in: {@link dev.aiguard.redis.RedisBucketStore}
 * keeps tenant and provider budgets in Redis (Bucket4j's Lettuce integration) with a local fallback
 * while Redis is down, and {@link dev.aiguard.redis.RedisBreakerSync} shares breaker transitions over
 * pub/sub. Both go through a {@link dev.aiguard.redis.RedisEndpoint} built from
 * {@link dev.aiguard.redis.RedisSettings}.
 *
 * <pre>{@code
 * RedisEndpoint redis = RedisEndpoint.create(RedisSettings.of("redis://redis:6379"));
 * BucketStore budgets = RedisBucketStore.builder(redis).instances(3).build();
 * RedisBreakerSync.builder(redis).instanceId("api-1").build().attach(breaker);
 * }</pre>
 */
@NullMarked
package dev.aiguard.redis;

import org.jspecify.annotations.NullMarked;
