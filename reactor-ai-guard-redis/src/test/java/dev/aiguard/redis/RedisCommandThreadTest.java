package dev.aiguard.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.event.command.CommandListener;
import io.lettuce.core.event.command.CommandStartedEvent;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import dev.aiguard.budget.BucketSpec;
import dev.aiguard.budget.Take;

/**
 * Two stores on two clients (two instances) draw on a few hot buckets and on many new ones at once, from
 * several caller threads: Bucket4j then needs more than one round trip per operation (a read and a
 * compare-and-swap for each new bucket, a retry for each swap the other instance won), and starts each
 * next one from the previous one's answer. Every command must still be written by the store's worker —
 * never by Lettuce's event loop (from inside an answer) nor by a caller's thread — so that no thread
 * that must not wait ever contends for Lettuce's endpoint lock ({@code SharedLock}); every operation is
 * answered, no caller is left inside a write, and after closing no thread is left behind or in that lock.
 */
@ExtendWith(RedisServerExtension.class)
class RedisCommandThreadTest {

	private static final int CALLERS = 4;
	private static final int BATCHES = 40;
	private static final int PER_BATCH = 25;
	/**
	 * The command timeout: this test is about which thread writes, not about timeouts; two seconds keeps
	 * the stores shared (and writing to Redis) on a machine whose cores are kept busy by another process.
	 */
	private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(2);
	/** The most a batch may take: each of its operations is answered within the command timeout. */
	private static final Duration BATCH_BOUND = COMMAND_TIMEOUT.multipliedBy(3);
	/** How long the callers may take in all: a caller stuck inside a write never ends. */
	private static final Duration CALLERS_BOUND = Duration.ofSeconds(60);
	private static final Duration END_BOUND = Duration.ofSeconds(10);
	private static final BucketSpec HOT = BucketSpec.of("hot.requests", 1_000_000, Duration.ofMinutes(1));
	private static final BucketSpec TENANT = BucketSpec.of("tenant.requests", 10, Duration.ofMinutes(1));

	private final Instances instances = new Instances(COMMAND_TIMEOUT);
	/** The commands written, by the thread that wrote them: thread name to command types. */
	private final Map<String, Set<String>> writers = new ConcurrentHashMap<>();

	@AfterEach
	void close() {
		instances.close();
	}

	private RedisEndpoint recordedEndpoint(RedisServer redis) {
		RedisEndpoint endpoint = instances.endpoint(redis);
		// Lettuce tells a command listener on the thread that writes the command (added before connecting)
		endpoint.client().addListener(new CommandListener() {
			@Override
			public void commandStarted(CommandStartedEvent event) {
				writers.computeIfAbsent(Thread.currentThread().getName(), n -> ConcurrentHashMap.newKeySet())
						.add(event.getCommand().getType().toString());
			}
		});
		return endpoint;
	}

	@Test
	void everyCommandIsWrittenByTheStoresWorkerWhileBucket4jChainsRoundTripsOnManyTenants(RedisServer redis)
			throws Exception {
		CloseStress stress = new CloseStress(Duration.ofSeconds(1));
		RedisBucketStore a = instances.store(recordedEndpoint(redis), b -> b.name("thread-a"));
		RedisBucketStore b = instances.store(recordedEndpoint(redis), b2 -> b2.name("thread-b"));
		List<RedisBucketStore> stores = List.of(a, b);

		ExecutorService callers = Executors.newFixedThreadPool(CALLERS, r -> new Thread(r, "caller"));
		List<CompletableFuture<Void>> done = new ArrayList<>();
		for (int c = 0; c < CALLERS; c++) {
			int caller = c;
			done.add(CompletableFuture.runAsync(() -> call(stores.get(caller % 2), caller), callers));
		}
		callers.shutdown();
		boolean ended = callers.awaitTermination(CALLERS_BOUND.toMillis(), TimeUnit.MILLISECONDS);
		assertThat(ended).as("every caller returned from its calls (threads in Lettuce's endpoint lock: %s)",
				CloseStress.inSharedLock()).isTrue();
		CompletableFuture.allOf(done.toArray(CompletableFuture[]::new)).get(1, TimeUnit.SECONDS);

		assertThat(new TreeMap<>(writers)).as("the threads that wrote commands, with what they wrote")
				.containsOnlyKeys("aiguard-redis-probe-thread-a", "aiguard-redis-probe-thread-b");
		assertThat(writers.get("aiguard-redis-probe-thread-a")).as("Bucket4j's read and compare-and-swap")
				.contains("GET", "EVAL");

		for (RedisBucketStore s : stores) {
			stress.close(s, s.name());
		}
		CompletableFuture.allOf(a.terminated(), b.terminated()).get(END_BOUND.toMillis(), TimeUnit.MILLISECONDS);
		stress.assertNoThreadLeft("aiguard-redis-probe-thread-", END_BOUND);
	}

	/** Batches of takes, half on three hot buckets, half each on a bucket of its own; every one answered. */
	private static void call(RedisBucketStore store, int caller) {
		for (int batch = 0; batch < BATCHES; batch++) {
			List<CompletableFuture<Take>> answers = new ArrayList<>();
			for (int i = 0; i < PER_BATCH; i++) {
				answers.add(i % 2 == 0 ? store.tryTake(HOT, "hot-" + (i % 3), 1)
						: store.tryTake(TENANT, "tenant-" + caller + "-" + batch + "-" + i, 1));
			}
			try {
				CompletableFuture.allOf(answers.toArray(CompletableFuture[]::new)).get(BATCH_BOUND.toMillis(),
						TimeUnit.MILLISECONDS);
			}
			catch (Exception e) {
				throw new AssertionError("batch " + batch + " of caller " + caller + " was not answered within "
						+ BATCH_BOUND + " (in Lettuce's endpoint lock: " + CloseStress.inSharedLock() + ")", e);
			}
			for (CompletableFuture<Take> answer : answers) {
				assertThat(answer.join().taken()).as("a full bucket gives").isTrue();
			}
		}
	}
}
