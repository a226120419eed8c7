package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.BucketStore.Mode;
import dev.aiguard.budget.Take;

/** Budgets shared through a real Redis by stores on separate clients, as two instances would share them. */
@ExtendWith(RedisServerExtension.class)
class RedisBucketStoreTest {

	private static final Duration WAIT = Duration.ofSeconds(5);
	private static final BucketSpec FIVE_PER_MINUTE = BucketSpec.of("tenant.requests", 5, Duration.ofMinutes(1));

	private final Instances instances = new Instances();

	@AfterEach
	void close() {
		instances.close();
	}

	private static <T> T await(java.util.concurrent.CompletableFuture<T> future) throws Exception {
		return future.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
	}

	@Test
	void twoInstancesDrawOnOneBucket(RedisServer redis) throws Exception {
		RedisBucketStore a = instances.store(redis, b -> b.name("a"));
		RedisBucketStore b = instances.store(redis, x -> x.name("b"));
		assertThat(a.mode()).isEqualTo(Mode.SHARED);

		assertThat(await(a.tryTake(FIVE_PER_MINUTE, "acme", 3))).isEqualTo(Take.ofTaken(2));
		assertThat(await(b.available(FIVE_PER_MINUTE, "acme"))).isEqualTo(2);
		assertThat(await(b.tryTake(FIVE_PER_MINUTE, "acme", 2))).isEqualTo(Take.ofTaken(0));

		Take refused = await(a.tryTake(FIVE_PER_MINUTE, "acme", 1));
		assertThat(refused.taken()).isFalse();
		assertThat(Duration.ofNanos(refused.nanosToWait())).isBetween(Duration.ofSeconds(10), Duration.ofSeconds(12));
		assertThat(await(b.tryTake(FIVE_PER_MINUTE, "other-tenant", 1))).as("another id, another bucket")
				.isEqualTo(Take.ofTaken(4));
	}

	@Test
	void reservationsFromTwoInstancesQueueInOneLine(RedisServer redis) throws Exception {
		RedisBucketStore a = instances.store(redis, b -> b.name("a"));
		RedisBucketStore b = instances.store(redis, x -> x.name("b"));
		long minute = Duration.ofMinutes(1).toNanos();
		assertThat(await(a.reserve(FIVE_PER_MINUTE, "acme", 5, minute))).isEqualTo(Take.ofReserved(0L));
		// one every 12 s: a's reservation is first in line, b's second, a's next third
		Take first = await(a.reserve(FIVE_PER_MINUTE, "acme", 1, minute));
		Take second = await(b.reserve(FIVE_PER_MINUTE, "acme", 1, minute));
		Take third = await(a.reserve(FIVE_PER_MINUTE, "acme", 1, minute));
		assertThat(List.of(first, second, third)).allSatisfy(t -> assertThat(t.taken()).isTrue());
		assertThat(Duration.ofNanos(first.nanosToWait())).isBetween(Duration.ofSeconds(11), Duration.ofSeconds(12));
		assertThat(second.nanosToWait() - first.nanosToWait()).isBetween(Duration.ofMillis(11_900).toNanos(),
				Duration.ofMillis(12_100).toNanos());
		assertThat(third.nanosToWait() - second.nanosToWait()).isBetween(Duration.ofMillis(11_900).toNanos(),
				Duration.ofMillis(12_100).toNanos());
		assertThat(await(b.available(FIVE_PER_MINUTE, "acme"))).as("in debt by the queue").isBetween(-3L, -2L);

		Take tooLong = await(b.reserve(FIVE_PER_MINUTE, "acme", 1, Duration.ofSeconds(30).toNanos()));
		assertThat(tooLong.taken()).isFalse();
		assertThat(Duration.ofNanos(tooLong.nanosToWait())).isBetween(Duration.ofSeconds(47), Duration.ofSeconds(48));
		assertThat(await(a.available(FIVE_PER_MINUTE, "acme"))).as("a refusal reserves nothing").isBetween(-3L, -2L);
		assertThat(await(a.reserve(FIVE_PER_MINUTE, "acme", 6, minute)).nanosToWait()).as("more than the capacity: never")
				.isEqualTo(Long.MAX_VALUE);
	}

	@Test
	void debtGiveBackAndPauseAreSharedToo(RedisServer redis) throws Exception {
		RedisBucketStore a = instances.store(redis, b -> b.name("a"));
		RedisBucketStore b = instances.store(redis, x -> x.name("b"));
		BucketSpec tokens = BucketSpec.of("provider.tokens", 1_000, Duration.ofMinutes(1));

		await(a.takeRegardless(tokens, "openai", 1_300));
		assertThat(await(b.available(tokens, "openai"))).as("in debt").isBetween(-300L, -290L);
		await(b.giveBack(tokens, "openai", 500));
		assertThat(await(a.available(tokens, "openai"))).isBetween(200L, 210L);

		await(a.pause(tokens, "openai", Duration.ofSeconds(6))); // 6 s refill 100 units: hold -100
		long afterPause = await(b.available(tokens, "openai"));
		assertThat(afterPause).isBetween(-100L, -95L);
		assertThat(await(b.tryTake(tokens, "openai", 1)).nanosToWait())
				.isBetween(Duration.ofSeconds(5).toNanos(), Duration.ofMillis(6_100).toNanos());
		await(b.pause(tokens, "openai", Duration.ofSeconds(1)));
		assertThat(await(a.available(tokens, "openai"))).as("a shorter pause keeps the longer one")
				.isBetween(-100L, -95L);
		await(a.takeRegardless(tokens, "openai", 0));
		await(a.giveBack(tokens, "openai", 0));
	}

	@Test
	void aChangedSpecMovesTheSharedBucketKeepingItsFill(RedisServer redis) throws Exception {
		RedisBucketStore a = instances.store(redis, b -> b.name("a"));
		RedisBucketStore b = instances.store(redis, x -> x.name("b"));
		BucketSpec ten = BucketSpec.of("tenant.requests", 10, Duration.ofMinutes(10));
		await(a.tryTake(ten, "acme", 5)); // half full

		BucketSpec twenty = BucketSpec.of("tenant.requests", 20, Duration.ofMinutes(10));
		assertThat(await(b.available(twenty, "acme"))).as("half of the new capacity").isEqualTo(10);
		assertThat(await(a.available(ten, "acme"))).as("an instance on the older spec does not move it back")
				.isEqualTo(10);
	}

	@Test
	void refusesBadArgumentsNamingThem(RedisServer redis) {
		RedisBucketStore a = instances.store(redis, b -> b);
		assertThatThrownBy(() -> await(a.tryTake(FIVE_PER_MINUTE, "acme", 0))).hasCauseInstanceOf(
				IllegalArgumentException.class).hasMessageContaining("units must be >= 1, was 0");
		assertThatThrownBy(() -> await(a.giveBack(FIVE_PER_MINUTE, "acme", -1))).hasMessageContaining(
				"units must be >= 0, was -1");
		assertThatThrownBy(() -> RedisBucketStore.builder(instances.endpoint(redis)).instances(0))
				.isInstanceOf(IllegalArgumentException.class).hasMessage("instances must be >= 1, was 0");
		assertThatThrownBy(() -> RedisBucketStore.builder(instances.endpoint(redis)).name(" "))
				.isInstanceOf(IllegalArgumentException.class).hasMessageContaining("name must not be blank");
	}

	@Test
	void theLocalShareIsOneNthOfTheBudget(RedisServer redis) {
		RedisBucketStore store = instances.store(redis, b -> b.instances(3));
		BucketSpec share = store.localShare(BucketSpec.of("provider.requests", 600, Duration.ofMinutes(1)));
		assertThat(share).isEqualTo(BucketSpec.of("provider.requests", 200, Duration.ofMinutes(1)));
		assertThat(store.localShare(BucketSpec.of("x", 2, Duration.ofDays(1)).intervally()))
				.isEqualTo(BucketSpec.of("x", 1, Duration.ofDays(1)).intervally());
	}

	@Test
	void withoutRedisTheStoreStartsOnItsFallbackAndJoinsWhenRedisAppears(RedisServer redis) throws Exception {
		redis.kill();
		java.util.List<StoreModeChange> changes = new java.util.concurrent.CopyOnWriteArrayList<>();
		RedisBucketStore store = instances.unconnectedStore(redis, b -> b.instances(2).listener(changes::add));
		assertThat(store.mode()).isEqualTo(Mode.FALLBACK_OPEN);
		BucketSpec four = BucketSpec.of("tenant.requests", 4, Duration.ofHours(1));
		assertThat(await(store.tryTake(four, "acme", 2))).as("the local share: 2 of 4").isEqualTo(Take.ofTaken(0));
		assertThat(await(store.tryTake(four, "acme", 1)).taken()).isFalse();

		redis.restart();
		store.shared().get(5, TimeUnit.SECONDS);
		assertThat(store.mode()).isEqualTo(Mode.SHARED);
		assertThat(changes.get(0).reason()).isEqualTo("connected to redis");
		assertThat(changes.get(0).from()).isEqualTo(Mode.FALLBACK_OPEN);
		assertThat(await(store.tryTake(four, "acme", 4))).isEqualTo(Take.ofTaken(0));
	}

	@Test
	void theStoreProbesOnAThreadOfItsOwnThatClosingHandsTheConnectionToAndEnds(RedisServer redis) throws Exception {
		RedisBucketStore store = instances.store(redis, b -> b.name("own-thread"));
		await(store.shared());
		List<Thread> probes = Thread.getAllStackTraces().keySet().stream()
			.filter(t -> t.getName().equals("aiguard-redis-probe-own-thread"))
			.toList();
		// the connect probe ran there: not on Reactor's parallel threads, which guarded streams' deadlines share
		assertThat(probes).hasSize(1);
		assertThat(probes.get(0).isDaemon()).isTrue();

		store.close();

		probes.get(0).join(WAIT.toMillis());
		assertThat(probes.get(0).isAlive()).as("the probe thread ends once it closed the connection").isFalse();
		assertThat(store.mode()).isEqualTo(Mode.FALLBACK_OPEN);
	}

	@Test
	void anyNumberOfTenantsLeavesTheStoresMapsBounded(RedisServer redis) throws Exception {
		RedisBucketStore a = instances.store(redis, b -> b.name("a"));
		int tenants = SharedBuckets.MAX_PROXIES + 2_000;
		// batches of 50 in flight: enough to be quick, few enough that no command waits past its timeout
		// on a busy machine (three timeouts in a row would move the store to its fallback)
		for (int from = 0; from < tenants; from += 50) {
			List<java.util.concurrent.CompletableFuture<Take>> batch = new java.util.ArrayList<>();
			for (int i = from; i < Math.min(tenants, from + 50); i++) {
				batch.add(a.tryTake(FIVE_PER_MINUTE, "tenant-" + i, 1));
			}
			for (java.util.concurrent.CompletableFuture<Take> take : batch) {
				assertThat(await(take).taken()).isTrue();
			}
		}
		assertThat(a.mode()).as("every take answered by Redis").isEqualTo(Mode.SHARED);
		assertThat(a.proxies()).as("Bucket4j proxies").isBetween(1, SharedBuckets.MAX_PROXIES);
		assertThat(a.readings()).as("last shared readings").isBetween(1, LocalShares.MAX_READINGS);
		assertThat(await(a.tryTake(FIVE_PER_MINUTE, "tenant-0", 1))).as("a dropped proxy is rebuilt on the same bucket")
				.isEqualTo(Take.ofTaken(3));
	}
}
